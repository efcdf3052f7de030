"""What a 429 says about when to come back: its ``Retry-After`` and rate-limit headers, bounded before kept.

``Retry-After`` is seconds or an HTTP-date (RFC 9110 10.2.3); either becomes seconds from the response's arrival,
at most MAX_RETRY_AFTER_S, and anything else (a negative number, a fraction, garbage) is no value at all. The
rate-limit headers are kept by name only: ``x-ratelimit-*`` (OpenAI, Groq, Together...), ``ratelimit`` and
``ratelimit-*`` (the IETF drafts) and ``anthropic-ratelimit-*``, which hold counts, durations and dates. At most
MAX_HEADERS of them, each name at most MAX_HEADER_NAME characters (a longer one is dropped), each value cut to
MAX_VALUE printable ASCII characters after the request's secrets are replaced: whatever a server puts there, a
stored sample holds a few hundred bytes of it, and never the key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC
from email.utils import parsedate_to_datetime

from tokenpace.clients.scrub import redact

MAX_RETRY_AFTER_S = 86_400.0  # a day: a server asking for longer is asked again tomorrow
MAX_HEADERS = 16  # OpenAI sends 6, Anthropic up to 13
MAX_HEADER_NAME = 64
MAX_VALUE = 128
PREFIXES = ("x-ratelimit-", "ratelimit-", "anthropic-ratelimit-")
_SECONDS = re.compile(r"[0-9]+")  # delay-seconds = 1*DIGIT: no sign, no fraction
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")
_LONGEST_DATE = 64  # an IMF-fixdate is 29 characters; obsolete forms a few more


def retry_after_s(value: str, now: float) -> float | None:
    """Seconds to wait = min(delay-seconds, or HTTP-date - now floored at 0, MAX_RETRY_AFTER_S); None if neither.

    ``now``: the client's UTC epoch seconds when the response arrived. A date already past means now (0 s).
    """
    value = value.strip()
    if _SECONDS.fullmatch(value):  # a thousand digits are still a number: too long to wait, so the cap
        return MAX_RETRY_AFTER_S if len(value) > 6 else min(float(value), MAX_RETRY_AFTER_S)
    if len(value) > _LONGEST_DATE:
        return None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # asctime's form, or "-0000": an HTTP-date is always GMT
        when = when.replace(tzinfo=UTC)
    return min(max(when.timestamp() - now, 0.0), MAX_RETRY_AFTER_S)


def _kept_value(value: str, secrets: tuple[str, ...]) -> str:
    """The value with secrets replaced, non-printable characters as "?", then cut to MAX_VALUE."""
    return _UNPRINTABLE.sub("?", redact(value, secrets))[:MAX_VALUE]


def ratelimit_headers(headers: Iterable[tuple[str, str]], secrets: tuple[str, ...] = ()) -> tuple[tuple[str, str], ...]:
    """The first MAX_HEADERS rate-limit headers (named ``ratelimit`` or starting with one of PREFIXES, at most
    MAX_HEADER_NAME characters), names in lower case, first value of each name kept, values cleaned (see the module)."""
    kept: dict[str, str] = {}
    for name, value in headers:
        name = name.lower()
        if len(kept) == MAX_HEADERS:
            break
        if name in kept or len(name) > MAX_HEADER_NAME or _UNPRINTABLE.search(name):
            continue
        if name == "ratelimit" or name.startswith(PREFIXES):
            kept[name] = _kept_value(value, secrets)
    return tuple(kept.items())
