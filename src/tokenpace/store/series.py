"""Samples over time, as the charts of an endpoint's or a model's page draw them: one point per sample.

:func:`latest` reads the last samples of one endpoint and workload, as change detection (board/changes.py) needs.

A point carries where its sample came from (scheduled or one-shot, published or not) and which of its figures
are client-bound (measure/verdict.py), so a chart can draw only what the board counts (:meth:`SamplePoint.kept`)
while a list of recent samples shows everything, labelled.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tokenpace.config.endpoints import endpoint_name
from tokenpace.measure.bounds import within
from tokenpace.measure.catalogue import metric
from tokenpace.measure.verdict import ALL, NONE, Bound
from tokenpace.store.database import Store, epoch

# Each client-bound flag's figure, named as the catalogue names it in a sentence.
_BOUND_FIGURES = ((Bound.TTFT, "ttft_ms"), (Bound.SPEED, "output_speed"), (Bound.E2E, "e2e_ms"))
_BOUND_NAMES = tuple((bound, metric(key).noun) for bound, key in _BOUND_FIGURES)


@dataclass(frozen=True, slots=True)
class SamplePoint:
    """One sample as a chart shows it."""

    started_at: datetime
    workload: str
    ok: bool
    error_kind: str | None
    output_speed: float | None
    ttft_ms: float | None
    e2e_ms: float | None
    http_status: int | None = None
    error_message: str | None = None
    source: str = "scheduled"
    published: bool = True
    client_bound: Bound = NONE  # its figures flagged client-bound
    group_id: str | None = None  # requests released together (the parallel workload) share one
    output_tokens: int | None = None
    canary_ok: bool | None = None  # its answer began with the canary's line (None: none asked, or it failed)
    client_lag_ms: float | None = None  # how late its timestamps may be (None: not judged)
    copy_ratio: float | None = None  # the share of its answer's 8-grams found in its prompt (measure/copying.py)

    def charted(self, include_client_bound: bool = False) -> bool:
        """Whether a chart draws it: published, successful and (unless included) with a figure not client-bound."""
        return self.published and self.ok and (include_client_bound or self.client_bound & ALL != ALL)

    @property
    def bound_figures(self) -> str:
        """Its client-bound figures in words: "TTFT, output speed"."""
        return ", ".join(name for flag, name in _BOUND_NAMES if self.client_bound & flag)

    def kept(self, include_client_bound: bool = False) -> SamplePoint:
        """The point as a chart draws it: its client-bound figures None, unless included."""
        if include_client_bound or not self.client_bound:
            return self
        b = self.client_bound
        return dataclasses.replace(
            self,
            output_speed=None if b & Bound.SPEED else self.output_speed,
            ttft_ms=None if b & Bound.TTFT else self.ttft_ms,
            e2e_ms=None if b & Bound.E2E else self.e2e_ms,
        )


# A point's fields are the samples' columns of the same names: read by name, whatever their order.
_FIELDS = tuple(f.name for f in dataclasses.fields(SamplePoint))
_POINT = ", ".join(_FIELDS)
_NAMED = ("provider", "plan", *_FIELDS)  # a model's points, each with its endpoint
_FIGURES = ("output_speed", "ttft_ms", "e2e_ms")
log = logging.getLogger(__name__)


def _point(v: dict[str, Any]) -> SamplePoint | None:
    """A point from its columns by name (its fields'); None for a start no clock can show (a row from before
    migration 14: skipped, logged)."""
    if not within("started_at", v["started_at"]):
        log.warning("a sample started at %r, no real time: not drawn", v["started_at"])
        return None
    verdict = v["canary_ok"]
    v |= {"started_at": datetime.fromtimestamp(v["started_at"], UTC), "ok": bool(v["ok"])}
    v |= {"published": bool(v["published"]), "client_bound": Bound(v["client_bound"])}
    v["canary_ok"] = None if verdict is None else bool(verdict)
    for name in _FIGURES:  # a figure no measurement can produce (a row from before migration 14): no point
        if v[name] is not None and not within(name, v[name]):
            log.warning("sample at %s: %s %r is no measurement: not drawn", v["started_at"], name, v[name])
            v[name] = None
    return SamplePoint(**v)


def _points(rows: Iterable[Sequence[Any]]) -> list[SamplePoint]:
    return [p for r in rows if (p := _point(dict(zip(_FIELDS, r, strict=True)))) is not None]


def _narrowed(sql: str, params: list[Any], workload: str | None, region: str | None) -> tuple[str, list[Any]]:
    """The read of one workload and one region where given (None: every workload, every region pooled)."""
    for column, value in (("workload", workload), ("region", region)):
        if value is not None:
            sql, params = f"{sql} AND {column} = ?", [*params, value]
    return sql + " ORDER BY started_at, id", params


def series(
    store: Store, *, provider: str, plan: str, model: str, workload: str | None, since: datetime,
    region: str | None = None,
) -> list[SamplePoint]:  # fmt: skip
    """An endpoint's samples since a time (of one workload, or all; measured from one region, '' this process
    itself, or None every region), oldest first, unpublished ones included."""
    sql = f"SELECT {_POINT} FROM samples WHERE provider = ? AND plan = ? AND model = ? AND started_at >= ?"  # noqa: S608
    return _points(store.query(*_narrowed(sql, [provider, plan, model, epoch(since)], workload, region)))


def model_series(
    store: Store, *, model: str, workload: str | None, since: datetime, region: str | None = None
) -> list[tuple[str, SamplePoint]]:
    """A model's published samples on every endpoint since a time (of one region, or None every region), oldest
    first, each with its endpoint's name."""
    sql = f"SELECT provider, plan, {_POINT} FROM samples WHERE model = ? AND started_at >= ? AND published = 1"  # noqa: S608
    rows = store.query(*_narrowed(sql, [model, epoch(since)], workload, region))
    named = [dict(zip(_NAMED, r, strict=True)) for r in rows]
    points = [(endpoint_name(v.pop("provider"), v.pop("plan"), model), _point(v)) for v in named]
    return [(name, p) for name, p in points if p is not None]


def copy_ratios(store: Store, *, since: datetime, workload: str | None = None) -> list[tuple[Any, ...]]:
    """(provider, plan, model, workload, copy ratio) of every published successful sample with a copy ratio since
    a time (of one workload, or every one), every region pooled, oldest first."""
    sql = (
        "SELECT provider, plan, model, workload, copy_ratio FROM samples WHERE started_at >= ? AND published = 1"
        " AND ok = 1 AND copy_ratio IS NOT NULL"
    )
    return store.query(*_narrowed(sql, [epoch(since)], workload, None))


def latest(store: Store, *, provider: str, plan: str, model: str, workload: str, limit: int) -> list[SamplePoint]:
    """An endpoint's latest ``limit`` published samples of a workload, oldest first (what change detection reads)."""
    rows = store.query(  # walks the (provider, model, workload, started_at) index backwards
        f"SELECT {_POINT} FROM samples WHERE provider = ? AND model = ? AND workload = ? AND plan = ?"  # noqa: S608
        " AND published = 1 ORDER BY started_at DESC, id DESC LIMIT ?",
        (provider, model, workload, plan, limit),
    )
    return _points(reversed(rows))


def last_published(store: Store, provider: str, plan: str, model: str, workload: str) -> datetime | None:
    """When an endpoint's latest published sample of a workload started; None without one."""
    rows = store.query(  # one row off the end of the (provider, model, workload, started_at) index
        "SELECT started_at FROM samples WHERE provider = ? AND model = ? AND workload = ? AND plan = ?"
        " AND published = 1 ORDER BY started_at DESC LIMIT 1",
        (provider, model, workload, plan),
    )
    return datetime.fromtimestamp(rows[0][0], UTC) if rows else None  # the one column of the one row


@dataclass(frozen=True, slots=True)
class Placed:
    """A published sample with its id and where it was measured from: what the incident rules walk."""

    id: str  # the samples' own id
    provider: str
    plan: str
    model: str
    region: str  # '' the storing process itself
    point: SamplePoint


EndpointRegion = tuple[str, str, str, str]  # provider, plan, model, region: one endpoint seen from one region


def placed_series(
    store: Store, *, since: datetime, provider: str | None = None, place: EndpointRegion | None = None
) -> list[Placed]:
    """Every published sample since a time (of one provider, or one endpoint from one region, or every one), with
    its id and region, oldest first."""
    sql = f"SELECT id, provider, plan, model, region, {_POINT} FROM samples WHERE started_at >= ? AND published = 1"  # noqa: S608
    params: list[Any] = [epoch(since)]
    if provider is not None:
        sql, params = sql + " AND provider = ?", [*params, provider]
    if place is not None:
        sql, params = sql + " AND provider = ? AND plan = ? AND model = ? AND region = ?", [*params, *place]
    found = []
    for row in store.query(sql + " ORDER BY started_at, id", params):
        point = _point(dict(zip(_FIELDS, row[5:], strict=True)))
        if point is not None:
            found.append(Placed(str(row[0]), row[1], row[2], row[3], row[4], point))
    return found


def stored_between(store: Store, since: datetime, until: datetime) -> int:
    """How many samples (published or not) started from ``since`` to before ``until``: a walk along the started_at
    index that reads no sample, which tells an incremental reader that one arrived late."""
    rows = store.query(
        "SELECT COUNT(*) FROM samples WHERE started_at >= ? AND started_at < ?", (epoch(since), epoch(until))
    )
    return int(rows[0][0])


def published_between(store: Store, since: datetime, until: datetime) -> dict[EndpointRegion, int]:
    """How many published samples started from ``since`` to before ``until``, per endpoint and region."""
    rows = store.query(
        "SELECT provider, plan, model, region, COUNT(*) FROM samples WHERE started_at >= ? AND started_at < ?"
        " AND published = 1 GROUP BY provider, plan, model, region",
        (epoch(since), epoch(until)),
    )
    return {(r[0], r[1], r[2], r[3]): int(r[4]) for r in rows}
