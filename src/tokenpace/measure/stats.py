"""Figures over many samples: how many values, their mean and percentiles, and the success rate.

The one vocabulary of every place that aggregates samples: a run's summary (``board.summary``, in Python over
the samples at hand), the leaderboard's rolling windows (``store.windows``, in SQL over the database) and a
load test's latencies (``load.figures``), so all report the same fields and judge success by the same formula.
Pure (but for a warning when it leaves out values no measurement can produce); the lowest layer they all
import.
"""

from __future__ import annotations

import logging
import math
import operator
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tokenpace.measure.bounds import LARGEST
from tokenpace.measure.metrics import percentile_sorted

log = logging.getLogger(__name__)

QUANTILES = (5, 25, 50, 75, 95)  # Figure's percentiles, in its field order
Z95 = 1.959963984540054  # the standard normal's 97.5th percentile: two-sided 95 %


@dataclass(frozen=True, slots=True)
class Figure:
    """One metric over a set of successful samples: how many values, their mean and percentiles (None: no values).

    The board and a run's summary fill P5 to P95 and the 95 % intervals (:func:`figure`); a load test's
    latencies the tail its readers compare, P50, P90, P95, P99 and the max (``load.figures.latency``).
    """

    n: int = 0
    mean: float | None = None
    p5: float | None = None
    p25: float | None = None
    p50: float | None = None
    p75: float | None = None
    p95: float | None = None
    # 95 % intervals: of the mean (normal, from the values' spread), of the median (order statistics)
    mean_lo: float | None = None
    mean_hi: float | None = None
    p50_lo: float | None = None
    p50_hi: float | None = None
    # a load test's tail (after the intervals, so a figure built by position keeps its meaning)
    p90: float | None = None
    p99: float | None = None
    max: float | None = None

    def headline(self, statistic: str) -> float | None:
        """The headline of a window or summary: the mean for "mean", else the median (P50)."""
        return self.mean if statistic == "mean" else self.p50

    def interval(self, statistic: str) -> tuple[float, float] | None:
        """The headline's 95 % interval; None when there is none (fewer than two values)."""
        lo, hi = (self.mean_lo, self.mean_hi) if statistic == "mean" else (self.p50_lo, self.p50_hi)
        return None if lo is None or hi is None else (lo, hi)


def figure(values: Sequence[float]) -> Figure:
    """n, mean and each of QUANTILES (metrics.percentile) of the values; all but n None when there are none."""
    return figure_sorted(sorted(values))


def figure_sorted(ordered: Sequence[float]) -> Figure:
    """:func:`figure` of values already in ascending order (metrics.percentile_sorted: no copy sorted again)."""
    if not ordered:
        return Figure(0)
    if not (ordered[0] >= -LARGEST and ordered[-1] <= LARGEST and math.isfinite(sum(ordered))):
        ordered = _measurable(ordered)
        if not ordered:
            return Figure(0)
    mean = statistics.fmean(ordered)
    p5, p25, p50, p75, p95 = (percentile_sorted(ordered, q) for q in QUANTILES)
    mean_lo, mean_hi = mean_interval(ordered, mean)
    p50_lo, p50_hi = median_interval(ordered)
    return Figure(len(ordered), mean, p5, p25, p50, p75, p95, mean_lo, mean_hi, p50_lo, p50_hi)


def _measurable(ordered: Sequence[float]) -> list[float]:
    """The values within +-LARGEST (no figure comes near), NaN and Infinity out, sorted; what was left out logged.

    A row no measurement could produce (a hostile agent's, or one from before migration 14) must not take a page
    down: its mean overflowed, and a chart's scale with it."""
    kept = sorted(v for v in ordered if -LARGEST <= v <= LARGEST)
    log.warning("%d values no measurement can produce left out of a figure", len(ordered) - len(kept))
    return kept


def mean_interval(values: Sequence[float], mean: float) -> tuple[float | None, float | None]:
    """95 % interval of the mean = mean ± Z95 · s / √n (s: sample standard deviation); none below two values."""
    if len(values) < 2:
        return None, None
    n = len(values)
    # s² = (Σx² - n·mean²) / (n - 1), both sums exact-rounded by fsum: statistics.stdev sums exact fractions,
    # ~100x slower over a board's values. Cancellation costs ~1e-16·mean²/s² of s², nothing for timings.
    squares = math.fsum(map(operator.mul, values, values))
    half = Z95 * math.sqrt(max(0.0, squares - n * mean * mean) / (n - 1) / n)
    return mean - half, mean + half


def median_interval(ordered: Sequence[float]) -> tuple[float | None, float | None]:
    """95 % distribution-free interval of the median: :func:`quantile_interval` at q = 0.5."""
    return quantile_interval(ordered, 0.5)


def quantile_interval(ordered: Sequence[float], q: float) -> tuple[float | None, float | None]:
    """95 % distribution-free interval of the q-quantile = (x₍ₗ₎, x₍ᵤ₎), l, u = nq ∓ Z95·√(nq(1-q)) (binomial,
    normal approximation; u one rank up; 1-based order statistics, clamped to the extremes); none below two
    values. At q = 0.5: n/2 ∓ Z95·√n/2. A tail's interval reaches the largest value when n(1-q) is small."""
    n = len(ordered)
    if n < 2:
        return None, None
    spread = Z95 * math.sqrt(n * q * (1 - q))
    lower = max(1, math.floor(n * q - spread))
    upper = min(n, math.ceil(n * q + 1 + spread))
    return ordered[lower - 1], ordered[upper - 1]


def share_interval(k: int, n: int) -> tuple[float, float] | None:
    """95 % Wilson interval of the share k / n = (p + z²/2n ∓ z·√(p(1-p)/n + z²/4n²)) / (1 + z²/n); None when n is 0."""
    if n <= 0:
        return None
    p, z2 = k / n, Z95 * Z95
    centre, half = p + z2 / (2 * n), Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, (centre - half) / (1 + z2 / n)), min(1.0, (centre + half) / (1 + z2 / n))


def commonest(kinds: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    """Failure kinds and their counts, commonest first, ties by name: the one order every list of them uses."""
    return tuple(sorted(kinds.items(), key=lambda e: (-e[1], e[0])))


def success_rate(ok: int, samples: int, cancelled: int) -> float | None:
    """Success rate = ok / (samples - cancelled); None when nothing was judged."""
    # A sample the client cancelled (Ctrl-C, shutdown) says nothing of the endpoint, so it is no verdict.
    judged = samples - cancelled
    return ok / judged if judged else None


def availability(ok: int, samples: int, cancelled: int, rate_limited: int) -> float | None:
    """Availability excluding rate limits = ok / (samples - cancelled - rate-limited); None when nothing is left."""
    # OpenRouter's definition: a 429 is the provider refusing this client its quota, not the endpoint failing.
    served = samples - cancelled - rate_limited
    return ok / served if served else None
