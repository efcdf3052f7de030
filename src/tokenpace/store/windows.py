"""Rolling windows per endpoint x workload, computed in SQL that SQLite and PostgreSQL both run unchanged.

A window is the span (now - seconds, now]; long-context workloads may use a longer span (Artificial Analysis
measures its 100k workload over 14 days instead of 72 hours). Only published samples are read: what the
service's schedule took, and one-shot runs published on purpose (``run --publish``), counted apart per row.
Figures come from successful samples that were not client-bound (the client's own loop lagged while timing
them, so their figures are the client's, not the endpoint's), unless asked to include those; the success rate
is ok / (samples - cancelled), client-bound samples included by their outcome (the endpoint did answer them),
because a sample cancelled at shutdown says nothing of the endpoint.

Percentiles use linear interpolation between closest ranks, exactly :func:`tokenpace.measure.metrics.percentile`:
with n values sorted ascending and pos = (n - 1) * q / 100, P_q = v[floor(pos)] + (v[ceil(pos)] - v[floor(pos)])
* (pos - floor(pos)). SQL numbers each endpoint's values with ROW_NUMBER() and counts them with COUNT() OVER the
same partition, picks v[floor(pos)] and v[ceil(pos)] with integer arithmetic (no FLOOR/CEIL: SQLite may lack
them), and Python does the interpolation with the very same expression, so both databases give identical
figures. One pass over the window's rows computes all three metrics. Measured by bench/aggregate.py.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from tokenpace.config.endpoints import Endpoint
from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.stats import QUANTILES, Figure, success_rate
from tokenpace.store.database import Store, epoch, utc

HOUR, DAY = 3600, 86400
METRICS = ("output_speed", "ttft_ms", "e2e_ms")  # the leaderboard's figures, columns of ``samples``
_KEY = "provider, plan, model, workload"


@dataclass(frozen=True, slots=True)
class Window:
    """A trailing span of time and the statistic that is its headline figure."""

    name: str
    seconds: int
    statistic: Literal["mean", "median"]
    label: str
    long_seconds: int | None = None  # the span for long-context workloads, when it differs

    def span(self, workload: str, long_workloads: Collection[str] = ()) -> int:
        """Seconds this window covers for a workload: long_seconds for a long one, if set, else seconds."""
        return self.long_seconds if self.long_seconds and workload in long_workloads else self.seconds


WINDOWS: dict[str, Window] = {
    w.name: w
    for w in (
        Window("24h", DAY, "mean", "24 h mean (TokenDyno)"),
        Window("72h", 72 * HOUR, "median", "72 h median (Artificial Analysis)", long_seconds=14 * DAY),
        Window("7d", 7 * DAY, "median", "7 d median"),
    )
}
DEFAULT_WINDOW = "72h"


def endpoint_name(provider: str, plan: str, model: str) -> str:
    """``provider/model`` or ``provider:plan/model``: the one naming rule, Endpoint.name's."""
    return Endpoint(provider, model, "", plan).name


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
    usable: int | None = None  # successful samples whose figures count (client-bound ones out); None: every ok

    @property
    def name(self) -> str:
        return endpoint_name(self.provider, self.plan, self.model)

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


TOTALS = (
    "COUNT(*)", "SUM(ok)", "MIN(started_at)", "MAX(started_at)", "MAX(protocol)", "MAX(simulated)",
    "SUM(client_bound)", "SUM(one_shot)", "SUM(used)",
)  # fmt: skip
USED = {False: "ok = 1 AND client_bound = 0", True: "ok = 1"}  # whose figures count, by include_client_bound


def _ranked_sql(used: str) -> str:
    """One pass over the window's rows: every metric ranked, every per-endpoint total, needed rows only.

    Figures are masked to NULL on failed samples, so failures count in the totals but not in the figures.
    NULLS LAST: SQLite sorts NULL first and PostgreSQL last; spelled out, values get ranks 0..n-1 on both.
    Only the rows at the ranks a percentile reads (floor and ceil of pos, integer arithmetic because SQLite
    may lack FLOOR/CEIL) and each endpoint's rank-0 row (which carries its totals) leave the database:
    no GROUP BY, whose sort would cost as much as a rank's.
    """
    masked = ", ".join(f"CASE WHEN {used} THEN {m} END AS {m}" for m in METRICS)
    origin = f"CASE WHEN source = 'one-shot' THEN 1 ELSE 0 END AS one_shot, CASE WHEN {used} THEN 1 ELSE 0 END AS used"
    inner = (
        f"SELECT {_KEY}, started_at, ok, protocol, simulated, client_bound, {origin}, {masked} "  # noqa: S608
        "FROM samples WHERE {where}"
    )
    per_metric = [
        f"{m}, ROW_NUMBER() OVER (p ORDER BY {m} NULLS LAST) - 1 AS {m}_r, COUNT({m}) OVER p AS {m}_n, "
        f"AVG({m}) OVER p AS {m}_mean"
        for m in METRICS
    ]
    totals = ", ".join(f"{t} OVER p" for t in TOTALS)
    ranked = (
        f"SELECT {_KEY}, {totals}, {', '.join(per_metric)} "  # noqa: S608
        f"FROM ({inner}) masked WINDOW p AS (PARTITION BY {_KEY})"
    )
    wanted = [f"{METRICS[0]}_r = 0"]
    for m in METRICS:
        ranks = [f"({m}_n - 1) * {q} / 100, (({m}_n - 1) * {q} + 99) / 100" for q in QUANTILES]
        wanted.append(f"{m}_r IN ({', '.join(ranks)})")
    return f"SELECT * FROM ({ranked}) ranked WHERE {' OR '.join(wanted)}"  # noqa: S608


_RANKED_SQL = {include: _ranked_sql(used) for include, used in USED.items()}
_ERRORS_SQL = (
    f"SELECT {_KEY}, error_kind, COUNT(*) FROM samples WHERE ok = 0 AND {{where}} "  # noqa: S608
    f"GROUP BY {_KEY}, error_kind"
)


def interpolate(n: int, q: float, values: Mapping[int, float]) -> float:
    """P_q = v[lo] + (v[hi] - v[lo]) * (pos - lo), pos = (n - 1) * q / 100, lo/hi = floor/ceil(pos).

    The very expression of metrics.percentile, over the ranks SQL picked out.
    """
    pos = (n - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


@dataclass
class _Partial:
    """What the ranked rows of one endpoint x workload say, gathered before it becomes an EndpointRow."""

    totals: tuple[Any, ...]
    counts: list[int]
    means: list[float | None]
    ranks: list[dict[int, float]]

    def figure(self, i: int) -> Figure:
        n = self.counts[i]
        if not n:
            return Figure(0)
        return Figure(n, self.means[i], *(interpolate(n, q, self.ranks[i]) for q in QUANTILES))


def _gather(rows: Iterable[Sequence[Any]]) -> dict[tuple[str, ...], _Partial]:
    found: dict[tuple[str, ...], _Partial] = {}
    for r in rows:
        key, totals, per_metric = tuple(r[:4]), tuple(r[4 : 4 + len(TOTALS)]), r[4 + len(TOTALS) :]
        part = found.get(key)
        if part is None:
            counts = [int(per_metric[4 * i + 2]) for i in range(len(METRICS))]
            means = [per_metric[4 * i + 3] for i in range(len(METRICS))]
            part = found[key] = _Partial(totals, counts, means, [{} for _ in METRICS])
        for i in range(len(METRICS)):
            value, rank = per_metric[4 * i], per_metric[4 * i + 1]
            if value is not None:
                part.ranks[i][int(rank)] = float(value)
    return found


def _where(window: Window, now: float, long_workloads: Collection[str]) -> tuple[str, list[Any]]:
    """Published samples in (now - span, now] per workload; started_at's index narrows to the longest span first."""
    longs = sorted(long_workloads) if window.long_seconds else []
    longest = max(window.seconds, window.long_seconds or 0) if longs else window.seconds
    where = "started_at > ? AND started_at <= ? AND published = 1"
    params: list[Any] = [now - longest, now]
    if longs and longest > window.seconds:
        where += f" AND (started_at > ? OR workload IN ({', '.join('?' * len(longs))}))"
        params += [now - window.seconds, *longs]
    return where, params


def present(store: Store, window: Window, now: datetime, long_workloads: Collection[str] = ()) -> list[tuple[str, ...]]:
    """The distinct (provider, plan, workload) with a sample in the window: what filter menus offer."""
    where, params = _where(window, epoch(now), long_workloads)
    sql = f"SELECT DISTINCT provider, plan, workload FROM samples WHERE {where} ORDER BY provider, plan, workload"  # noqa: S608
    return [tuple(r) for r in store.query(sql, params)]


def endpoint_rows(
    store: Store,
    window: Window,
    now: datetime,
    long_workloads: Collection[str] = (),
    *,
    workload: str | None = None,
    model: str | None = None,
    provider: str | None = None,
    plan: str | None = None,
    include_client_bound: bool = False,
) -> list[EndpointRow]:
    """Every endpoint x workload with a sample in the window (only those matching the filters), sorted by key.

    ``include_client_bound``: figures also from successful samples timed while the client lagged.
    """
    where, params = _where(window, epoch(now), long_workloads)
    # A page shows one workload, model or endpoint: ranking only its rows saves the sorts of all the others.
    for column, value in (("workload", workload), ("model", model), ("provider", provider), ("plan", plan)):
        if value is not None:
            where, params = f"{where} AND {column} = ?", [*params, value]
    found = _gather(store.query(_RANKED_SQL[include_client_bound].format(where=where), params))
    errors: dict[tuple[str, ...], list[tuple[str, int]]] = {}
    for r in store.query(_ERRORS_SQL.format(where=where), params):
        errors.setdefault(tuple(r[:4]), []).append((r[4] or "unknown", int(r[5])))
    rows = []
    for key, part in sorted(found.items()):
        samples, ok, first, last, protocol, simulated, bound, one_shot, usable = part.totals
        kinds = sorted(errors.get(key, ()), key=lambda e: (-e[1], e[0]))
        cancelled = dict(kinds).get(ErrorKind.CANCELLED.value, 0)
        provider, plan, model, workload = key
        rows.append(
            EndpointRow(
                provider, plan, model, workload, protocol, bool(simulated),
                samples=int(samples), failures=int(samples - ok),
                success_rate=success_rate(ok, samples, cancelled),
                output_speed=part.figure(0), ttft_ms=part.figure(1), e2e_ms=part.figure(2),
                first_at=utc(first), last_at=utc(last),
                window_s=window.span(workload, long_workloads),
                errors=tuple(kinds), cancelled=cancelled,
                client_bound=int(bound), one_shot=int(one_shot), usable=int(usable),
            )
        )  # fmt: skip
    return rows


@dataclass(frozen=True, slots=True)
class ModelRow:
    """A model on one workload: the median across its endpoints of each endpoint's headline figure."""

    model: str
    workload: str
    providers: int  # endpoints (provider x plan) that contributed
    samples: int  # their samples, summed
    output_speed: float | None
    ttft_ms: float | None
    e2e_ms: float | None
    success_rate: float | None
    simulated: bool = False  # any contributing endpoint is a simulator


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def model_rows(rows: Sequence[EndpointRow], statistic: str, *, min_samples: int = 1) -> list[ModelRow]:
    """Per (model, workload): median across endpoints of their headline figures, sorted by model, workload.

    Endpoints with fewer than ``min_samples`` counted samples are left out: too few to speak for a model.
    """
    by_model: dict[tuple[str, str], list[EndpointRow]] = {}
    for r in rows:
        if r.counted >= min_samples:
            by_model.setdefault((r.model, r.workload), []).append(r)
    return [_model_row(model, workload, group, statistic) for (model, workload), group in sorted(by_model.items())]


def _model_row(model: str, workload: str, group: Sequence[EndpointRow], statistic: str) -> ModelRow:
    def med(metric: str) -> float | None:
        return _median(r.figure(metric).headline(statistic) for r in group)

    return ModelRow(
        model, workload, len(group), sum(r.samples for r in group),
        med("output_speed"), med("ttft_ms"), med("e2e_ms"),
        _median(r.success_rate for r in group), any(r.simulated for r in group),
    )  # fmt: skip
