"""Extra request headers: what HTTP can carry, how a preset's, a provider's and a plan's combine, and FRESH_VALUE.

A preset may send headers with every request (a gateway's session header); a config's ``headers`` add to or
override them, a plan's over its provider's. Header names compare without case, as HTTP's do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# A header value replaced by a fresh random one in each request (clients/base.json_request): a gateway that
# routes a conversation by a session header then shares no session, nor its prompt cache, between samples.
FRESH_VALUE = "{fresh}"


def check_header(name: str, value: str) -> None:
    """A header HTTP can carry: a token name and a value without line breaks or NUL (ValueError otherwise)."""
    if not name or any(c in name for c in " :\r\n\0") or any(c in value for c in "\r\n\0"):
        raise ValueError(f"header {name!r}: names are one word and values one line without control characters")


def merged_headers(*layers: Iterable[tuple[str, str]] | Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The layers' headers, sorted by name, a later layer's replacing an earlier one's of the same name in any case."""
    out: dict[str, tuple[str, str]] = {}
    for layer in layers:
        for name, value in layer.items() if isinstance(layer, Mapping) else layer:
            out[name.lower()] = (name, value)
    return tuple(sorted(out.values()))
