"""Regret of routing policies, published: how good a rule for picking an endpoint was, scored in hindsight.

A policy is a pure function of the candidates (a model's endpoints measured from one region) and of what was
measured before a time ``t`` (:class:`Past`, which shows nothing at or after ``t``): it names the endpoint to send
the next hour's requests to, or None when it has nothing to go on. For each whole UTC hour H of the span, each
policy picks at H's start; the hindsight best is the endpoint with the best median of the figure over H's own
samples; the hour's regret compares the chosen endpoint's median over H with the best's (:func:`regret`: 1 is the
best, 1.25 is 25 % worse). A policy's score is the mean of its hours' regrets with a 95 % interval over hours.

An hour counts only where some endpoint has a sample of the figure in it. Where the policy picked nothing (no
sample to go on) or picked an endpoint with no sample in that hour, the hour has no regret: it is left out of the
mean and counted apart (``no_pick``, ``unmeasured``), never scored as perfect or as worst.
Samples are those a chart draws (published, successful, the figure not client-bound): :func:`drawn_value`.
"""

from __future__ import annotations

import dataclasses
import statistics
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from tokenpace.config.endpoints import endpoint_name
from tokenpace.measure.catalogue import metric
from tokenpace.measure.stats import mean_interval
from tokenpace.store.rollup import HOUR
from tokenpace.store.series import Placed

SCORED = ("output_speed", "ttft_ms")  # the figures policies are scored on
POLICY_LOOKBACK_S = 72 * HOUR  # how far before an hour a policy may look: the feed's board window, the longest
REGRET_DAYS = 7  # the hours /routing scores: a week's, so a page costs 168 hours per model, region and figure


def drawn_value(s: Placed, key: str) -> float | None:
    """A sample's figure as a chart draws it: None unless published and successful, or where it is client-bound
    or no positive number (a ratio needs one)."""
    if not s.point.charted():
        return None
    v = getattr(s.point.kept(), key)
    return v if v is not None and v > 0 else None


def regret(chosen: float, best: float, higher_better: bool) -> float:
    """Regret = best / chosen where a higher figure is better (output speed: the chosen's time per token over the
    best's), chosen / best where lower is better (TTFT); 1 = the best, 1.25 = 25 % worse."""
    return best / chosen if higher_better else chosen / best


@dataclass(frozen=True, slots=True)
class Series:
    """One endpoint's values of one figure, in time order (``at``: epoch seconds)."""

    at: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)

    def between(self, lo: float, hi: float) -> list[float]:
        """The values measured in [lo, hi)."""
        end = bisect_left(self.at, hi)
        return self.values[bisect_left(self.at, lo, 0, end) : end]


@dataclass(frozen=True, slots=True)
class Past:
    """What a policy may read at ``t``: each candidate's values of the figure and its samples, in the
    POLICY_LOOKBACK_S before ``t``, never at or after it. The fields hold the whole span, shared by every hour:
    a policy reads them through :meth:`values` and :meth:`placed`, or cut at ``t`` itself (board/replay.py)."""

    key: str  # the figure scored (catalogue key)
    t: datetime
    series: Mapping[str, Series]
    samples: Sequence[Placed]  # every sample of the model from the region, in time order
    samples_at: Sequence[float]  # each one's start, epoch seconds

    def values(self, endpoint: str, span_s: float) -> list[float]:
        """The endpoint's values in the ``span_s`` before t (at most POLICY_LOOKBACK_S), in time order."""
        s, t = self.series.get(endpoint, Series()), self.t.timestamp()
        return s.between(t - min(span_s, POLICY_LOOKBACK_S), t)

    def placed(self) -> list[Placed]:
        """The model's samples from the region in the POLICY_LOOKBACK_S before t (every figure), oldest first."""
        t, at = self.t.timestamp(), self.samples_at
        end = bisect_left(at, t)
        return list(self.samples[bisect_left(at, t - POLICY_LOOKBACK_S, 0, end) : end])


Chooser = Callable[[Sequence[str], Past], str | None]


@dataclass(frozen=True, slots=True)
class Policy:
    """A named policy: ``text`` says how it picks, as /routing prints it."""

    name: str
    text: str
    pick: Chooser


@dataclass(frozen=True, slots=True)
class HourRegret:
    """One hour of one policy: what it chose, the hindsight best, and the regret (None: not scored, see why)."""

    start: datetime
    chosen: str | None  # None: the policy had nothing to go on
    best: str
    regret: float | None  # None: nothing chosen, or the chosen endpoint has no sample in the hour


@dataclass(frozen=True, slots=True)
class Score:
    """A policy's hours on one model from one region and one figure, summed up."""

    policy: str
    model: str
    region: str  # '' this server itself
    key: str
    hours: int  # hours with a regret: the mean's n
    mean: float | None
    lo: float | None  # 95 % interval of the mean, over hours
    hi: float | None
    best_share: float | None  # of those hours, the share where the policy chose the hindsight best
    no_pick: int  # hours the policy had nothing to go on
    unmeasured: int  # hours its choice had no sample in


def tracks(samples: Iterable[Placed], key: str) -> dict[str, Series]:
    """Each endpoint's values of a figure, in time order (the samples in time order)."""
    found: dict[str, Series] = {}
    for s in samples:
        v = drawn_value(s, key)
        if v is not None:
            series = found.setdefault(endpoint_name(s.provider, s.plan, s.model), Series())
            series.at.append(s.point.started_at.timestamp())
            series.values.append(v)
    return found


def whole_hours(start: datetime, end: datetime) -> list[datetime]:
    """The UTC hours that begin at or after ``start`` and end by ``end``, oldest first."""
    first = -(-int(start.timestamp()) // HOUR) * HOUR
    return [datetime.fromtimestamp(h, UTC) for h in range(first, int(end.timestamp()) - HOUR + 1, HOUR)]


@dataclass(frozen=True, slots=True)
class Hindsight:
    """One hour's medians of the figure per endpoint that has a sample in it, and the best of them."""

    start: datetime
    medians: Mapping[str, float]
    best: str


def hindsight(series: Mapping[str, Series], key: str, hours: Sequence[datetime]) -> list[Hindsight]:
    """Each hour where an endpoint has a sample of the figure: its medians and its best (ties: A to Z)."""
    higher = metric(key).higher_better
    found = []
    for h in hours:
        t = h.timestamp()
        medians = {e: statistics.median(v) for e, s in series.items() if (v := s.between(t, t + HOUR))}
        if medians:
            best = min(medians, key=lambda e: (-medians[e] if higher else medians[e], e))
            found.append(Hindsight(h, medians, best))
    return found


def score_hours(past: Past, policies: Sequence[Policy], seen: Sequence[Hindsight]) -> list[list[HourRegret]]:
    """Each policy's pick at each hour's start (from ``past`` as of then) against the hour's best median: a list
    of hours per policy. Every policy picks for one hour before the next (the feed's replay keeps that hour's rows)."""
    higher = metric(past.key).higher_better
    candidates = sorted(past.series)
    found: list[list[HourRegret]] = [[] for _ in policies]
    for h in seen:
        at = dataclasses.replace(past, t=h.start)
        for hours, policy in zip(found, policies, strict=True):
            chosen = policy.pick(candidates, at)
            got = None if chosen is None else h.medians.get(chosen)
            best = h.medians[h.best]
            hours.append(HourRegret(h.start, chosen, h.best, None if got is None else regret(got, best, higher)))
    return found


def summed(policy: str, model: str, region: str, key: str, hours: Sequence[HourRegret]) -> Score:
    """A policy's hours summed: mean regret over the hours that have one, with its 95 % interval
    (stats.mean_interval), the share of them where it chose the best, and the hours left out, counted."""
    scored = [h for h in hours if h.regret is not None]
    regrets = [h.regret for h in scored if h.regret is not None]
    mean = statistics.fmean(regrets) if regrets else None
    lo, hi = (None, None) if mean is None else mean_interval(regrets, mean)
    lo = None if lo is None else max(1.0, lo)  # no regret is under 1: the normal interval's tail is cut there
    share = sum(h.chosen == h.best for h in scored) / len(scored) if scored else None
    no_pick = sum(h.chosen is None for h in hours)
    return Score(
        policy, model, region, key, len(scored), mean, lo, hi, share, no_pick, len(hours) - len(scored) - no_pick
    )


def score(samples: Iterable[Placed], policies: Sequence[Policy], start: datetime, end: datetime) -> list[Score]:
    """Every policy's score on each model from each region and each of SCORED, over the whole hours from
    ``start`` to ``end``; the samples read from POLICY_LOOKBACK_S before ``start``. Model, region, figure, then policy
    in the order given."""
    groups: dict[tuple[str, str], list[Placed]] = {}
    for s in samples:
        groups.setdefault((s.model, s.region), []).append(s)
    hours = whole_hours(start, end)
    found = []
    for (model, region), group in sorted(groups.items()):
        group.sort(key=lambda s: s.point.started_at)
        for key in SCORED:
            series = tracks(group, key)
            seen = hindsight(series, key, hours)
            if not seen:
                continue  # no hour has a sample of the figure: nothing to score
            past = Past(key, start, series, group, [s.point.started_at.timestamp() for s in group])
            per_policy = score_hours(past, policies, seen)
            found += [summed(p.name, model, region, key, h) for p, h in zip(policies, per_policy, strict=True)]
    return found
