"""Change points in a chronological series: where its later part stopped looking like its earlier part.

An endpoint's speed is noisy, so one slow sample says nothing; a fixed threshold on one sample would alarm all
day. A change is found by binary segmentation (Scott and Knott 1974): try every split of the series that leaves
at least ``min_before`` samples before and ``min_after`` after, keep the one whose two sides differ most (for
timings, the best least-squares step; for outcomes, the largest |z|), accept it only if a two-sample test
between its sides is significant (|z| >= ``z``) *and* the effect is large enough to matter, then look for more
splits on each side. Timings use the Mann-Whitney U test: it reads ranks only, so
the long right tail of latencies and the odd outlier move it no more than any other sample, and it holds
whatever the distribution (no normality, no log needed). Outcomes (ok or not) use the two-proportion z test.

Trying many splits is many tests: the threshold is set high (|z| >= 4 for timings, p ~ 0.00006 per test; 5 for
outcomes, whose failures come in bursts) and the effect must be at least 20 % (timings, ratio of medians) or 20
points (success rate), so steady noisy series stay quiet (tests/board/test_changepoint.py runs 500 lognormal
series of 96 samples at each of three noise levels, and 500 with random failures at each of three rates). The
cost: a change needs ``min_after`` = 8 samples to show (80 minutes at the 10-minute cadence; complete separation
of 8 from 20 gives z = 4.0, so fewer can never pass), and a partial outage (half the requests failing) needs
a longer run of samples than a complete one. Where a split falls is decided by least squares on the log values,
its significance by the rank test (see :func:`_best_timing_split`). Ties (none in float timings) are given
mid-ranks without the variance correction, which makes the test conservative: it errs on quiet.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

MIN_BEFORE = 20  # baseline samples a split needs before it
MIN_AFTER = 8  # samples a split needs after it: a change must persist this long to count
Z = 4.0  # |z| a timing split needs: p ~ 0.00006 two-sided per test
Z_OUTCOME = 5.0  # |z| a success split needs: failures come in bursts, so a burst of a few is no change
MIN_RATIO = 0.2  # timings: |after / before - 1| of the medians
MIN_POINTS = 0.2  # success rate: |after - before|, as a fraction


@dataclass(frozen=True, slots=True)
class Split:
    """A change point: ``index`` is the first sample after the change; ``before``/``after`` the medians (or
    rates) of the two sides it was tested between; ``z`` the test statistic (positive: after is higher)."""

    index: int
    before: float
    after: float
    z: float


def midranks(values: Sequence[float]) -> list[float]:
    """Rank of each value in place, 1 = smallest; tied values share the mean of their ranks."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def u_to_z(rank_sum_after: float, n1: int, n2: int) -> float:
    """z = (U - n1 n2 / 2) / sqrt(n1 n2 (n1 + n2 + 1) / 12), U = rank sum of after - n2 (n2 + 1) / 2."""
    u = rank_sum_after - n2 * (n2 + 1) / 2
    sd = math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
    return (u - n1 * n2 / 2) / sd if sd > 0 else 0.0


def mann_whitney_z(before: Sequence[float], after: Sequence[float]) -> float:
    """Mann-Whitney's z of after against before (:func:`u_to_z` over the pooled mid-ranks); > 0: after higher."""
    ranks = midranks([*before, *after])
    return u_to_z(sum(ranks[len(before) :]), len(before), len(after))


def two_proportion_z(ok_before: int, n_before: int, ok_after: int, n_after: int) -> float:
    """z = (p2 - p1) / sqrt(p (1 - p) (1/n1 + 1/n2)), p the pooled rate; 0 when every outcome is alike."""
    p1, p2 = ok_before / n_before, ok_after / n_after
    p = (ok_before + ok_after) / (n_before + n_after)
    se = math.sqrt(p * (1 - p) * (1 / n_before + 1 / n_after))
    return (p2 - p1) / se if se > 0 else 0.0


def relative_change(before: float, after: float) -> float:
    """after / before - 1 (infinite when before is 0 and after is not)."""
    if before == 0:
        return 0.0 if after == 0 else math.inf
    return after / before - 1


def step_fit(logs: Sequence[float]) -> int:
    """The split s maximising s (n - s) / n (mean(logs[:s]) - mean(logs[s:]))^2: the least-squares step, as it
    leaves MIN_BEFORE and MIN_AFTER values on its sides (0 when the series is too short)."""
    n = len(logs)
    prefix = [0.0, *itertools.accumulate(logs)]
    best_s, best = 0, -1.0
    for s in range(MIN_BEFORE, n - MIN_AFTER + 1):
        d = prefix[s] / s - (prefix[n] - prefix[s]) / (n - s)
        fit = s * (n - s) / n * d * d
        if fit > best:
            best_s, best = s, fit
    return best_s


def _best_timing_split(values: Sequence[float], lo: int, hi: int) -> Split | None:
    """values[lo:hi]'s change point: placed by the least-squares step on log values (a rank statistic places a
    short recent segment early: it gains more from a larger side than it loses from a few wrong samples), then
    tested by Mann-Whitney between the two sides."""
    part = values[lo:hi]
    s = step_fit([math.log(max(v, 1e-9)) for v in part])
    if s == 0:
        return None
    return Split(lo + s, statistics.median(part[:s]), statistics.median(part[s:]), mann_whitney_z(part[:s], part[s:]))


def _best_outcome_split(oks: Sequence[bool], lo: int, hi: int) -> Split | None:
    """The split of oks[lo:hi] with the largest |z| of the two-proportion test."""
    if hi - lo < MIN_BEFORE + MIN_AFTER:
        return None
    prefix = [0, *itertools.accumulate(oks[lo:hi])]
    ok_total, best = prefix[-1], None
    for s in range(lo + MIN_BEFORE, hi - MIN_AFTER + 1):
        k1 = prefix[s - lo]
        n1, n2 = s - lo, hi - s
        z = two_proportion_z(k1, n1, ok_total - k1, n2)
        if best is None or abs(z) > abs(best.z):
            best = Split(s, k1 / n1, (ok_total - k1) / n2, z)
    return best


def _segments(n: int, best: Callable[[int, int], Split | None], weak: Callable[[Split], bool]) -> list[Split]:
    """Binary segmentation of [0, n): the ``best`` split of a span, kept unless ``weak``, then each side's again."""
    found: list[Split] = []
    todo = [(0, n)]
    while todo:
        lo, hi = todo.pop()
        split = best(lo, hi)
        if split is None or weak(split):
            continue
        found.append(split)
        todo += [(lo, split.index), (split.index, hi)]
    return sorted(found, key=lambda s: s.index)


def timing_changes(values: Sequence[float]) -> list[Split]:
    """Change points of a timing series (speed, TTFT), oldest first: binary segmentation with Mann-Whitney."""
    return _segments(
        len(values),
        lambda lo, hi: _best_timing_split(values, lo, hi),
        lambda s: abs(s.z) < Z or abs(relative_change(s.before, s.after)) < MIN_RATIO,
    )


def outcome_changes(oks: Sequence[bool]) -> list[Split]:
    """Change points of a success series, oldest first: binary segmentation with the two-proportion z test."""
    return _segments(
        len(oks),
        lambda lo, hi: _best_outcome_split(oks, lo, hi),
        lambda s: abs(s.z) < Z_OUTCOME or abs(s.after - s.before) < MIN_POINTS,
    )
