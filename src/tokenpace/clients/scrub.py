"""Secrets a server echoes back (the key, configured header values) replaced before anything is stored.

Every decoded timeline passes through here (``base.timeline``), so the database, ``--output`` files and pages
only ever see what is left. A secret is replaced by ``***`` where one string holds it whole; generated text
that spells it across several events (a model writing it piece by piece) has those characters masked as
``*``, event by event, so no event keeps a part that could be joined again.
"""

from __future__ import annotations

from typing import Any

from tokenpace.measure.timing import Event


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with each secret replaced by ``***``, longest first (so no longer one survives in part)."""
    for secret in sorted(filter(None, secrets), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def scrub(value: Any, secrets: tuple[str, ...]) -> Any:
    """``value`` (JSON-shaped: strings, lists, objects) with every secret in every string replaced by ``***``."""
    if not secrets or value is None:
        return value
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {scrub(k, secrets): scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, secrets) for v in value]
    return value


def _holds(text: str, secrets: tuple[str, ...]) -> bool:
    return bool(text) and any(s in text for s in secrets if s)


def _secret_spans(text: str, secrets: tuple[str, ...]) -> list[tuple[int, int]]:
    """Where each secret occurs in ``text``, as [start, end) offsets."""
    found = []
    for secret in filter(None, secrets):
        at = text.find(secret)
        while at >= 0:
            found.append((at, at + len(secret)))
            at = text.find(secret, at + 1)
    return found


def scrub_events(events: list[Event], secrets: tuple[str, ...]) -> list[Event]:
    """The events with secrets replaced in each text, then masked where one spans several events' texts."""
    if not secrets:
        return events
    events = [Event(e.t_ns, e.kind, redact(e.text, secrets)) if _holds(e.text, secrets) else e for e in events]
    spans = _secret_spans("".join(e.text for e in events), secrets)
    if not spans:
        return events
    out, start = [], 0
    for e in events:
        end = start + len(e.text)
        cuts = [(max(a, start) - start, min(b, end) - start) for a, b in spans if a < end and b > start]
        if cuts:
            chars = list(e.text)
            for a, b in cuts:
                chars[a:b] = "*" * (b - a)
            e = Event(e.t_ns, e.kind, "".join(chars))
        out.append(e)
        start = end
    return out
