"""The endpoint page's model: one endpoint, every workload (or the one chosen), over a window.

Charts and percentiles read what the board reads: published samples, client-bound ones only when asked. The
recent samples show more, each labelled: unpublished one-shot samples, client-bound ones, and every failure's
kind, HTTP status and the provider's message (scrubbed of known secrets). Beside them the hour-by-hour uptime,
each workload's bursts, its changes and its speed by hour of the week. Its header says where it stands on each
workload's board (:class:`Standing`: rank, success rate, failing and stale as the board marks them), so a
failing endpoint does not look healthy until the table. :meth:`EndpointPage.data` is the JSON
twin; the HTML page renders the same model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tokenpace.board import cost, heatmap, regions, uptime
from tokenpace.board.bursts import Bursts, bursts, grouped, point_member
from tokenpace.board.changes import Change, change_dict, series_changes
from tokenpace.board.copying import CopyMedian, point_medians
from tokenpace.board.coverage import Coverage, coverage
from tokenpace.board.leaderboard_page import ranked
from tokenpace.board.pageparts import PageRegion, PageSource, choose_region, costs, latest_first, rows_data, scrubbed
from tokenpace.board.ranking import Board, Entry
from tokenpace.board.rows import client_bound_only
from tokenpace.board.summary import bursts_dict
from tokenpace.config.endpoints import endpoint_name
from tokenpace.config.windows import Window
from tokenpace.prompts import canary
from tokenpace.store.series import SamplePoint, series
from tokenpace.store.windows import EndpointRow, endpoint_rows


@dataclass(frozen=True, slots=True)
class Standing:
    """Where the endpoint stands on one workload's board (the same window, region and client-bound choice):
    its entry there, with how many endpoints that board lists and whether its ranks are still provisional."""

    workload: str
    entry: Entry
    listed: int  # entries on that board
    provisional: bool
    min_samples: int

    def data(self) -> dict[str, Any]:
        e, r = self.entry, self.entry.row
        return {
            "workload": self.workload, "rank": e.rank, "tied": e.tied, "of": self.listed,
            "provisional": self.provisional and e.rank is not None, "too_few": e.too_few, "counted": r.counted,
            "min_samples": self.min_samples, "failing": e.failing, "stale": e.stale, "measured": e.measured,
            "success_rate": r.success_rate, "ok": r.ok, "judged": r.samples - r.cancelled,
            "availability": r.availability, "rate_limited": r.rate_limited,
        }  # fmt: skip


def standing(board: Board, row: EndpointRow) -> Standing | None:
    """The row's standing on a board of its workload; None where the board does not list it."""
    entry = next((e for e in board.entries if e.row.key == row.key), None)
    if entry is None:
        return None
    return Standing(row.workload, entry, len(board.entries), board.provisional, board.query.min_samples)


@dataclass(frozen=True, slots=True)
class EndpointPage:
    facts: dict[str, Any]  # who it is: provider, plan, model, name, protocol, price...
    window: Window
    include_client_bound: bool
    place: PageRegion
    workload: str | None  # the one chosen; None: every workload
    workloads: list[str]  # every workload it has rows of, in the schedule's order
    shown: list[EndpointRow]  # the rows of the workloads shown, in the schedule's order
    rows: list[dict[str, Any]]  # the same rows as the leaderboard's JSON writes them
    points: list[SamplePoint]  # every sample in the window, oldest first, unpublished ones included
    groups: dict[str, list[SamplePoint]]  # the charted ones per workload, in the schedule's order
    uptime: list[uptime.Hour]
    bursts: dict[str, Bursts]  # per workload that releases its requests together
    changes: list[Change]  # every change in the window's series, oldest first
    heat: heatmap.Heatmap | None
    heat_workload: str | None
    standings: list[Standing]  # per workload shown, its board's say
    cover: Coverage  # how much of the window the shown rows' samples span

    @property
    def recent(self) -> list[SamplePoint]:
        return [p for _, p in latest_first([(p.workload, p) for p in self.points])]

    @property
    def uncharted(self) -> int:
        """Successful samples, where every one was client-bound and left out (rows.client_bound_only)."""
        return client_bound_only(self.shown, self.include_client_bound)

    @property
    def canary(self) -> tuple[float | None, int, int]:
        """The canary's pass rate, passed and checked over the workloads shown (None: no verdict yet)."""
        passed, checked = sum(r.canary_passed for r in self.shown), sum(r.canary_checked for r in self.shown)
        return canary.pass_rate(passed, checked), passed, checked

    @property
    def copying(self) -> dict[str, CopyMedian]:
        """The median copy ratio per workload shown, over its published successful samples in the window."""
        found = point_medians(self.points)
        return {w: found[w] for w in self.workloads if w in found}

    def data(self) -> dict[str, Any]:
        """The page's JSON twin."""
        heat = self.heat and {
            "workload": self.heat_workload, "metric": "output_speed", "weeks": heatmap.WEEKS, "days": heatmap.WEEKDAYS,
            **dataclasses.asdict(self.heat),
        }  # fmt: skip
        return {
            "endpoint": self.facts, "window": self.window, "region": self.place.region, "rows": self.rows,
            "series": self.groups, "recent": self.recent, "uptime": self.uptime,
            "bursts": {w: bursts_dict(b) for w, b in self.bursts.items()},
            "changes": [change_dict(c) for c in self.changes], "hour_of_week": heat,
            "canary": dict(zip(("rate", "passed", "checked"), self.canary, strict=True)),
            "standing": [s.data() for s in self.standings], "client_bound_only": self.uncharted,
            "coverage": self.cover.data(), "copy_ratio": {w: m.data() for w, m in self.copying.items()},
        }  # fmt: skip


def _heat_workload(source: PageSource, chosen: str | None, present: Sequence[str]) -> str | None:
    """The workload a heatmap shows: the one chosen, else the board's usual one, else the first present."""
    if chosen:
        return chosen
    usual = source.default_workload
    return usual if usual in present else next(iter(source.ordered(present)), None)


def _workload_bursts(points: Sequence[SamplePoint], workloads: Sequence[str]) -> dict[str, Bursts]:
    found = {}
    for w in workloads:
        b = bursts(grouped(point_member(p) for p in points if p.published and p.workload == w))
        if b:
            found[w] = b
    return found


def read_endpoint_page(
    source: PageSource, provider: str, plan: str, model: str, window: Window, include: bool, params: Mapping[str, str]
) -> EndpointPage | None:
    """The page of one endpoint; None where it has no sample and is not configured."""
    now = source.now()
    place = choose_region(source, window, now, params)
    region = regions.store_filter(place.region)
    rows = endpoint_rows(
        source.store, window, now, source.long_workloads, model=model, provider=provider, plan=plan,
        include_client_bound=include, region=region,
    )  # fmt: skip
    configured = [e for e in source.config.endpoints if (e.provider, e.plan, e.model) == (provider, plan, model)]
    workload = params.get("workload") or None
    workloads = source.ordered(r.workload for r in rows)
    order = {w: i for i, w in enumerate(workloads)}
    shown = sorted((r for r in rows if workload in (None, r.workload)), key=lambda r: order[r.workload])
    span = max((window.span(r.workload, source.long_workloads) for r in shown), default=window.seconds)
    points = series(
        source.store, provider=provider, plan=plan, model=model, workload=workload,
        since=now - timedelta(seconds=span), region=region,
    )  # fmt: skip
    if not rows and not configured and not points:
        return None
    # With every workload shown, the since above is the longest span; trim each workload to its own.
    points = scrubbed(source, [p for p in points if _within(p, now, window, source)])
    groups: dict[str, list[SamplePoint]] = {w: [] for w in source.ordered({p.workload for p in points})}
    for p in points:
        if p.charted(include):
            groups[p.workload].append(p.kept(include))
    groups = {w: ps for w, ps in groups.items() if ps}
    heat_workload = _heat_workload(source, workload, [r.workload for r in rows])
    heat = None
    if heat_workload is not None:
        weeks = series(source.store, provider=provider, plan=plan, model=model, workload=heat_workload,
                       since=now - timedelta(weeks=heatmap.WEEKS), region=region)  # fmt: skip
        heat = heatmap.hour_of_week(
            (p.started_at, speed) for p in weeks if p.charted(include) and (speed := p.kept(include).output_speed)
        )
    facts = {
        "provider": provider,
        "plan": plan,
        "model": model,
        "name": endpoint_name(provider, plan, model),
        "simulated": any(r.simulated for r in rows) or any(e.simulated for e in configured),
        "protocol": rows[0].protocol if rows else configured[0].protocol,
        "canonical_model": source.config.models.canonical(model),
        "quantization": source.config.quantization.get((provider, model)),
        "price": cost.price_dict(source.config.price_of(provider, plan, model), now.date()),
    }
    return EndpointPage(
        facts, window, include, place, workload, workloads, shown,
        rows_data(source, shown, costs(source, shown, window, now), window, now), points, groups,
        uptime.hour_by_hour(points, now, span), _workload_bursts(points, list(groups)),
        series_changes(points, provider, plan, model), heat, heat_workload,
        _standings(source, shown, window, include, place), coverage(window, shown, now),
    )  # fmt: skip


def _standings(
    source: PageSource, shown: Sequence[EndpointRow], window: Window, include: bool, place: PageRegion
) -> list[Standing]:
    """Each shown row's standing on its workload's board, read as the board reads it (its rows are memoised)."""
    out = []
    for r in shown:
        asked = {"window": window.name, "workload": r.workload, "region": place.region}
        found = standing(ranked(source, asked | ({"client_bound": "include"} if include else {})), r)
        if found is not None:
            out.append(found)
    return out


def _within(p: SamplePoint, now: datetime, window: Window, source: PageSource) -> bool:
    return (now - p.started_at).total_seconds() <= window.span(p.workload, source.long_workloads)
