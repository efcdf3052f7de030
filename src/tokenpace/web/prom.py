"""``/metrics``: the leaderboard's figures as Prometheus gauges, computed when scraped, never cached.

A custom collector rather than gauges kept up to date: the store is the one source of truth, so a scrape runs
the same windowed query as the page (the default window: published samples, client-bound ones left out of the
figures and counted as their own outcome) and reports what it finds. Times are in seconds, as
Prometheus's conventions ask. Each app has its own registry, so two apps in one process never collide.
``tokenpace_change_detected`` is 1 per endpoint, workload and metric with a current change (board/changes.py),
for the alerting rules in docs/prometheus-alerts.yml. ``tokenpace_incident_open`` is 1 per incident open now
(board/incidents.py), by endpoint, region (``local``: this server), rule and severity.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from datetime import datetime

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from tokenpace.board import regions
from tokenpace.board.changes import Kept
from tokenpace.board.incidents import Incident
from tokenpace.board.numbers import printable
from tokenpace.config.settings import SPEND_NAMES
from tokenpace.config.windows import DEFAULT_WINDOW, WINDOWS
from tokenpace.measure.catalogue import metric
from tokenpace.measure.stats import QUANTILES, Figure
from tokenpace.schedule.pacing import window_text
from tokenpace.schedule.status import Status
from tokenpace.store.database import Store
from tokenpace.store.windows import EndpointRow, endpoint_rows
from tokenpace.web.memo import Memo

LABELS = ["provider", "plan", "model", "workload", "simulated"]
_STATISTICS = ("mean", *(f"p{q}" for q in QUANTILES))


def _labels(row: EndpointRow) -> list[str]:
    # Label values are written raw but for \\, " and newline: a control character would reach whoever
    # reads /metrics with curl, and a scraper's UI. Shown as the page shows it.
    return [printable(v) for v in (row.provider, row.plan, row.model, row.workload)] + [str(row.simulated).lower()]


def _figure(family: GaugeMetricFamily, row: EndpointRow, fig: Figure, scale: float) -> None:
    for stat in _STATISTICS:
        value = getattr(fig, stat)
        if value is not None:
            family.add_metric([*_labels(row), stat], value * scale)


class LeaderboardCollector(Collector):
    """Gauges per endpoint x workload over the default window, plus the sampler's budget skips."""

    def __init__(
        self,
        store: Store,
        now: Callable[[], datetime],
        status: Callable[[], Status] | None,
        long_workloads: Collection[str] = (),
        memo: Memo | None = None,
        changes: Kept | None = None,
        incidents: Callable[[], list[Incident]] | None = None,
    ) -> None:
        self._store, self._now, self._status, self._long = store, now, status, long_workloads
        self._incidents = incidents
        self._memo = memo or Memo(store)
        self._changes_kept = changes or Kept(store)

    def collect(self) -> Iterator[Metric]:
        window = WINDOWS[DEFAULT_WINDOW]
        now = self._now()
        rows = self._memo.get(("rows", window.name, None), lambda: endpoint_rows(self._store, window, now, self._long))
        where = f"over the default window ({window.label})"
        said = {key: f"{metric(key).label} {where}" for key in ("output_speed", "ttft_ms", "e2e_ms")}
        statistic = [*LABELS, "statistic"]
        speed = GaugeMetricFamily("tokenpace_output_speed_tokens_per_second", said["output_speed"], labels=statistic)
        ttft = GaugeMetricFamily("tokenpace_ttft_seconds", said["ttft_ms"], labels=statistic)
        e2e = GaugeMetricFamily("tokenpace_e2e_seconds", said["e2e_ms"], labels=statistic)
        success = GaugeMetricFamily("tokenpace_success_ratio", f"Successful / judged samples {where}", labels=LABELS)
        samples = GaugeMetricFamily("tokenpace_samples", f"Samples {where}, by outcome", labels=[*LABELS, "outcome"])
        age = GaugeMetricFamily("tokenpace_last_sample_age_seconds", "Seconds since the last sample", labels=LABELS)
        for row in rows:
            _figure(speed, row, row.output_speed, 1.0)
            _figure(ttft, row, row.ttft_ms, 1e-3)
            _figure(e2e, row, row.e2e_ms, 1e-3)
            if row.success_rate is not None:
                success.add_metric(_labels(row), row.success_rate)
            samples.add_metric([*_labels(row), "ok"], row.ok)
            samples.add_metric([*_labels(row), "failed"], row.failures)
            samples.add_metric([*_labels(row), "client_bound"], row.client_bound)  # of ok and failed, counted apart
            samples.add_metric([*_labels(row), "one_shot"], row.one_shot)
            if row.last_at is not None:
                age.add_metric(_labels(row), (now - row.last_at).total_seconds())
        yield from (speed, ttft, e2e, success, samples, age)
        yield self._changes(rows)
        if self._incidents is not None:
            yield self._open(self._incidents())
        yield from self._budgets()

    def _changes(self, rows: list[EndpointRow]) -> Metric:
        changed = GaugeMetricFamily(
            "tokenpace_change_detected",
            "1 while the metric's latest samples differ from the ones before them (a change point), by direction",
            labels=[*LABELS, "metric", "direction"],
        )
        found = [c for changes in self._changes_kept.recent(rows).values() for c in changes]
        simulated = {r.key: r.simulated for r in rows}
        for c in found:
            changed.add_metric(
                [*map(printable, (c.provider, c.plan, c.model, c.workload)), str(simulated.get(c.key, False)).lower(),
                 c.metric, c.direction], 1.0,
            )  # fmt: skip
        return changed

    @staticmethod
    def _open(found: list[Incident]) -> Metric:
        opened = GaugeMetricFamily(
            "tokenpace_incident_open",
            "1 while an incident is open: seen by tokenpace from the region (local: this server), by rule and severity",
            labels=["provider", "plan", "model", "region", "rule", "severity", "workload"],
        )
        for c in found:
            if c.closed_at is None:
                names = (c.provider, c.plan, c.model, regions.token(c.region), c.rule, c.severity, c.workload or "")
                opened.add_metric([printable(n) for n in names], 1.0)
        return opened

    def _budgets(self) -> Iterator[Metric]:
        if self._status is None:
            return
        skipped = CounterMetricFamily(
            "tokenpace_budget_skipped_runs",
            "Scheduled runs skipped to stay within a plan's budget",
            labels=["provider", "plan"],
        )
        labels = ["provider", "plan", "window", "resource"]
        used = GaugeMetricFamily("tokenpace_budget_used", "Use in each rolling window, by resource", labels=labels)
        limit = GaugeMetricFamily(
            "tokenpace_budget_limit",
            "What tokenpace may spend of a plan's budget or limit per rolling window (cap x share), by resource",
            labels=labels,
        )
        for b in self._status().budgets:
            plan = [printable(b.provider), printable(b.plan)]
            skipped.add_metric(plan, b.skipped)
            spent: dict[tuple[str, str], float] = {}
            caps: dict[tuple[str, str], float] = {}  # two budgets over one window: the tighter cap
            for budget, use in zip(b.budgets, b.used, strict=True):
                window = window_text(budget.window_s)
                for resource, cap in zip(SPEND_NAMES, budget.allowed(), strict=True):
                    if cap is not None or resource != "dollars":  # dollars only where they are capped
                        spent[window, resource] = getattr(use, resource)
                    if cap is not None:
                        caps[window, resource] = min(cap, caps.get((window, resource), cap))
            for key, n in spent.items():
                used.add_metric([*plan, *key], n)
            for key, cap in caps.items():
                limit.add_metric([*plan, *key], cap)
        yield from (skipped, used, limit)


def registry(collector: LeaderboardCollector) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(collector)
    return reg
