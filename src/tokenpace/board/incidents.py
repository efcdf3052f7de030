"""Incidents by written rules: an endpoint's samples from one region, walked in time order, open and close them.

Each rule is a function of one track of samples (every judged sample, or one workload's timed ones, or the
canary's verdicts) at one of its samples: True while its condition holds, False once its stated recovery holds,
None when its samples say neither (too few of them, or no clean baseline), which changes nothing. Its docstring
is the rule as /methodology states it, the thresholds filled in (config/incidents.py). An incident opens at the
sample where its rule first says True and closes at the first later sample where it says False; the records are
derived from the stored samples whenever they are read, so the same samples always give the same incidents.

An incident is what tokenpace saw from one region ('' this server itself), never a claim about the provider's
own status page or about other places.
"""

from __future__ import annotations

import statistics
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime

from tokenpace.board.numbers import interval
from tokenpace.config.endpoints import endpoint_name
from tokenpace.config.incidents import Thresholds
from tokenpace.measure.failures import ErrorKind
from tokenpace.store.rollup import DAY
from tokenpace.store.series import Placed

SEVERITIES = ("minor", "major", "critical")  # least to worst
MAX_EVIDENCE = 50  # sample ids kept of what a rule read when it opened: the latest ones
Reading = tuple[bool | None, int]  # the rule's verdict, and how many of the track's latest samples it read


@dataclass(frozen=True, slots=True)
class Track:
    """One series of samples in time order, with what the rules read of it precomputed."""

    samples: Sequence[Placed]
    at: list[float]  # started_at, epoch seconds
    failed: list[int]  # failed[i]: failures among samples[:i]
    ttft: list[float]  # each sample's TTFT (0 where it has none)

    @classmethod
    def of(cls, samples: Sequence[Placed], ok: Sequence[bool] | None = None) -> Track:
        """The track of ``samples``, each a success where ``ok`` says (by default: where the sample is)."""
        failed = [0]
        for good in [s.point.ok for s in samples] if ok is None else ok:
            failed.append(failed[-1] + (not good))
        at = [s.point.started_at.timestamp() for s in samples]
        return cls(samples, at, failed, [s.point.ttft_ms or 0.0 for s in samples])

    def failures(self, lo: int, hi: int) -> int:
        """Failures among samples[lo:hi]."""
        return self.failed[hi] - self.failed[lo]

    def since(self, i: int, span_s: float) -> int:
        """The first index of the samples in the ``span_s`` up to sample i (its start excluded)."""
        return bisect_right(self.at, self.at[i] - span_s, 0, i + 1)


def outage(track: Track, i: int, t: Thresholds) -> Reading:
    """Opens at the judged sample that makes the last {outage_run} all failures, or makes more than
    {outage_share:.0%} of the judged samples in the {outage_window} up to it failures (at least {outage_min} of
    them); closes at the sample that ends {recover_run} successes in a row while neither holds."""
    run = t.outage_run if i + 1 >= t.outage_run and track.failures(i + 1 - t.outage_run, i + 1) == t.outage_run else 0
    lo = track.since(i, t.outage_window_s)
    n = i + 1 - lo
    if n >= t.outage_min and track.failures(lo, i + 1) > t.outage_share * n:
        return True, n  # the window's samples (the run's among them, if it holds too)
    if run:
        return True, run
    if i + 1 >= t.recover_run and track.failures(i + 1 - t.recover_run, i + 1) == 0:
        return False, t.recover_run
    return None, 0


def drop(track: Track, i: int, t: Thresholds) -> Reading:
    """Opens at the judged sample that takes the success rate of the last {drop_samples} under {drop_below:.0%},
    where the {baseline} before the first of them held at least {baseline_min} judged samples and at least
    {baseline_at_least:.0%} succeeded; closes at the sample that brings the last {drop_samples} back to
    {drop_below:.0%} or more."""
    n = t.drop_samples
    if i + 1 < n:
        return None, 0
    first = i + 1 - n
    if n - track.failures(first, i + 1) >= t.drop_below * n:
        return False, n
    lo = bisect_left(track.at, track.at[first] - t.baseline_s, 0, first)
    base = first - lo
    if base >= t.baseline_min and base - track.failures(lo, first) >= t.baseline_at_least * base:
        return True, n
    return None, 0


def slowdown(track: Track, i: int, t: Thresholds) -> Reading:
    """Opens at a workload's successful sample that takes the median TTFT of the workload's samples in the hour up
    to it (at least {slow_min}) over {slow_factor:g}x the median of its samples in the same hour of each of the
    {baseline} before (at least {slow_min}); closes at the sample that brings it back to {slow_factor:g}x or less."""
    lo = track.since(i, t.slow_window_s)
    if i + 1 - lo < t.slow_min:
        return None, 0
    base = []
    for k in range(1, int(t.baseline_s // DAY) + 1):
        end = track.at[i] - k * DAY
        hi = bisect_right(track.at, end, 0, lo)
        base += track.ttft[bisect_right(track.at, end - t.slow_window_s, 0, hi) : hi]
    if len(base) < t.slow_min:
        return None, 0
    now = statistics.median(track.ttft[lo : i + 1])
    return now > t.slow_factor * statistics.median(base), i + 1 - lo


def wrong(track: Track, i: int, t: Thresholds) -> Reading:
    """Opens at the canary verdict that takes the pass rate of the last {canary_samples} verdicts under
    {canary_below:.0%}; closes at the verdict that brings it back to {canary_below:.0%} or more."""
    n = t.canary_samples
    if i + 1 < n:
        return None, 0
    return n - track.failures(i + 1 - n, i + 1) < t.canary_below * n, n


def _judged(samples: Sequence[Placed]) -> list[Track]:
    """Every sample judged, as the success rate counts them: all but those tokenpace itself cancelled."""
    return [Track.of([s for s in samples if s.point.error_kind != ErrorKind.CANCELLED.value])]


def _timed(samples: Sequence[Placed]) -> list[Track]:
    """One track per workload: its samples a chart draws with a TTFT (successful, TTFT not client-bound)."""
    workloads = dict.fromkeys(s.point.workload for s in samples)
    return [
        Track.of([s for s in samples if s.point.workload == w and s.point.charted() and s.point.kept().ttft_ms])
        for w in workloads
    ]


def _verdicts(samples: Sequence[Placed]) -> list[Track]:
    """The canary's verdicts, each a success when the answer began with its line."""
    checked = [s for s in samples if s.point.canary_ok is not None]
    return [Track.of(checked, [bool(s.point.canary_ok) for s in checked])]


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    severity: str
    judge: Callable[[Track, int, Thresholds], Reading]
    tracks: Callable[[Sequence[Placed]], list[Track]]
    reads: str  # the samples it needs, in words
    per_workload: bool = False

    def text(self, t: Thresholds) -> str:
        """The rule as /methodology states it: its docstring with the thresholds filled in."""
        values = asdict(t) | {"outage_window": interval(t.outage_window_s), "baseline": interval(t.baseline_s)}
        return " ".join(str(self.judge.__doc__).split()).format(**values)


RULES = (
    Rule("outage", "critical", outage, _judged, "every judged sample of the endpoint from the region"),
    Rule("success-drop", "major", drop, _judged, "every judged sample of the endpoint from the region"),
    Rule("wrong-answers", "major", wrong, _verdicts, "every sample with a canary verdict"),
    Rule("slowdown", "minor", slowdown, _timed, "each workload's successful samples with a TTFT", True),
)


@dataclass(frozen=True, slots=True)
class Incident:
    """What one rule saw of one endpoint from one region, from the sample that opened it to the one that closed it
    (None: still open); ``opened_by`` is the samples its rule read then (the latest MAX_EVIDENCE)."""

    provider: str
    plan: str
    model: str
    region: str  # '' this server itself
    rule: str
    severity: str
    workload: str | None  # the slowdown rule's workload; None: every workload pooled
    opened_at: datetime
    closed_at: datetime | None
    opened_by: tuple[str, ...]
    closed_by: str | None

    @property
    def endpoint(self) -> str:
        return endpoint_name(self.provider, self.plan, self.model)


def walk(rule: Rule, track: Track, t: Thresholds) -> list[tuple[int, tuple[str, ...], int | None]]:
    """(index, ids read, closing index) of each incident a rule opens on a track, oldest first."""
    found: list[tuple[int, tuple[str, ...], int | None]] = []
    opened: tuple[int, tuple[str, ...]] | None = None
    for i in range(len(track.samples)):
        state, read = rule.judge(track, i, t)
        if opened is None and state:
            ids = tuple(s.id for s in track.samples[max(i + 1 - read, i + 1 - MAX_EVIDENCE) : i + 1])
            opened = (i, ids)
        elif opened is not None and state is False:
            found.append((*opened, i))
            opened = None
    return found if opened is None else [*found, (*opened, None)]


def of_endpoint(samples: Sequence[Placed], t: Thresholds) -> list[Incident]:
    """Every incident in one endpoint's samples from one region (oldest first, unpublished ones left out)."""
    samples = [s for s in samples if s.point.published]
    if not samples:
        return []
    first = samples[0]
    found = []
    for rule in RULES:
        for track in rule.tracks(samples):
            for i, ids, closed in walk(rule, track, t):
                at = track.samples[i].point
                end = None if closed is None else track.samples[closed]
                found.append(Incident(
                    first.provider, first.plan, first.model, first.region, rule.name, rule.severity,
                    at.workload if rule.per_workload else None, at.started_at,
                    None if end is None else end.point.started_at, ids, None if end is None else end.id,
                ))  # fmt: skip
    return sorted(found, key=lambda c: (c.opened_at, c.opened_by[-1], c.rule))


def derive(samples: Iterable[Placed], t: Thresholds) -> list[Incident]:
    """Every incident in samples of any endpoints and regions (each group in time order), oldest first."""
    groups: dict[tuple[str, str, str, str], list[Placed]] = {}
    for s in samples:
        groups.setdefault((s.provider, s.plan, s.model, s.region), []).append(s)
    found = [c for group in groups.values() for c in of_endpoint(group, t)]
    return sorted(found, key=lambda c: (c.opened_at, c.endpoint, c.region, c.rule))
