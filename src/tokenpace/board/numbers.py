"""How figures are written for people, once: the web's templates and the terminal both call these.

A tok/s figure has one decimal below 100 and none from 100 on (the decimal of 1,234 tok/s is noise); ms are
whole; a share is a percentage with one decimal unless it is whole (99.5%, and 99.96% is "100.0%", never "100%");
dollars have cents, or up to three significant digits below a dollar ($0.000123: a request costs fractions of a
cent).
A missing value is a dash. JSON and CSV carry the numbers as they are: formatting is for reading only.

Text from a config, a store or a server (endpoint and model names, error messages) is shown through
:func:`printable` (text.py says why).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from tokenpace.text import printable as printable  # re-exported: pages and the terminal format here

if TYPE_CHECKING:  # for its type only: measure.stats reaches the tokenizer, which `--help` must not load
    from tokenpace.measure.stats import EarlyStop

DASH = "—"
Kind = Literal["num", "ms", "int", "s"]
UNITS = (("d", 86400), ("h", 3600), ("min", 60))  # seconds in each unit shown, largest first


def figure_text(value: float | None, kind: Kind = "num") -> str:
    """A figure: ``num`` (tok/s and the like) with one decimal below 100, ``ms`` and ``int`` whole, ``s`` a
    time given in ms written in seconds with two decimals."""
    if value is None:
        return DASH
    if kind in ("ms", "int"):
        return f"{value:,.0f}"
    if kind == "s":
        return f"{value / 1000:,.2f}"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.1f}"


def rate(value: float | None) -> str:
    """A rate in req/s: two decimals below 10 (0.25 req/s is not "0.2"), where a sweep's low levels live."""
    if value is None:
        return DASH
    return f"{value:,.2f}" if abs(value) < 10 else figure_text(value)


def cut(text: str, limit: int = 300) -> str:
    """Text as shown: its first ``limit`` characters, and an ellipsis when there were more."""
    return text if len(text) <= limit else text[:limit] + "…"


def percent(share: float | None) -> str:
    """A share (0.995) as a percentage ("99.5%"); whole ones without a decimal ("100%", "10%")."""
    if share is None:
        return DASH
    whole = abs(share * 100 - round(share * 100)) < 1e-9  # 0.1 * 100 is 10.000000000000002
    return f"{share:.0%}" if whole else f"{share:.1%}"


def dollars(value: float | None) -> str:
    """Dollars: "$1,234.50" from a dollar on; below, up to three significant digits and at least cents ("$0.10",
    "$0.0575", "$0.000123"); "$0"."""
    if value is None:
        return DASH
    if value >= 1 or value == 0:
        return f"${value:,.2f}" if value else "$0"
    places = 2 - math.floor(math.log10(value))  # three significant digits
    digits = f"{value:.{places}f}"
    return "$" + digits[: max(len(digits.rstrip("0")), digits.index(".") + 3)]


def when(value: datetime | None, seconds: bool = True) -> str:
    """A time as ``YYYY-MM-DD HH:MM:SS`` (the zone is the caller's to say; tokenpace's times are UTC)."""
    return DASH if value is None else value.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")


def ago(now: datetime, then: datetime) -> str:
    """How long before ``now`` a time was, in the largest unit that keeps the number small."""
    s = max(0.0, (now - then).total_seconds())
    for unit, size in UNITS:
        if s >= size * (2 if unit != "min" else 1):
            return f"{s / size:.0f} {unit} ago"
    return f"{s:.0f} s ago"


def interval(seconds: float) -> str:
    """An interval in the largest whole unit: 600 -> "10 min", 14400 -> "4 h", 604800 -> "7 d"."""
    for unit, size in UNITS:
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds:.0f} s"


def duration(seconds: float) -> str:
    """A length of time, whole, in the unit a reader expects of it: "45 s", "8 min", "5 h", "72 h", "14 d"
    (hours up to a 72 h window's span, days past it)."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.0f} h" if seconds <= 72 * 3600 else f"{seconds / 86400:.0f} d"


def percentile_name(q: float) -> str:
    """A quantile as a percentile's name: 0.99 -> "P99", 0.978 -> "P97.8"."""
    return f"P{round(q * 100, 6):g}"


def count(n: int) -> str:
    """The n beside a percentile: how many values it was computed over ("n=1,234")."""
    return f"n={n:,}"


def early_stop_text(es: EarlyStop, kind: Kind = "ms", unit: str = "") -> str:
    """MLPerf's early-stopping estimate in words: "P99 ≤ 430 ms"; from fewer values than it needs, what they
    bound and what the asked percentile needs ("P97.8 ≤ 430 ms, P99 needs 662"), or that they bound nothing
    ("too few, P99 needs 662"). The confidence is the caller's to say."""
    needs = f"{percentile_name(es.q)} needs {es.needed:,}"
    if es.bounded is None:
        return f"too few, {needs}"
    said = f"{percentile_name(es.bounded)} ≤ {figure_text(es.bound, kind)}" + (f" {unit}" if unit else "")
    return said if es.bounded >= es.q else f"{said}, {needs}"
