"""How many samples a tail percentile needs before the board shows it: MLPerf's early-stopping rule.

With n samples and none beyond the true q-quantile, the chance that all n fall on one side of it is q^n; the
largest (or smallest) of them bounds the quantile with confidence c only when q^n <= 1 - c. At 99 % a P95 (and,
by symmetry, a P5) needs 90 samples; a 72 h window on a per-token plan holds about 18. Below the bound a tail is
withheld, on the pages, in JSON, CSV and the terminal, and the reason is shown in its place: a P95 of four
samples is their largest, not the endpoint's tail. The median and the quartiles are shown with their n.
The bound is measure/stats.py's :func:`min_passing` at t = 0 (no sample beyond the tail); ``bench``'s estimate
of a P99, which counts its bound itself as beyond (LoadGen's SingleStream rule), needs min_passing at t = 1, plus
one: 662.
"""

from __future__ import annotations

import dataclasses

from tokenpace.measure.stats import ES_CONFIDENCE, Figure, min_passing

CONFIDENCE = ES_CONFIDENCE
TAILS = (("p5", 0.05), ("p95", 0.95))  # the percentiles the rule withholds: Figure's field and its quantile


def samples_needed(q: float, confidence: float = CONFIDENCE) -> int:
    """n = ⌈ln(1 - c) / ln(max(q, 1 - q))⌉: the fewest samples whose extreme bounds the q-quantile with confidence c."""
    return min_passing(0, max(q, 1 - q), confidence)


def withheld(n: int, field: str, q: float) -> str | None:
    """Why a percentile of n values is not shown ("n=4 < 90: ..."); None where n is enough (or there are none)."""
    need = samples_needed(q)
    if n == 0 or n >= need:
        return None
    return f"n={n} < {need}: a {field.upper()} needs {need} samples at {CONFIDENCE:.0%} confidence"


def tails_withheld(f: Figure) -> dict[str, str]:
    """The figure's withheld tails, each with why: P5 and P95 below samples_needed."""
    return {field: why for field, q in TAILS if (why := withheld(f.n, field, q)) is not None}


def as_shown(f: Figure) -> Figure:
    """The figure as the board shows it: each withheld tail None."""
    gone = tails_withheld(f)
    return dataclasses.replace(f, p5=None if "p5" in gone else f.p5, p95=None if "p95" in gone else f.p95)
