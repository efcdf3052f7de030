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
    """One series of samples in time order, with what the rules read of it precomputed. Its lists grow at their
    end and are cut back there as an incremental derivation walks on (board/tracking.py)."""

    samples: list[Placed]
    at: list[float]  # started_at, epoch seconds
    failed: list[int]  # failed[i]: failures among samples[:i]
    ttft: list[float]  # each sample's TTFT (0 where it has none)

    @classmethod
    def of(cls, samples: Sequence[Placed], ok: Sequence[bool] | None = None) -> Track:
        """The track of ``samples``, each a success where ``ok`` says (by default: where the sample is)."""
        track = cls([], [], [0], [])
        track.extend(samples, ok)
        return track

    def extend(self, samples: Sequence[Placed], ok: Sequence[bool] | None = None) -> None:
        """``samples`` added at the end (each later than every sample already there)."""
        for good in [s.point.ok for s in samples] if ok is None else ok:
            self.failed.append(self.failed[-1] + (not good))
        self.samples.extend(samples)
        self.at.extend(s.point.started_at.timestamp() for s in samples)
        self.ttft.extend(s.point.ttft_ms or 0.0 for s in samples)

    def cut(self, n: int) -> None:
        """Only the first ``n`` samples kept."""
        del self.samples[n:], self.at[n:], self.failed[n + 1 :], self.ttft[n:]

    def after(self, n: int) -> Track:
        """The track of the samples from the n-th on (what the rules read at them must lie there)."""
        base = self.failed[n]
        return Track(self.samples[n:], self.at[n:], [f - base for f in self.failed[n:]], self.ttft[n:])

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


def _judged(samples: Sequence[Placed]) -> Picks:
    """Every sample judged, as the success rate counts them: all but those tokenpace itself cancelled."""
    return {None: ([s for s in samples if s.point.error_kind != ErrorKind.CANCELLED.value], None)}


def _timed(samples: Sequence[Placed]) -> Picks:
    """One track per workload: its samples a chart draws with a TTFT (successful, TTFT not client-bound)."""
    picked: Picks = {}
    for s in samples:
        if s.point.charted() and s.point.kept().ttft_ms:
            picked.setdefault(s.point.workload, ([], None))[0].append(s)
    return picked


def _verdicts(samples: Sequence[Placed]) -> Picks:
    """The canary's verdicts, each a success when the answer began with its line."""
    checked = [s for s in samples if s.point.canary_ok is not None]
    return {None: (checked, [bool(s.point.canary_ok) for s in checked])}


# A rule's tracks of some samples, by workload (None: every workload), each its samples and, where a sample's own
# success is not what counts, each one's verdict.
Picks = dict[str | None, tuple[list[Placed], list[bool] | None]]


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    severity: str
    judge: Callable[[Track, int, Thresholds], Reading]
    tracks: Callable[[Sequence[Placed]], Picks]
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


def reach(t: Thresholds) -> tuple[int, float]:
    """How far back any rule reads from a sample: (samples, then seconds before the first of them). A walk resumed
    at sample i judges as one from the first sample on, if the track still holds the samples that far back of i."""
    count = max(t.outage_run, t.recover_run, t.drop_samples, t.canary_samples, MAX_EVIDENCE)
    return count, t.baseline_s + t.slow_window_s + t.outage_window_s


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


Opened = tuple[Placed, tuple[str, ...]]  # the sample that opened an incident, and the ids its rule read then


def walk(rule: Rule, track: Track, t: Thresholds, start: int = 0, stop: int | None = None,
         opened: Opened | None = None) -> tuple[list[Incident], Opened | None]:  # fmt: skip
    """The incidents a rule closes on track.samples[start:stop] (oldest first), resumed with the one ``opened``
    before ``start``; and the one left open there, if any."""
    closed: list[Incident] = []
    for i in range(start, len(track.samples) if stop is None else stop):
        state, read = rule.judge(track, i, t)
        if opened is None and state:
            opened = (
                track.samples[i],
                tuple(s.id for s in track.samples[max(i + 1 - read, i + 1 - MAX_EVIDENCE) : i + 1]),
            )
        elif opened is not None and state is False:
            closed.append(incident(rule, opened, track.samples[i]))
            opened = None
    return closed, opened


def incident(rule: Rule, opened: Opened, closed: Placed | None) -> Incident:
    """The incident a rule opened at a sample, closed at another (None: still open)."""
    at, ids = opened
    return Incident(
        at.provider, at.plan, at.model, at.region, rule.name, rule.severity,
        at.point.workload if rule.per_workload else None, at.point.started_at,
        None if closed is None else closed.point.started_at, ids, None if closed is None else closed.id,
    )  # fmt: skip


def in_order(found: Iterable[Incident]) -> list[Incident]:
    """Incidents oldest first, ties in one order whatever order they were found in."""
    return sorted(found, key=lambda c: (c.opened_at, c.endpoint, c.region, c.rule, c.workload or "", c.opened_by))


def time_order(samples: Iterable[Placed]) -> list[Placed]:
    """Samples in the order the rules walk them: by start, then by id (as the store reads them)."""
    return sorted(samples, key=lambda s: (s.point.started_at, s.id))


def of_endpoint(samples: Sequence[Placed], t: Thresholds) -> list[Incident]:
    """Every incident in one endpoint's samples from one region (oldest first, unpublished ones left out)."""
    samples = time_order(s for s in samples if s.point.published)
    found = []
    for rule in RULES:
        for picked, ok in rule.tracks(samples).values():
            closed, left = walk(rule, Track.of(picked, ok), t)
            found += [*closed, *([] if left is None else [incident(rule, left, None)])]
    return in_order(found)


def derive(samples: Iterable[Placed], t: Thresholds) -> list[Incident]:
    """Every incident in samples of any endpoints and regions (each group in time order), oldest first."""
    groups: dict[tuple[str, str, str, str], list[Placed]] = {}
    for s in samples:
        groups.setdefault((s.provider, s.plan, s.model, s.region), []).append(s)
    return in_order(c for group in groups.values() for c in of_endpoint(group, t))
