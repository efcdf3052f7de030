"""Percentiles of a stream of values in bounded memory: exact while they fit, a log-bucketed sketch past that.

A load test of a million requests cannot keep every request to compute its percentiles at the end, so each
figure's values go into a :class:`Quantiles` as they come:

- count, sum (compensated), sum of squares, min and max are exact whatever the count, so n, the mean, its
  interval and the max are exact;
- the values themselves are kept, exactly, up to EXACT_VALUES: every percentile below that is the one the
  values give (measure/metrics.py's percentile: linear between closest ranks);
- past it they go into a sketch in the manner of DDSketch (Masson, Rim and Lee, VLDB 2019): bucket i counts
  the values v with gamma^(i-1) < |v| <= gamma^i, gamma = (1 + a) / (1 - a), a = RELATIVE_ERROR, and answers
  for it 2 gamma^i / (gamma + 1): the value it gives for a rank is within a (0.5 %) of the value truly at that
  rank, relative; |v| under MIN_MAGNITUDE counts as 0 (error below 1e-9 absolute). Its memory is the number of
  buckets, at most ~2,800 per sign over the whole range a figure may take (1e-9 to 1e12);
- and the TOP_VALUES largest values stay exact beside the sketch: the tail (P99 up to 2,000,000 values, and
  MLPerf's early-stopping estimate, the t-th largest value, t about 1 % of n) is exact there.

Two of them :meth:`merge` into what one would hold had it seen both streams: worker processes each keep their
own and the parent adds them up.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import statistics
from array import array
from collections.abc import Iterable, Sequence
from typing import overload

from tokenpace.measure.bounds import LARGEST

EXACT_VALUES = 100_000  # values kept as they are (8 bytes each); past this, the sketch
TOP_VALUES = 20_000  # largest values kept exactly beside the sketch (the tail: ~1 % of 2,000,000)
RELATIVE_ERROR = 0.005  # the sketch's bound: a value it gives is within 0.5 % of the true one at that rank
MIN_MAGNITUDE = 1e-9  # |v| below this is counted as 0 by the sketch
GAMMA = (1 + RELATIVE_ERROR) / (1 - RELATIVE_ERROR)
_LN_GAMMA = math.log(GAMMA)


def bucket_of(magnitude: float) -> int:
    """The sketch's bucket of |v| >= MIN_MAGNITUDE: i = ceil(ln |v| / ln gamma), so gamma^(i-1) < |v| <= gamma^i."""
    return math.ceil(math.log(magnitude) / _LN_GAMMA)


def bucket_value(i: int) -> float:
    """What the sketch answers for bucket i = 2 gamma^i / (gamma + 1): within RELATIVE_ERROR of all it holds."""
    return 2 * GAMMA**i / (GAMMA + 1)


class Quantiles:
    """One figure's values as they come: exact counts and sums, the values while they fit, a sketch past that.

    Values outside +-LARGEST (measure/bounds.py), NaN included, are no measurement: counted in ``left_out``,
    nothing else.
    """

    def __init__(self, exact: int | None = None, top: int | None = None) -> None:
        self.exact_limit = EXACT_VALUES if exact is None else exact  # (read now: a test may lower them)
        self.top_limit = TOP_VALUES if top is None else top
        self.n = 0
        self.left_out = 0
        self.lo = math.inf
        self.hi = -math.inf
        self._sum = self._sum_c = 0.0  # Neumaier's compensated sum: exact to the last bits over any count
        self._squares = self._squares_c = 0.0
        self.values: array[float] | None = array("d")  # None once the sketch took over
        self.positive: dict[int, int] = {}  # bucket -> count (the sketch)
        self.negative: dict[int, int] = {}  # bucket of |v| -> count
        self.zeros = 0
        self.top: list[float] = []  # a min-heap of the largest values (the sketch's companion)
        self._ordered: Sequence[float] | None = None

    @property
    def exact(self) -> bool:
        """Whether every value is still held, so every percentile is exact."""
        return self.values is not None

    def held(self) -> int:
        """Numbers held in memory: the values, or the sketch's buckets and the top values."""
        if self.values is not None:
            return len(self.values)
        return len(self.positive) + len(self.negative) + 1 + len(self.top)

    def add(self, v: float) -> None:
        if not -LARGEST <= v <= LARGEST:
            self.left_out += 1
            return
        self.n += 1
        self._sum, self._sum_c = _neumaier(self._sum, self._sum_c, v)
        self._squares, self._squares_c = _neumaier(self._squares, self._squares_c, v * v)
        self.lo, self.hi = min(self.lo, v), max(self.hi, v)
        self._ordered = None
        if self.values is not None:
            self.values.append(v)
            if len(self.values) > self.exact_limit:
                self._to_sketch()
        else:
            self._sketch(v)

    def extend(self, values: Iterable[float]) -> None:
        """:meth:`add` of each value, the sums and bounds taken once for them all (a request's ITLs: ~100 values)."""
        given = list(values)
        batch = [v for v in given if -LARGEST <= v <= LARGEST]
        self.left_out += len(given) - len(batch)
        if not batch:
            return
        self.n += len(batch)
        self._sum, self._sum_c = _neumaier(self._sum, self._sum_c, math.fsum(batch))
        self._squares, self._squares_c = _neumaier(self._squares, self._squares_c, math.fsum(v * v for v in batch))
        self.lo, self.hi = min(self.lo, min(batch)), max(self.hi, max(batch))
        self._ordered = None
        if self.values is not None:
            self.values.extend(batch)
            if len(self.values) > self.exact_limit:
                self._to_sketch()
            return
        for v in batch:
            self._sketch(v)

    def merge(self, other: Quantiles) -> None:
        """Take ``other``'s values in: this then holds what one Quantiles fed both streams would hold."""
        self.n += other.n
        self.left_out += other.left_out
        self._sum, self._sum_c = _neumaier(self._sum, self._sum_c + other._sum_c, other._sum)
        self._squares, self._squares_c = _neumaier(self._squares, self._squares_c + other._squares_c, other._squares)
        self.lo, self.hi = min(self.lo, other.lo), max(self.hi, other.hi)
        self._ordered = None
        if self.values is not None and other.values is not None:
            self.values.extend(other.values)
            if len(self.values) > self.exact_limit:
                self._to_sketch()
            return
        self._to_sketch()
        if other.values is not None:
            for v in other.values:
                self._sketch(v)
            return
        for mine, theirs in ((self.positive, other.positive), (self.negative, other.negative)):
            for i, count in theirs.items():
                mine[i] = mine.get(i, 0) + count
        self.zeros += other.zeros
        for v in other.top:
            self._keep_top(v)

    def mean(self) -> float | None:
        """The mean: statistics.fmean of the values while they are held, else the compensated sum / n."""
        if not self.n:
            return None
        if self.values is not None:
            return statistics.fmean(self.values)
        return (self._sum + self._sum_c) / self.n

    def sum_of_squares(self) -> float:
        """Σ v², compensated (a mean's interval needs it when the values are no longer held)."""
        return self._squares + self._squares_c

    def ordered(self) -> Sequence[float]:
        """The values in ascending order: themselves while held, else a view that answers each rank from the top
        values (exact) or the sketch (within RELATIVE_ERROR), between the exact min and max."""
        if self._ordered is None:
            self._ordered = sorted(self.values) if self.values is not None else _Ranked(self)
        return self._ordered

    def _to_sketch(self) -> None:
        values, self.values = self.values, None
        if values is None:
            return
        for v in values:
            self._sketch(v, top=False)
        self.top = heapq.nlargest(self.top_limit, values)
        heapq.heapify(self.top)

    def _sketch(self, v: float, top: bool = True) -> None:
        magnitude = abs(v)
        if magnitude < MIN_MAGNITUDE:
            self.zeros += 1
        else:
            counts = self.positive if v > 0 else self.negative
            i = bucket_of(magnitude)
            counts[i] = counts.get(i, 0) + 1
        if top:
            self._keep_top(v)

    def _keep_top(self, v: float) -> None:
        if len(self.top) < self.top_limit:
            heapq.heappush(self.top, v)
        elif v > self.top[0]:
            heapq.heapreplace(self.top, v)


def _neumaier(total: float, carry: float, v: float) -> tuple[float, float]:
    """Neumaier's step of a compensated sum: (total + v, the rounding error carried so far)."""
    t = total + v
    carry += (total - t) + v if abs(total) >= abs(v) else (v - t) + total
    return t, carry


class _Ranked(Sequence[float]):
    """A sketched Quantiles' values in ascending order, by rank (0-based; negative from the end): the largest
    ``len(top)`` exact, the others the value of the bucket the rank falls in, clamped to the exact min and max."""

    def __init__(self, q: Quantiles) -> None:
        self.n, self.lo, self.hi = q.n, q.lo, q.hi
        self.top = sorted(q.top)
        self.first_top = q.n - len(self.top)  # the rank of the smallest top value
        buckets = [(-bucket_value(i), c) for i, c in sorted(q.negative.items(), reverse=True)]
        buckets += [(0.0, q.zeros)] if q.zeros else []
        buckets += [(bucket_value(i), c) for i, c in sorted(q.positive.items())]
        self.values = [v for v, _ in buckets]
        self.ends = list(itertools.accumulate(c for _, c in buckets))  # ranks below ends[k] are in bucket k

    def __len__(self) -> int:
        return self.n

    def at(self, rank: int) -> float:
        if rank < 0:
            rank += self.n
        if not 0 <= rank < self.n:
            raise IndexError(rank)
        if rank >= self.first_top:
            return self.top[rank - self.first_top]
        return min(self.hi, max(self.lo, self.values[bisect.bisect_right(self.ends, rank)]))

    @overload
    def __getitem__(self, i: int) -> float: ...
    @overload
    def __getitem__(self, i: slice) -> list[float]: ...
    def __getitem__(self, i: int | slice) -> float | list[float]:
        if isinstance(i, slice):
            return [self.at(k) for k in range(*i.indices(self.n))]
        return self.at(i)
