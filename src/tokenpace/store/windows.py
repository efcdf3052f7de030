"""Rolling windows per endpoint x workload: exact figures from the hourly rollup and the raw edge hours.

A window (config/windows.py) is the span (now - seconds, now], longer for long-context workloads in some. Only
published samples are read: what the
service's schedule took, and one-shot runs published on purpose (``run --publish``), counted apart per row.
Figures come from successful *fresh* samples: not served (in part) from the provider's prompt cache (a cached
prompt's TTFT is not a fresh prompt's: counted and shown apart), not a cold start after the endpoint sat idle
(its TTFT is reported apart, so sparse cadences do not mix cold and warm), and not client-bound (the client's
own loop lagged while timing them, so their figures are the client's, not the endpoint's) unless asked to
include those. The correctness canary's verdicts are counted beside them (checked, passed); the success rate
is ok / (samples - cancelled), client-bound samples included by their outcome (the endpoint did answer them),
because a sample cancelled at shutdown says nothing of the endpoint. Availability excluding rate limits leaves
out rate-limited samples (HTTP 429) too: the provider refusing this client its quota is no failure of the endpoint.

The hours a window holds whole are read from the rollup (``rollup.py``: per endpoint hour, the counts and every
value), the two edge hours (the part of the first one inside the window, and the one holding now) from the raw
samples, and ``tally.py`` merges them in Python: every value sorted, then the very ``metrics.percentile`` and
mean of a run's summary (``stats.figure``), so percentiles are exact and the same on SQLite and PostgreSQL.
A 72 h window of 200 endpoints reads a few thousand rollup rows (whole days, 6-hour quarters and hours) and
the edge hours' samples instead of ranking ~70,000 samples. Measured by bench/aggregate.py.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from typing import Any

from tokenpace.config.endpoints import endpoint_name
from tokenpace.config.windows import EACH, RowKey, Window
from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.stats import Figure, Tail, availability, commonest, success_rate
from tokenpace.prompts import canary
from tokenpace.store.database import Store, epoch, utc
from tokenpace.store.rollup import METRICS as METRICS  # the leaderboard's figures (rollup.DERIVED's too)
from tokenpace.store.rollup import RAW, cover
from tokenpace.store.tally import HourRow, SampleRow, Tally, tally

NO_FIGURE = Figure(0)


@dataclass(frozen=True, slots=True)
class EndpointRow:
    """An endpoint's figures for one workload over one window."""

    provider: str
    plan: str
    model: str
    workload: str
    protocol: str
    simulated: bool
    samples: int  # every sample in the window, failed ones included
    failures: int  # samples with ok = 0, cancelled ones included
    success_rate: float | None  # ok / (samples - cancelled); None when nothing was judged
    output_speed: Figure
    ttft_ms: Figure
    e2e_ms: Figure
    first_at: datetime | None
    last_at: datetime | None
    window_s: int  # the span actually used (14 d for a long workload in the 72 h window)
    errors: tuple[tuple[str, int], ...]  # error kind -> count, most frequent first
    cancelled: int = 0  # failures of kind "cancelled", left out of the success rate
    client_bound: int = 0  # samples timed while the client's own loop lagged, whatever their outcome
    one_shot: int = 0  # samples from one-shot runs published with `run --publish`
    usable: int | None = None  # successful samples whose figures count (fresh: cached, cold, client-bound out)
    ttft_net_ms: Figure = NO_FIGURE  # TTFT less the network round trip, of samples that measured it
    region: str | None = None  # where measured from: '' the storing process itself; None every region pooled
    cached: int = 0  # samples the provider served (in part) from its prompt cache: left out of the figures
    cold: int = 0  # cold starts (taken after the endpoint sat idle): out of the figures, their TTFT apart
    cold_ttft_ms: Figure = NO_FIGURE  # the cold starts' TTFT (cached ones out, client-bound as the figures)
    canary_checked: int = 0  # samples whose correctness canary has a verdict
    canary_passed: int = 0
    rate_limited: int = 0  # failures of kind "rate_limited" (HTTP 429): left out of the availability
    e2e500_ms: Figure = NO_FIGURE  # end-to-end for 500 answer tokens, each with its own thinking time
    tails: tuple[tuple[str, Tail], ...] = ()  # (metric, its P10 or P90): tally.TAIL_QUANTILES, for routes at P90

    def tail(self, metric: str, q: float) -> Tail:
        """The metric's q-quantile and its interval (tally.TAIL_QUANTILES); one of no values where not computed."""
        return next((t for m, t in self.tails if m == metric and t.q == q), Tail(q))

    @property
    def canary_rate(self) -> float | None:
        """passed / checked of the correctness canary; None when no verdict is known."""
        return canary.pass_rate(self.canary_passed, self.canary_checked)

    @property
    def availability(self) -> float | None:
        """stats.availability: the success rate with rate-limited samples left out too."""
        return availability(self.ok, self.samples, self.cancelled, self.rate_limited)

    @property
    def name(self) -> str:
        return endpoint_name(self.provider, self.plan, self.model)

    @property
    def key(self) -> RowKey:
        """(provider, plan, model, workload): what prices, typical requests and changes are kept under."""
        return (self.provider, self.plan, self.model, self.workload)

    @property
    def ok(self) -> int:
        """Successful samples: what the success rate counts."""
        return self.samples - self.failures

    @property
    def counted(self) -> int:
        """Successful samples the figures come from: what min_samples counts."""
        return self.ok if self.usable is None else self.usable

    def figure(self, metric: str) -> Figure:
        """The Figure of a metric by column name (one of METRICS)."""
        figure: Figure = getattr(self, metric)
        return figure


def _spans(window: Window, long_workloads: Collection[str], workload: str | None) -> list[tuple[int, str, list[Any]]]:
    """(span, SQL condition, its parameters) per group of workloads sharing a span: one group unless the window
    has a long span and long workloads, and the read is not of one workload already."""
    longs = sorted(long_workloads) if window.long_seconds else []
    if not longs or workload is not None:
        return [(window.span(workload or "", long_workloads), "", [])]
    marks = ", ".join("?" * len(longs))
    long_span = window.span(longs[0], longs)
    return [
        (window.seconds, f" AND workload NOT IN ({marks})", longs),
        (long_span, f" AND workload IN ({marks})", longs),
    ]


Select = tuple[str, list[Any]]  # SQL and its parameters


def _selects(
    window: Window,
    now: float,
    long_workloads: Collection[str],
    columns: tuple[str, str],
    workload: str | None = None,
    where: Select = ("", []),
) -> tuple[list[Select], list[Select]]:
    """Per span: SELECTs of ``columns[0]`` from the rollup's whole days and hours inside (now - span, now], and
    SELECTs of ``columns[1]`` from the published samples of its two edges, each one indexed range of started_at.

    The edges are the part of the first hour after now - span and the hour holding now (which may hold samples
    after now): a sample is in exactly one of them or in a whole day or hour, as rollup.cover places it.
    """
    units, raws = [], []
    for span, condition, params in _spans(window, long_workloads, workload):
        ranges, edges = cover(now - span, now)
        for level, first, end in ranges:
            table, unit = level.table, level.unit
            sql = f"SELECT {columns[0]} FROM {table} WHERE {unit} >= ? AND {unit} < ?{condition}{where[0]}"  # noqa: S608
            units.append((sql, [first, end, *params, *where[1]]))
        for above, start, below, stop in edges:
            raw = f"SELECT {columns[1]} FROM samples WHERE published = 1"  # noqa: S608
            range_ = f" AND started_at {above} ? AND started_at {below} ?"
            raws.append((f"{raw}{range_}{condition}{where[0]}", [start, stop, *params, *where[1]]))
    return units, raws


def _union(selects: list[Select], union: str = "UNION ALL") -> Select:
    return f" {union} ".join(sql for sql, _ in selects), [p for _, params in selects for p in params]


def _region(region: str | None) -> Select:
    """The condition a region puts on a read: none for every region (pooled or one row each), else that one."""
    return ("", []) if region is None or region == EACH else (" AND region = ?", [region])


def present(
    store: Store, window: Window, now: datetime, long_workloads: Collection[str] = (), region: str | None = None
) -> list[tuple[str, ...]]:
    """The distinct (provider, plan, workload, region) with a sample in the window (of one region, unless None
    or EACH): what filter menus offer."""
    menu = "provider, plan, workload, region"
    hours, raws = _selects(window, epoch(now), long_workloads, (menu, menu), where=_region(region))
    sql, params = _union(hours + raws, "UNION")  # distinct, and ordered as the database orders text, as before
    return [tuple(r) for r in store.query(f"{sql} ORDER BY {menu}", params)]


def present_models(store: Store, window: Window, now: datetime, long_workloads: Collection[str] = ()) -> list[str]:
    """The distinct model ids with a sample in the window: the ids a model page gathers under one name."""
    hours, raws = _selects(window, epoch(now), long_workloads, ("model", "model"))
    sql, params = _union(hours + raws, "UNION")
    return sorted(model for (model,) in store.query(sql, params))


# A rollup row as it is, summed in Python (Tally.hours): grouping in SQL (SUM, string_agg) cost PostgreSQL a sort
# and an aggregate over multi-kilobyte texts, ~10 % of a 72 h board over 1M samples, to save a few hundred rows.
_ROLLUP_ROW = ", ".join(HourRow._fields)
_KEY = ("provider", "plan", "model", "workload", "region")  # a row's key, the region's only where asked for


def endpoint_rows(
    store: Store,
    window: Window,
    now: datetime,
    long_workloads: Collection[str] = (),
    *,
    workload: str | None = None,
    model: str | Collection[str] | None = None,
    provider: str | None = None,
    plan: str | None = None,
    include_client_bound: bool = False,
    region: str | None = None,
) -> list[EndpointRow]:
    """Every endpoint x workload with a sample in the window (only those matching the filters), sorted by key.

    ``include_client_bound``: figures also from successful samples timed while the client lagged. ``model``: one
    id, or several (the ids of one canonical model). ``region``: None pools every region's samples in one row
    (region None), '' reads the storing process's own, a name that region's, and EACH gives each region a row.
    """
    where: Select = _region(region)
    split = region == EACH
    if model is not None and not isinstance(model, str):
        ids = sorted(model) or [""]  # no id: no row
        where, model = (f" AND model IN ({', '.join('?' * len(ids))})", ids), None
    # A page shows one workload, model or endpoint: reading only its rows saves everyone else's.
    for column, value in (("workload", workload), ("model", model), ("provider", provider), ("plan", plan)):
        if value is not None:
            where = (f"{where[0]} AND {column} = ?", [*where[1], value])
    hours, raws = _selects(window, epoch(now), long_workloads, (_ROLLUP_ROW, RAW), workload, where)
    found: dict[tuple[str, ...], Tally] = {}
    # The key: the endpoint and workload, and the region when each has its own row (else None: the one asked
    # for, or every one pooled).
    names = _KEY[: 5 if split or region is not None else 4]
    key_of = attrgetter(*names)
    if hours:
        for h in map(HourRow._make, store.query(*_union(hours))):
            tally(found, key_of(h)).hours(h)
    for s in map(SampleRow._make, store.query(*_union(raws))):
        tally(found, key_of(s)).sample(s)
    rows = []
    for key, t in sorted(found.items()):
        named = dict(zip(names, key, strict=True))
        provider, plan, model, workload = named["provider"], named["plan"], named["model"], named["workload"]
        kinds = commonest(t.kinds)
        cancelled = t.kinds.get(ErrorKind.CANCELLED.value, 0)
        figures, tails = t.measured(include_client_bound)
        output_speed, ttft_ms, e2e_ms, ttft_net_ms, e2e500_ms = figures
        rows.append(
            EndpointRow(
                provider, plan, model, workload, t.protocol, bool(t.simulated),
                samples=t.samples, failures=t.samples - t.ok,
                success_rate=success_rate(t.ok, t.samples, cancelled),
                output_speed=output_speed, ttft_ms=ttft_ms, e2e_ms=e2e_ms,
                first_at=utc(t.first_at), last_at=utc(t.last_at),
                window_s=window.span(workload, long_workloads),
                errors=kinds, cancelled=cancelled,
                client_bound=t.bound, one_shot=t.one_shot, usable=t.usable(include_client_bound),
                ttft_net_ms=ttft_net_ms, region=named.get("region"),
                cached=t.cached, cold=t.cold, cold_ttft_ms=t.cold_ttft(include_client_bound),
                canary_checked=t.checked, canary_passed=t.passed,
                rate_limited=t.kinds.get(ErrorKind.RATE_LIMITED.value, 0), e2e500_ms=e2e500_ms, tails=tails,
            )
        )  # fmt: skip
    return rows
