"""One endpoint x workload over a window, gathered from rollup rows (whole hours) and raw samples (the edges).

Figures are computed in Python from every value, sorted, by :func:`tokenpace.measure.stats.figure`: the very
``metrics.percentile`` of a run's summary, so a window's percentiles are exact and equal a recompute from the
raw samples whichever database holds them. Values of successful *fresh* samples count: not served from the
provider's prompt cache, not a cold start (those have their own TTFT figure), and not flagged client-bound for
that figure unless those are included (measure/verdict.py: a sample's other figures still count). The success
rate counts every sample by its outcome, cancelled ones left out (``stats``); the canary's pass rate every sample
whose verdict is known.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, NamedTuple

from tokenpace.measure.bounds import clean_sorted
from tokenpace.measure.stats import Figure, Tail, figure_sorted, tail
from tokenpace.measure.verdict import ALL, FIGURE_BOUND
from tokenpace.store.rollup import METRICS, UNKNOWN, decode

# (cached, cold, client_bound): 0/1, 0/1 and the flagged figures' bits; which of a tally's values a figure takes
TallyGroup = tuple[int, int, int]
FRESH: TallyGroup = (0, 0, 0)
TTFT = METRICS.index("ttft_ms")
_FLAG = tuple(FIGURE_BOUND[m] for m in METRICS)  # the verdict's bits that leave each metric's values out
log = logging.getLogger(__name__)
_NONE = figure_sorted([])
# The tails a routing goal at P90 reads (board/route.py): each figure's P10 and P90 with their intervals, of the
# figures a route ranks by only; computed from the values the figure is sorted from, so they cost no second sort.
TAIL_QUANTILES = (0.1, 0.9)
TAILED = tuple(METRICS.index(m) for m in ("output_speed", "ttft_ms", "e2e_ms"))


class HourRow(NamedTuple):
    """A rollup row as the windows read it: they select these columns, by these names (rollup.RollupLevel.columns)."""

    provider: str
    plan: str
    model: str
    workload: str
    region: str
    client_bound: int
    cached: int
    cold: int
    samples: int
    ok: int
    one_shot: int
    first_at: float
    last_at: float
    protocol: str
    simulated: int
    failures: str
    canary_checked: int
    canary_passed: int
    output_speed: str  # METRICS, each as the rollup's text of its values
    ttft_ms: str
    e2e_ms: str
    ttft_net_ms: str
    e2e500_ms: str


class SampleRow(NamedTuple):
    """A published sample as the windows read their edge hours: rollup.CURRENT.names, selected by rollup.RAW."""

    provider: str
    plan: str
    model: str
    workload: str
    region: str
    started_at: float
    ok: int
    error_kind: str | None
    source: str
    client_bound: int
    protocol: str
    simulated: int
    cached: int
    cold: int
    canary_ok: int | None
    output_speed: float | None  # METRICS
    ttft_ms: float | None
    e2e_ms: float | None
    ttft_net_ms: float | None
    e2e500_ms: float | None


_metric_values = attrgetter(*METRICS)  # a row's METRICS, in order, by name


def _lists() -> tuple[list[Any], ...]:
    return tuple([] for _ in METRICS)


def _takes(group: TallyGroup, cold: int, flag: int, include_bound: bool) -> bool:
    """Whether a figure takes a group's values: not cached, cold or not, flagged for it only when included."""
    cached, c, bound = group
    return not cached and c == cold and (include_bound or not bound & flag)


@dataclass
class Tally:
    """Counts, times and values so far; values and successes kept per :data:`TallyGroup`, so a figure takes the
    fresh ones not flagged for it (all when client-bound ones are included) and the cold TTFT the cold ones."""

    samples: int = 0
    ok: int = 0
    one_shot: int = 0
    bound: int = 0  # samples with a figure flagged client-bound, whatever their outcome
    cached: int = 0  # samples the provider served (in part) from its prompt cache, whatever their outcome
    cold: int = 0  # samples taken after the endpoint sat idle long enough to be a cold start
    checked: int = 0  # samples whose canary verdict is known
    passed: int = 0
    first_at: float | None = None
    last_at: float | None = None
    protocol: str = ""
    simulated: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    oks: Counter[TallyGroup] = field(default_factory=Counter)  # successful samples per group
    texts: dict[TallyGroup, tuple[list[str], ...]] = field(default_factory=dict)  # rollup values, unparsed
    values: dict[TallyGroup, tuple[list[float], ...]] = field(default_factory=dict)

    def _times(self, first: float, last: float, protocol: str, simulated: int) -> None:
        self.first_at = first if self.first_at is None else min(self.first_at, first)
        self.last_at = last if self.last_at is None else max(self.last_at, last)
        self.protocol, self.simulated = max(self.protocol, protocol), max(self.simulated, int(simulated))

    def _count(self, group: TallyGroup, samples: int, ok: int, checked: int, passed: int) -> None:
        self.samples += samples
        self.ok += ok
        self.checked += checked
        self.passed += passed
        if group == FRESH:  # most rows: nothing counted apart
            self.oks[FRESH] += ok
            return
        self.oks[group] += ok
        cached, cold, bound = group
        self.cached += samples if cached else 0
        self.cold += samples if cold else 0
        self.bound += samples if bound else 0

    def hours(self, r: HourRow) -> None:
        """Add a rollup row."""
        group = (r.cached, r.cold, r.client_bound)
        self._count(group, r.samples, r.ok, r.canary_checked, r.canary_passed)
        self.one_shot += r.one_shot
        self._times(r.first_at, r.last_at, r.protocol, r.simulated)
        if r.failures:
            self.kinds.update(r.failures.split())
        kept = self.texts.get(group)
        if kept is None:
            kept = self.texts[group] = _lists()
        for texts, text in zip(kept, _metric_values(r), strict=True):
            if text:
                texts.append(text)

    def sample(self, r: SampleRow) -> None:
        """Add a raw sample."""
        ok, verdict = r.ok, r.canary_ok
        group = (int(r.cached), int(r.cold), int(r.client_bound))
        self._count(group, 1, int(bool(ok)), verdict is not None, bool(verdict))
        self.one_shot += r.source == "one-shot"
        self._times(r.started_at, r.started_at, r.protocol, r.simulated)
        if not ok:
            self.kinds[r.error_kind or UNKNOWN] += 1
            return
        kept = self.values.get(group)
        if kept is None:
            kept = self.values[group] = _lists()
        for values, value in zip(kept, _metric_values(r), strict=True):
            if value is not None:
                values.append(float(value))

    def usable(self, include_bound: bool) -> int:
        """Successful fresh samples with a figure that counts (one flagged for every figure counts none)."""
        counted = (n for (cached, cold, bound), n in self.oks.items() if not cached and not cold and
                   (include_bound or bound & ALL != ALL))  # fmt: skip
        return sum(counted)

    def _figure(self, i: int, cold: int, include_bound: bool) -> Figure:
        return figure_sorted(self._sorted(i, cold, include_bound))

    def _sorted(self, i: int, cold: int, include_bound: bool) -> list[float]:
        """The values a figure takes, ascending, those no measurement can produce left out."""
        groups = [g for g in dict.fromkeys((*self.texts, *self.values)) if _takes(g, cold, _FLAG[i], include_bound)]
        if not groups:
            return []  # no cold start, say: nothing to sort
        texts = [t for g in groups if g in self.texts for t in self.texts[g][i]]
        values = decode("".join(texts))
        for g in groups:
            if g in self.values:
                values += self.values[g][i]
        values.sort()
        values, skipped = clean_sorted(METRICS[i], values)
        if skipped:  # rows from before migration 14, or written past it: skipped, never a failed page
            log.warning("%d %s values outside what a measurement can be skipped", skipped, METRICS[i])
        return values

    def figures(self, include_bound: bool) -> list[Figure]:
        """Each metric's Figure over the fresh values that count, sorted once (stats.figure_sorted)."""
        return self.measured(include_bound)[0]

    def measured(self, include_bound: bool) -> tuple[list[Figure], tuple[tuple[str, Tail], ...]]:
        """:meth:`figures`, and the TAIL_QUANTILES of the TAILED metrics from the same sorted values, each as
        (metric, Tail)."""
        figures, tails = [], []
        for i in range(len(METRICS)):
            values = self._sorted(i, 0, include_bound)
            figures.append(figure_sorted(values) if values else _NONE)
            if i in TAILED:
                tails += [(METRICS[i], tail(values, q)) for q in TAIL_QUANTILES]
        return figures, tuple(tails)

    def cold_ttft(self, include_bound: bool) -> Figure:
        """TTFT over the cold starts' values (not cached; client-bound ones only when included)."""
        return self._figure(TTFT, 1, include_bound)


def tally(found: dict[tuple[str, ...], Tally], key: Sequence[Any]) -> Tally:
    """The Tally of a key, new if none yet."""
    k = tuple(key)
    t = found.get(k)
    if t is None:
        t = found[k] = Tally()
    return t
