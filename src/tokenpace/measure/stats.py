"""Figures over many samples: how many values, their mean and percentiles, and the success rate.

The one vocabulary of every place that aggregates samples: a run's summary (``board.summary``, in Python over
the samples at hand), the leaderboard's rolling windows (``store.windows``, in SQL over the database) and a
load test's latencies (``load.figures``), so all report the same fields and judge success by the same formula.
Pure (but for a warning when it leaves out values no measurement can produce); the lowest layer they all
import.

Every percentile written out carries its n, the number of values it was computed over (the successful requests
that have the figure, not all requests): :func:`with_n` is the one rule every export writes a figure by.
MLPerf's early stopping (:func:`early_stop`) says which tail those n values bound, at 99 % confidence.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import operator
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokenpace.measure.bounds import LARGEST
from tokenpace.measure.metrics import percentile_sorted
from tokenpace.measure.quantiles import Quantiles

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


@dataclass(frozen=True, slots=True)
class Tail:
    """One q-quantile of a figure's values and its 95 % interval (:func:`quantile_interval`), over n values: what
    a routing goal at P90 ranks by (board/route.py), where a Figure's percentiles stop at P5 and P95."""

    q: float
    n: int = 0
    value: float | None = None
    lo: float | None = None
    hi: float | None = None


def tail(ordered: Sequence[float], q: float) -> Tail:
    """The q-quantile of ascending values (metrics.percentile_sorted at 100q) and its 95 % interval."""
    lo, hi = quantile_interval(ordered, q)
    return Tail(q, len(ordered), percentile_sorted(ordered, q * 100), lo, hi)


def with_n(f: Figure, fields: Sequence[str] | None = None) -> dict[str, Any]:
    """A figure as every export writes it: "n" (the values its percentiles were computed over) beside ``fields``
    (all of Figure's when None), each under its own name; a reader never meets a percentile without its n."""
    names = [fld.name for fld in dataclasses.fields(Figure)] if fields is None else fields
    return {"n": f.n} | {name: getattr(f, name) for name in names if name != "n"}


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


def figure_of(q: Quantiles) -> Figure:
    """:func:`figure` of a stream's values (measure/quantiles.py): the same while it holds them all; past that,
    each percentile and the median's interval from its ranks (within its relative error), the mean and its
    interval exact (from its sums)."""
    if q.exact or not q.n:
        return figure_sorted(q.ordered())
    ordered, mean = q.ordered(), q.mean()
    assert mean is not None
    p5, p25, p50, p75, p95 = (percentile_sorted(ordered, x) for x in QUANTILES)
    mean_lo, mean_hi = mean_interval_of(q.n, mean, q.sum_of_squares())
    p50_lo, p50_hi = median_interval(ordered)
    return Figure(q.n, mean, p5, p25, p50, p75, p95, mean_lo, mean_hi, p50_lo, p50_hi)


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
    # Σx² exact-rounded by fsum: statistics.stdev sums exact fractions, ~100x slower over a board's values.
    return mean_interval_of(len(values), mean, math.fsum(map(operator.mul, values, values)))


def mean_interval_of(n: int, mean: float, squares: float) -> tuple[float | None, float | None]:
    """:func:`mean_interval` from n, the mean and Σx²: s² = (Σx² - n·mean²) / (n - 1); none below two values."""
    if n < 2:
        return None, None
    # Cancellation costs ~1e-16·mean²/s² of s², nothing for timings.
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


# MLPerf's early stopping (MLCommons LoadGen, loadgen/early_stopping.cc and results.cc): how far a tail percentile
# of n independent requests can be trusted. The confidence is LoadGen's own, fixed at 99 %.
ES_CONFIDENCE = 0.99


def binomial_pmf(x: int, n: int, p: float) -> float:
    """P(X = x), X ~ Binomial(n, p), 0 < p < 1: C(n, x) pˣ (1 - p)ⁿ⁻ˣ, through lgamma (no overflow at any n)."""
    return math.exp(
        math.lgamma(n + 1) - math.lgamma(x + 1) - math.lgamma(n - x + 1) + x * math.log(p) + (n - x) * math.log1p(-p)
    )


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k), X ~ Binomial(n, p) = Σ_{x=0..k} binomial_pmf(x, n, p)."""
    if k < 0:
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    return min(1.0, math.fsum(binomial_pmf(x, n, p) for x in range(k + 1)))


def early_stopping_odds(h: int, t: int, q: float) -> float:
    """LoadGen's odds(h, t, q) = P(at most t of h + t requests beyond the q-quantile) = binomial_cdf(t, h + t, 1 - q)
    (LoadGen writes it BetaRegularized[q, h, 1 + t]): the chance of doing this well were the quantile higher."""
    return binomial_cdf(t, h + t, 1 - q)


@functools.cache  # a few q and t asked again for every figure of every level
def min_passing(t: int, q: float, confidence: float = ES_CONFIDENCE) -> int:
    """LoadGen's find_min_passing: the fewest h with early_stopping_odds(h, t, q) <= 1 - c, so that h requests
    under a bound and t over it show the q-quantile under it with confidence c. At t = 0 it is ⌈ln(1 - c) / ln q⌉:
    459 at P99, 90 at P95. (LoadGen asks < 1 - c; the two differ only where the odds equal 1 - c exactly.)"""
    if not (0.0 < q < 1.0 and 0.0 < confidence < 1.0 and t >= 0):
        raise ValueError(f"early stopping needs 0 < q < 1, 0 < confidence < 1 and t >= 0 (q {q}, t {t})")
    if t == 0:  # the closed form; the epsilon keeps an exact quotient (1.0000000000000002) from costing a sample
        return max(1, math.ceil(math.log(1 - confidence) / math.log(q) - 1e-9))
    low, high = 1, 2
    while early_stopping_odds(high, t, q) > 1 - confidence:  # the odds fall as h grows: double, then halve
        low, high = high + 1, high * 2
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if early_stopping_odds(mid, t, q) <= 1 - confidence else (mid + 1, high)
    return low


def overlatency(n: int, q: float, confidence: float = ES_CONFIDENCE) -> int:
    """LoadGen's t for an estimate from n values: the largest t with n >= min_passing(t, q) + t, which is the
    largest t with binomial_cdf(t, n, 1 - q) <= 1 - c (the same odds at h = n - t); 0 when not even t = 1 holds."""
    if n <= 0:
        return 0
    total, t = 0.0, -1
    for x in range(n + 1):  # the CDF rises with x: stop at the first term that takes it past 1 - c
        total += binomial_pmf(x, n, 1 - q)
        if total > 1 - confidence:
            break
        t = x
    return max(t, 0)


@dataclass(frozen=True, slots=True)
class EarlyStop:
    """MLPerf's early-stopping estimate of the q-quantile from n values (LoadGen's SingleStream rule): ``bound``,
    the ``over``-th largest value, is above the ``bounded`` quantile with probability ``confidence``.

    ``bounded`` is q itself from ``needed`` values on (min_passing(1, q) + 1: 662 at P99); below that, the highest
    quantile (to a tenth of a percent, from the median up) that n values bound, and None where they bound none.
    """

    q: float
    n: int
    needed: int
    bounded: float | None = None
    bound: float | None = None
    over: int = 0  # t: values at or above the bound, the bound included (LoadGen's "overlatency" queries)
    confidence: float = ES_CONFIDENCE


def early_stop(ordered: Sequence[float], q: float = 0.99, confidence: float = ES_CONFIDENCE) -> EarlyStop:
    """The early-stopping estimate of the q-quantile of ``ordered`` (ascending) = ordered[n - t], t =
    :func:`overlatency`; below :attr:`EarlyStop.needed` values, the same for the highest quantile they bound."""
    n, needed = len(ordered), min_passing(1, q, confidence) + 1
    bounded = q if n >= needed else highest_bounded(n, q, confidence)
    if bounded is None:
        return EarlyStop(q, n, needed, confidence=confidence)
    # At least 1: the test that chose ``bounded`` sums the same odds in another order (the last bit may differ).
    t = max(1, overlatency(n, bounded, confidence))
    return EarlyStop(q, n, needed, bounded, ordered[n - t], t, confidence)


def highest_bounded(n: int, q: float, confidence: float = ES_CONFIDENCE) -> float | None:
    """The highest quantile q' <= q, in thousandths from 0.5, whose early-stopping estimate n values give:
    binomial_cdf(1, n, 1 - q') <= 1 - c (their largest bounds it); None below the median."""
    low, high = 500, math.floor(q * 1000 + 1e-9)  # the thousandths searched; the CDF rises with q'
    if high < low or binomial_cdf(1, n, 1 - low / 1000) > 1 - confidence:
        return None
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if binomial_cdf(1, n, 1 - mid / 1000) <= 1 - confidence else (low, mid - 1)
    return low / 1000
