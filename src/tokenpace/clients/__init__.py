"""Talking to endpoints: one module per wire protocol behind :class:`~tokenpace.clients.base.WireProtocol`, the
timed HTTP transport they share, and the network probe an agent runs before a job."""

from __future__ import annotations

import typing

from tokenpace import errors
from tokenpace.clients import (
    anthropic,
    gemini,
    ollama,
    openai_chat,
    openai_completions,
    openai_responses,
)
from tokenpace.clients.base import WireProtocol

if typing.TYPE_CHECKING:  # the name only: the package exports protocol_for, not the config's types
    from tokenpace.config.presets import ProtocolName

_PROTOCOLS: dict[ProtocolName, WireProtocol] = {
    p.name: p
    for p in (
        openai_chat.OpenAIChat(),
        openai_completions.OpenAICompletions(),
        openai_responses.OpenAIResponses(),
        anthropic.Anthropic(),
        ollama.Ollama(),
        gemini.Gemini(),
    )
}


def protocol_for(name: ProtocolName) -> WireProtocol:
    """The wire protocol registered under ``name`` (checked still: a name read back from a store is any text)."""
    try:
        return _PROTOCOLS[name]
    except KeyError:
        known = ", ".join(sorted(_PROTOCOLS))
        raise errors.ConfigError(f"unknown protocol {name!r} (known: {known})") from None


__all__ = ["WireProtocol", "protocol_for"]
