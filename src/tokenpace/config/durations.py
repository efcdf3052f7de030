"""A length of time as people write it: ``"90s"``, ``"10m"``, ``"3h"``, ``"1d"``, ``"250ms"``.

The one parser of durations: a cadence or ``cold_after`` in the config file, ``bench --duration`` and the times
in ``--slo``. A number (digits, an optional fraction: no sign, exponent, ``nan`` or ``inf``) and one unit; a
bare number only where the caller names the unit it means. Anything else, zero, or more than the caller allows
is one line that says what to write.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

UNIT_S: Mapping[str, float] = MappingProxyType({"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86_400.0})
# Longer than anything tokenpace waits for (a cadence of a year samples once), and a bound on what a hostile
# file can ask: 400 digits would otherwise make a float of inf, then a cadence of never.
LONGEST_S = 366 * 86_400.0
SHOWN = 40  # characters of a refused text quoted back: a megabyte of digits must not make a megabyte line
_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h|d)?\s*", re.ASCII)


def parse_duration(text: object, *, bare: str | None = None, longest_s: float = LONGEST_S) -> float:
    """Seconds in ``text``, above 0 and at most ``longest_s``; a bare number is in unit ``bare`` (None: refused).

    ValueError otherwise, with one line naming the text and what to write instead.
    """
    match = _DURATION.fullmatch(text) if isinstance(text, str) else None
    unit = match[2] or bare if match else None
    seconds = float(match[1]) * UNIT_S[unit] if match and unit else 0.0
    if 0 < seconds <= longest_s:
        return seconds
    shown = repr(text[:SHOWN] + "…" if len(text) > SHOWN else text) if isinstance(text, str) else repr(text)
    if match and unit:
        most = f"{longest_s / 86_400:g} days" if longest_s >= 86_400 else f"{longest_s:g} s"
        raise ValueError(f"{shown} is not a duration from above 0 to {most}")
    raise ValueError(f'{shown} is not a duration: give a number above 0 and a unit ms, s, m, h or d, e.g. "10m"')
