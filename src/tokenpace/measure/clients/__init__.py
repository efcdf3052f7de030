"""One module per wire protocol, all behind :class:`~tokenpace.measure.clients.base.WireProtocol`."""

from __future__ import annotations

from tokenpace.errors import ConfigError
from tokenpace.measure.clients.anthropic import Anthropic
from tokenpace.measure.clients.base import WireProtocol
from tokenpace.measure.clients.gemini import Gemini
from tokenpace.measure.clients.ollama import Ollama
from tokenpace.measure.clients.openai_chat import OpenAIChat
from tokenpace.measure.clients.openai_completions import OpenAICompletions
from tokenpace.measure.clients.openai_responses import OpenAIResponses

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
