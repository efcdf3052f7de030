"""Incidents kept up to date a refresh at a time, instead of derived again from every sample of the span each time.

Deriving 97 days of incidents walks every sample of them (about 55 us each: 15 s of CPU for 300k samples), and
pages and /metrics asked for it once a minute. An :class:`IncidentLog` derives them once, then at each refresh
reads only the samples started since its *horizon* and walks each rule on from its state there, so a refresh costs
what the new samples cost (bench/incidents.py). The incidents are the same as a derivation from every sample
(tests/board/test_tracking.py), because:

- a rule's verdict at a sample reads a bounded look-back (incidents.reach): the outage rule the last few samples
  and the 15 minutes before, success-drop the last 100 and the 7-day baseline before the first of them,
  wrong-answers the last 20 verdicts, slowdown the hour and the same hour of the 7 days before. A track keeps
  that much behind its horizon, and drops what is older;
- an incident closed before the horizon cannot change (its samples, and all they looked back on, are older), and
  the one open there is kept with the sample that opened it;
- the horizon trails the clock by RESUME_MARGIN_S: a sample is stored when it ends, after later ones began (a
  10k request outlasts a 1k one), so the last hour is walked again at every refresh, from the state at the
  horizon, and only then for good;
- a sample stored later still, started before the horizon (an agent's writes held while its database was away,
  a rescue file loaded), is seen by counting the samples before the horizon (an index walk that reads no row):
  when that count moved, each endpoint and region whose published count moved is derived again from the start,
  and the others walk on;
- the read starts on a UTC week boundary (:func:`read_start`), so a derivation from scratch at the same moment
  starts at the same sample; when the week turns, the log derives everything again, once a week.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from tokenpace.board.incidents import RULES, Incident, Opened, Picks, Track, in_order, incident, reach, walk
from tokenpace.config.incidents import Thresholds
from tokenpace.measure.failures import ErrorKind
from tokenpace.store.database import Store
from tokenpace.store.series import EndpointRegion, Placed, placed_series, published_between, stored_between

RESUME_MARGIN_S = 3600.0  # samples started this recently are walked again at each refresh: they may still arrive
WEEK = timedelta(days=7)
CANCELLED = ErrorKind.CANCELLED.value
TRIM_AT = 4096  # samples a track holds beyond what its rules read before it drops them
SLACK = timedelta(milliseconds=1)  # a stored start read back as a datetime moves by under 1 us
Days = dict[EndpointRegion, Counter[date]]  # published samples (or failures) a UTC day, per endpoint and region


def read_start(now: datetime, days: int, t: Thresholds) -> datetime:
    """Where a derivation of the incidents open in the ``days`` up to ``now`` starts reading: the span's start less
    the longest baseline and a day, back to the Thursday 00:00 UTC before (weeks counted from the epoch)."""
    first = now - timedelta(days=days + 1, seconds=t.baseline_s)
    weeks = (first - datetime(1970, 1, 1, tzinfo=UTC)) // WEEK
    return datetime(1970, 1, 1, tzinfo=UTC) + weeks * WEEK


@dataclass(frozen=True, slots=True)
class Derived:
    """The incidents open at any time in a span (oldest first), and the published samples a day read with them."""

    found: list[Incident]
    days: Days
    failed: Days  # of those, the failures (tokenpace's own cancellations are none): a day's bar shows its share


class _Place:
    """One endpoint from one region: each track's samples as far back as its rules read, each rule's walk up to
    the horizon, and its published samples before the horizon (a day, and in all)."""

    def __init__(self, t: Thresholds) -> None:
        self._t = t
        self._tracks: dict[tuple[Callable[[Sequence[Placed]], Picks], str | None], Track] = {}
        self._done: dict[tuple[Callable[[Sequence[Placed]], Picks], str | None], int] = {}  # samples before it
        self._open: dict[tuple[str, str | None], Opened | None] = {}  # each rule's incident open at the horizon
        self.closed: list[Incident] = []  # closed before the horizon
        self.days: Counter[date] = Counter()
        self.failed: Counter[date] = Counter()
        self.count = 0

    def advance(
        self, samples: Sequence[Placed], horizon: datetime
    ) -> tuple[list[Incident], Counter[date], Counter[date]]:
        """Walk on over ``samples`` (all started since the last horizon, in time order), for good up to ``horizon``:
        every incident found so far, and the published samples and failures a day."""
        cut = horizon.timestamp()
        for key, track in self._tracks.items():
            track.cut(self._done[key])  # the samples after the last horizon: read again now
        for kind in dict.fromkeys(rule.tracks for rule in RULES):
            for workload, (picked, ok) in kind(samples).items():
                self._tracks.setdefault((kind, workload), Track.of([])).extend(picked, ok)
                self._done.setdefault((kind, workload), 0)
        stops = {key: bisect_left(track.at, cut, self._done[key]) for key, track in self._tracks.items()}
        found: list[Incident] = list(self.closed)
        for rule in RULES:
            for (kind, workload), track in self._tracks.items():
                if kind is not rule.tracks:
                    continue
                start, stop = self._done[kind, workload], stops[kind, workload]
                closed, left = walk(rule, track, self._t, start, stop, self._open.get((rule.name, workload)))
                self.closed += closed
                self._open[rule.name, workload] = left
                later, still = walk(rule, track, self._t, stop, None, left)
                found += [*closed, *later, *([] if still is None else [incident(rule, still, None)])]
        self._done = stops
        self._trim()
        later_days: Counter[date] = Counter()
        later_failed: Counter[date] = Counter()
        for s in samples:
            day = s.point.started_at.astimezone(UTC).date()
            bad = not s.point.ok and s.point.error_kind != CANCELLED
            if s.point.started_at < horizon:
                self.count += 1
                self.days[day] += 1
                self.failed[day] += bad
            else:
                later_days[day] += 1
                later_failed[day] += bad
        return found, self.days + later_days, self.failed + later_failed

    def _trim(self) -> None:
        """Each track without the samples no rule reads any more: those before what its rules read at the horizon."""
        count, span = reach(self._t)
        for key, track in self._tracks.items():
            first = max(0, self._done[key] - count)
            if first > TRIM_AT:
                drop = bisect_left(track.at, track.at[first] - span - 1.0, 0, first)
                if drop > TRIM_AT:
                    self._tracks[key] = track.after(drop)
                    self._done[key] -= drop


class IncidentLog:
    """The incidents open in the ``days`` up to each :meth:`refresh`'s ``now``, kept up to date (module docstring).
    Safe to share between threads: one refresh at a time."""

    def __init__(self, store: Store, t: Thresholds, days: int) -> None:
        self._store, self._t, self._days = store, t, days
        self._lock = threading.Lock()
        self._start: datetime | None = None  # where the read starts
        self._horizon = datetime.min.replace(tzinfo=UTC)  # samples started before it are walked for good
        self._places: dict[EndpointRegion, _Place] = {}
        self._stored = 0  # samples (published or not) from the start to the horizon, when it was set
        self.read = 0  # samples read so far: what the refreshes cost
        self.rederived = 0  # places derived again for a sample stored late

    def refresh(self, now: datetime) -> Derived:
        """The incidents open at any time in the ``days`` up to ``now``, from every sample stored by now."""
        with self._lock:
            start = read_start(now, self._days, self._t)
            if start != self._start:  # the first refresh, or a new week: everything from the start
                self._start, self._horizon, self._places, self._stored = start, start, {}, 0
            horizon = max(self._horizon, now - timedelta(seconds=RESUME_MARGIN_S))
            # Counted before the samples are read: one stored between the two is read now, and makes the next
            # count differ, which costs a check, never a sample.
            stored = stored_between(self._store, start, self._horizon)
            coming = stored_between(self._store, self._horizon, horizon)
            if stored != self._stored:
                self._mend(start)
            since = [
                s
                for s in placed_series(self._store, since=self._horizon - SLACK)
                if s.point.started_at >= self._horizon
            ]
            self.read += len(since)
            grouped: dict[EndpointRegion, list[Placed]] = {place: [] for place in self._places}
            for s in since:
                grouped.setdefault((s.provider, s.plan, s.model, s.region), []).append(s)
            found: list[Incident] = []
            days: Days = {}
            failed: Days = {}
            for place, samples in grouped.items():
                kept, days[place], failed[place] = self._places.setdefault(place, _Place(self._t)).advance(
                    samples, horizon
                )
                found += kept
            self._horizon, self._stored = horizon, stored + coming
            first = now - timedelta(days=self._days)
            spanned = in_order(c for c in found if (c.closed_at or now) >= first and c.opened_at <= now)
            return Derived(spanned, days, failed)

    def _mend(self, start: datetime) -> None:
        """Each place whose published samples before the horizon are not the ones walked, derived again."""
        counts = published_between(self._store, start, self._horizon)
        for place in counts.keys() | self._places.keys():
            if counts.get(place, 0) != (self._places[place].count if place in self._places else 0):
                self.rederived += 1
                again = _Place(self._t)
                read = [
                    s
                    for s in placed_series(self._store, since=start, place=place)
                    if s.point.started_at < self._horizon
                ]
                self.read += len(read)
                again.advance(read, self._horizon)
                self._places[place] = again
