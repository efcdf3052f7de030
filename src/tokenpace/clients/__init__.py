"""One module per wire protocol, all behind :class:`~tokenpace.clients.base.WireProtocol`."""

from __future__ import annotations

from tokenpace.clients.anthropic import Anthropic
from tokenpace.clients.base import WireProtocol
from tokenpace.clients.gemini import Gemini
from tokenpace.clients.ollama import Ollama
from tokenpace.clients.openai_chat import OpenAIChat
from tokenpace.clients.openai_completions import OpenAICompletions
from tokenpace.clients.openai_responses import OpenAIResponses
from tokenpace.errors import ConfigError

_PROTOCOLS: dict[str, WireProtocol] = {
    p.name: p for p in (OpenAIChat(), OpenAICompletions(), OpenAIResponses(), Anthropic(), Ollama(), Gemini())
}


def protocol_for(name: str) -> WireProtocol:
    """The wire protocol registered under ``name``."""
    try:
        return _PROTOCOLS[name]
    except KeyError:
        known = ", ".join(sorted(_PROTOCOLS))
        raise ConfigError(f"unknown protocol {name!r} (known: {known})") from None


__all__ = ["WireProtocol", "protocol_for"]
