"""Page URLs: one path per page, and the same path with ``.json`` for its JSON twin (datasette's scheme).

A name in a path is tilde-encoded, as datasette does: every byte of its UTF-8 but ASCII letters, digits, ``-``
and ``_`` is written ``~XX``. So a ``.`` in a path never belongs to a name and a trailing ``.json`` can only be
the format: the model ``x.json`` has its page at ``/model/x~2Ejson`` and its twin at ``/model/x~2Ejson.json``.
Tilde rather than percent because clients and proxies may decode ``%2E`` to ``.`` and ``%2F`` to ``/`` (RFC 3986
calls some of those equivalent), which would move the line between name and format, or between path parts.
A model name keeps its ``/`` (``org/model`` is how most are spelt): the model is a path's last part, so its
slashes are unambiguous; a provider's or plan's ``/`` is encoded.

Reading is lenient, so links from before this scheme still work: the path is percent-decoded part by part, a
trailing ``.json`` is taken as the format, then ``~XX`` runs are decoded; any other ``.``, ``+`` or ``%`` is
itself. ``/model/gpt-4.1`` is the model ``gpt-4.1``, ``/model/gpt-4.1.json`` its twin, as before.
"""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import unquote

Format = Literal["html", "json"]
SUFFIX = ".json"  # the one format a page's path may end in
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
BADGE_SUFFIX = ".svg"  # a badge's file; a name's "." is tilde-encoded, so a path's last ".svg" is always this
_ESCAPED = re.compile(r"(?:~[0-9A-Fa-f]{2})+")


def encode_part(name: str, keep: str = "") -> str:
    """``name`` tilde-encoded for a path; characters in ``keep`` (ASCII) stay as they are."""
    kept = _SAFE | frozenset(keep.encode())
    return "".join(chr(b) if b in kept else f"~{b:02X}" for b in name.encode())


def decode_part(text: str) -> str:
    """The name a path part spells: ``~XX`` runs as UTF-8 (bytes that are not UTF-8 become U+FFFD)."""
    return _ESCAPED.sub(lambda m: bytes.fromhex(m.group().replace("~", "")).decode(errors="replace"), text)


def format_of(path: str) -> Format:
    """The format a (percent-decoded) request path asks for."""
    return "json" if path.endswith(SUFFIX) else "html"


def with_format(path: str, fmt: Format) -> str:
    return path + SUFFIX if fmt == "json" else path


def endpoint_path(provider: str, plan: str, model: str, fmt: Format = "html") -> str:
    return with_format(f"/endpoint/{encode_part(provider)}/{encode_part(plan)}/{encode_part(model, keep='/')}", fmt)


def model_path(model: str, fmt: Format = "html") -> str:
    return with_format(f"/model/{encode_part(model, keep='/')}", fmt)


def status_path(provider: str, fmt: Format = "html") -> str:
    return with_format(f"/status/{encode_part(provider)}", fmt)


def badge_path(provider: str, plan: str, model: str, metric: str) -> str:
    """An endpoint's badge: its page's path under ``/badge``, then the metric's file (``/speed.svg``)."""
    return f"/badge{endpoint_path(provider, plan, model)}/{metric}{BADGE_SUFFIX}"


def model_badge_path(model: str, metric: str) -> str:
    return f"/badge{model_path(model)}/{metric}{BADGE_SUFFIX}"


def _names(raw_tail: str, parts: int) -> tuple[list[str], Format]:
    """The names in what follows a page's prefix in the raw path, split before decoding (so an old link's
    ``%2F`` inside a provider stays in it), and the format its end asks for."""
    names = [unquote(p) for p in raw_tail.split("/", parts - 1)]
    fmt = format_of(names[-1])
    names[-1] = names[-1].removesuffix(SUFFIX) if fmt == "json" else names[-1]
    return [decode_part(n) for n in names], fmt


def parse_endpoint(raw_tail: str) -> tuple[str, str, str, Format] | None:
    """provider, plan, model and format from what follows ``/endpoint/``; None when a part is missing."""
    names, fmt = _names(raw_tail, 3)
    if len(names) < 3 or not all(names):
        return None
    return names[0], names[1], names[2], fmt


def parse_model(raw_tail: str) -> tuple[str, Format] | None:
    """The model and format from what follows ``/model/``; None when there is no name."""
    (model,), fmt = _names(raw_tail, 1)
    return (model, fmt) if model else None


def parse_status(raw_tail: str) -> tuple[str, Format] | None:
    """The provider and format from what follows ``/status/``; None when there is no name, or more than one part."""
    (provider,), fmt = _names(raw_tail, 1)
    return (provider, fmt) if provider and "/" not in raw_tail else None


def parse_badge(raw_tail: str) -> tuple[str, tuple[str, ...], str] | None:
    """("endpoint", (provider, plan, model), metric) or ("model", (model,), metric) from what follows
    ``/badge/``; None for any other shape (a page's ``.json`` twin included: a badge has none)."""
    page, _, file = raw_tail.rpartition("/")
    metric = unquote(file).removesuffix(BADGE_SUFFIX)
    if not unquote(file).endswith(BADGE_SUFFIX) or not metric:
        return None
    kind, _, rest = page.partition("/")
    if kind == "endpoint" and (found := parse_endpoint(rest)) is not None and found[3] == "html":
        return kind, found[:3], metric
    if kind == "model" and (named := parse_model(rest)) is not None and named[1] == "html":
        return kind, named[:1], metric
    return None
