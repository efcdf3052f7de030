"""Changes in an endpoint's output speed, TTFT, success rate or canary pass rate, found in its samples
(board/changepoint.py).

Speed and TTFT are read from the samples a chart draws (published, successful, not client-bound); the success
rate from every published sample but those tokenpace itself cancelled, as the board's rate is; the canary pass
rate (prompts/canary.py) from every published sample with a verdict, by the same outcome test: a model swapped
or degraded behind the same name shows as a fall. Each workload is its own series: a 100k prompt is slower than
a 1k one, which is no change.

The board's badge is the endpoint's *current* change: the latest found in its last :data:`LOOKBACK` samples of the
workload, so it shows while the new level is recent and goes once fewer than MIN_BEFORE samples before it are
left in those 96 (76 samples after it: about 13 hours at the 10-minute cadence). The endpoint page lists every
change in its window (:func:`series_changes`).
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tokenpace.board.changepoint import Split, outcome_changes, timing_changes
from tokenpace.config.endpoints import endpoint_name
from tokenpace.config.windows import RowKey
from tokenpace.measure import catalogue
from tokenpace.measure.failures import ErrorKind
from tokenpace.store.database import Store
from tokenpace.store.series import SamplePoint, last_published, latest
from tokenpace.store.windows import EndpointRow

LOOKBACK = 96  # samples a current change is looked for in: 16 h at the 10-minute cadence
MAX_KEPT = 10_000  # rows whose changes Kept holds
CHANGE_METRICS = ("output_speed", "ttft_ms", "success_rate", "canary_pass_rate")  # rows of the catalogue
RATES = frozenset(m for m in CHANGE_METRICS if catalogue.metric(m).unit == "share")  # outcomes, 0 to 1: in percent
# How a change's line names each figure and writes its unit ("output speed 300 -> 150 tok/s").
CHANGE_LABELS = {m: catalogue.metric(m).noun for m in CHANGE_METRICS}
CHANGE_UNITS = {m: f" {catalogue.metric(m).unit_text}" for m in CHANGE_METRICS}


@dataclass(frozen=True, slots=True)
class Change:
    """A change in one metric of one endpoint and workload: ``at`` is the first changed sample's start,
    ``before``/``after`` the medians (success and canary pass rates: the rates, 0 to 1) on either side;
    ``direction`` is faster/slower for speed and TTFT (a higher TTFT is slower), better/worse for the rates."""

    metric: str
    provider: str
    plan: str
    model: str
    workload: str
    at: datetime
    before: float
    after: float
    direction: str

    @property
    def endpoint(self) -> str:
        return endpoint_name(self.provider, self.plan, self.model)

    @property
    def key(self) -> RowKey:
        return (self.provider, self.plan, self.model, self.workload)


def direction(metric: str, before: float, after: float) -> str:
    """faster/slower (speed up is faster, TTFT up is slower) or better/worse (a rate up is better)."""
    good = (after > before) == catalogue.metric(metric).higher_better
    if metric in RATES:
        return "better" if good else "worse"
    return "faster" if good else "slower"


def _changes(metric: str, points: Sequence[SamplePoint], splits: Sequence[Split], ids: RowKey) -> list[Change]:
    """One Change per split, dated by the first sample after it (``points`` are the ones the splits index)."""
    return [
        Change(metric, *ids, points[s.index].started_at, s.before, s.after, direction(metric, s.before, s.after))
        for s in splits
    ]


def workload_changes(
    points: Sequence[SamplePoint], provider: str, plan: str, model: str, workload: str
) -> list[Change]:
    """Every change in one workload's points (chronological), of every metric, oldest first."""
    ids = (provider, plan, model, workload)
    points = [p for p in points if p.workload == workload and p.published]
    found = []
    for metric in ("output_speed", "ttft_ms"):
        timed = [p for p in points if p.charted() and getattr(p.kept(), metric) is not None]
        found += _changes(metric, timed, timing_changes([getattr(p, metric) for p in timed]), ids)
    judged = [p for p in points if p.error_kind != ErrorKind.CANCELLED.value]
    found += _changes("success_rate", judged, outcome_changes([p.ok for p in judged]), ids)
    checked = [p for p in points if p.canary_ok is not None]
    found += _changes("canary_pass_rate", checked, outcome_changes([bool(p.canary_ok) for p in checked]), ids)
    return sorted(found, key=lambda c: (c.at, CHANGE_METRICS.index(c.metric)))


def series_changes(points: Sequence[SamplePoint], provider: str, plan: str, model: str) -> list[Change]:
    """Every change in an endpoint's points (any workloads, chronological), oldest first: the chart's markers."""
    workloads = dict.fromkeys(p.workload for p in points)
    found = [c for w in workloads for c in workload_changes(points, provider, plan, model, w)]
    return sorted(found, key=lambda c: (c.at, c.workload, CHANGE_METRICS.index(c.metric)))


def recent(points: Sequence[SamplePoint], provider: str, plan: str, model: str, workload: str) -> list[Change]:
    """Each metric's latest change in a workload's last :data:`LOOKBACK` points, oldest first (what alerts send)."""
    latest_of = {c.metric: c for c in workload_changes(points[-LOOKBACK:], provider, plan, model, workload)}
    return sorted(latest_of.values(), key=lambda c: (c.at, CHANGE_METRICS.index(c.metric)))


def current(points: Sequence[SamplePoint], provider: str, plan: str, model: str, workload: str) -> Change | None:
    """The latest change in a workload's last :data:`LOOKBACK` points, or None (the board's badge)."""
    found = recent(points, provider, plan, model, workload)
    return found[-1] if found else None


def read_recent(store: Store, keys: Collection[RowKey]) -> list[Change]:
    """:func:`recent` of each (provider, plan, model, workload), read from the store."""
    found = []
    for provider, plan, model, workload in keys:
        points = latest(store, provider=provider, plan=plan, model=model, workload=workload, limit=LOOKBACK)
        found += recent(points, provider, plan, model, workload)
    return found


def read_current(store: Store, keys: Collection[RowKey]) -> dict[RowKey, Change]:
    """The current change of each (provider, plan, model, workload) that has one, read from the store."""
    found: dict[RowKey, Change] = {}
    for change in read_recent(store, keys):  # oldest first: the latest of a key is written last
        found[change.key] = change
    return found


class Kept:
    """Each row's recent changes, kept per (provider, plan, model, workload) until its last sample moves.

    A row's changes depend on its last LOOKBACK samples only, which change when a sample arrives and so move its
    ``last_at``: a board re-reads the rows that took a sample since it was last drawn, not every row's 96 samples
    after every write (200 rows: ~130 ms on SQLite, most of it the reads). Shared by the threads drawing pages.
    """

    def __init__(self, store: Store, max_keys: int = MAX_KEPT) -> None:
        self._store, self._max = store, max_keys
        self._kept: dict[RowKey, tuple[datetime | None, list[Change]]] = {}
        self._lock = threading.Lock()

    def recent(self, rows: Sequence[EndpointRow]) -> dict[RowKey, list[Change]]:
        """:func:`recent` of each row, oldest first, read only for the rows whose last sample moved."""
        return self._recent([(r.key, r.last_at) for r in rows])

    def recent_of(self, keys: Collection[RowKey]) -> dict[RowKey, list[Change]]:
        """:func:`recent` of each key, its last sample's time read first (one indexed row each): what the alert
        watcher asks every minute, with no board rows at hand."""
        return self._recent([(k, last_published(self._store, *k)) for k in keys])

    def _recent(self, stamped: Sequence[tuple[RowKey, datetime | None]]) -> dict[RowKey, list[Change]]:
        with self._lock:
            kept = {key: self._kept.get(key) for key, _ in stamped}
        out, fresh = {}, {}
        for key, last_at in stamped:
            hit = kept[key]
            if hit is None or hit[0] != last_at:
                provider, plan, model, workload = key
                points = latest(self._store, provider=provider, plan=plan, model=model, workload=workload,
                                limit=LOOKBACK)  # fmt: skip
                hit = fresh[key] = (last_at, recent(points, *key))
            out[key] = hit[1]
        with self._lock:
            if len(self._kept) + len(fresh) > self._max:
                self._kept.clear()  # a store of more keys than this: start over rather than track use
            self._kept.update(fresh)
        return out

    def current(self, rows: Sequence[EndpointRow]) -> dict[RowKey, Change]:
        """The current change of each row that has one (the latest of its recent ones)."""
        return {key: found[-1] for key, found in self.recent(rows).items() if found}


def change_figure(metric: str, value: float) -> str:
    """A before/after value as the text says it: speed and TTFT whole, the rates in percent."""
    return f"{value * 100:.0f}" if metric in RATES else f"{value:.0f}"


def describe(c: Change) -> str:
    """One line, e.g. "output speed 300 -> 150 tok/s since 2026-12-03 12:03 UTC (slower)"."""
    since = c.at.strftime("%Y-%m-%d %H:%M UTC")
    values = f"{change_figure(c.metric, c.before)} -> {change_figure(c.metric, c.after)}{CHANGE_UNITS[c.metric]}"
    return f"{CHANGE_LABELS[c.metric]} {values} since {since} ({c.direction})"


def change_dict(c: Change | None) -> dict[str, Any] | None:
    """A change as JSON-able data; ``text`` is :func:`describe`'s line."""
    if c is None:
        return None
    return {
        "metric": c.metric, "endpoint": c.endpoint, "provider": c.provider, "plan": c.plan, "model": c.model,
        "workload": c.workload, "at": c.at.isoformat(), "before": c.before, "after": c.after,
        "direction": c.direction, "text": describe(c),
    }  # fmt: skip
