"""One module per wire protocol, all behind :class:`~tokenpace.clients.base.WireProtocol`."""

from __future__ import annotations

from tokenpace.clients.base import WireProtocol
from tokenpace.clients.openai_chat import OpenAIChat
from tokenpace.errors import ConfigError

_PROTOCOLS: dict[str, WireProtocol] = {"openai-chat": OpenAIChat()}


def protocol_for(name: str) -> WireProtocol:
    """The wire protocol registered under ``name``."""
    try:
        return _PROTOCOLS[name]
    except KeyError:
        known = ", ".join(sorted(_PROTOCOLS))
        raise ConfigError(f"unknown protocol {name!r} (known: {known})") from None


__all__ = ["WireProtocol", "protocol_for"]
