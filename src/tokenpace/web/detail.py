"""The endpoint page and the model page: charts over a window, percentiles and recent samples.

Charts and percentiles read what the board reads: published samples, client-bound ones only when asked
(``client_bound=include``). The list of recent samples shows more, each labelled: an endpoint's unpublished
one-shot samples, client-bound ones, and every failure's kind, HTTP status and the provider's message (scrubbed
of known secrets; the template escapes it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from starlette.exceptions import HTTPException

from tokenpace.board import cost, heatmap, regions, uptime
from tokenpace.board.bursts import bursts, grouped, point_member
from tokenpace.board.changes import change_dict, describe, series_changes
from tokenpace.board.grid import grid_dict, region_grid
from tokenpace.board.rows import row_dict
from tokenpace.board.summary import bursts_dict
from tokenpace.store.database import epoch
from tokenpace.store.series import Point, model_series, series
from tokenpace.store.usage import typical
from tokenpace.store.windows import (
    EACH,
    EndpointRow,
    Window,
    endpoint_name,
    endpoint_rows,
    model_rows,
    present,
    present_models,
)
from tokenpace.web import charts
from tokenpace.web.paths import endpoint_path, model_path
from tokenpace.web.render import Page
from tokenpace.web.site import Site, client_bound_param, window_menu, window_param

RECENT = 20  # samples listed under the charts: enough to see a pattern, short enough to scan


def _workload_menu(workloads: Sequence[str], selected: str, blank: str | None) -> dict[str, object]:
    options = ([("", blank)] if blank else []) + [(w, w) for w in workloads]
    return {"name": "workload", "label": "Workload", "selected": selected, "options": options}


def _recent(points: Sequence[tuple[str, Point]]) -> list[tuple[str, Point]]:
    return list(reversed(points[-RECENT:]))


def _scrubbed(site: Site, points: Sequence[Point]) -> list[Point]:
    return [dataclasses.replace(p, error_message=site.scrub(p.error_message)) if p.error_message else p for p in points]


def _costs(site: Site, rows: Sequence[EndpointRow], window: Window, now: datetime) -> list[cost.RowCost]:
    """Each row's price and cost per request, its typical request read over its own workload's span."""
    out = []
    for r in rows:
        since = epoch(now) - window.span(r.workload, site.long_workloads)
        tokens = typical(site.store, [r.key], since, epoch(now)).get(r.key)
        out.append(cost.row_cost(site.config, r, tokens, now.date()))
    return out


def _rows_data(
    site: Site, rows: Sequence[EndpointRow], costs: Sequence[cost.RowCost], window: Window, now: datetime
) -> list[dict[str, Any]]:
    """The rows as the leaderboard's JSON writes them: figures, price and cost, current change."""
    current = site.changes.current(rows)
    return [
        row_dict(r, window.statistic) | cost.cost_dict(c, now.date()) | {"change": change_dict(current.get(r.key))}
        for r, c in zip(rows, costs, strict=True)
    ]


def _region(
    site: Site, window: Window, now: datetime, params: Mapping[str, str]
) -> tuple[str, list[dict[str, object]]]:
    """The page's region (board/regions.one: ``all`` unless asked) and its menu, none where no agent ever measured
    and none is declared (the board shows none there either)."""
    here = sorted({x[3] for x in present(site.store, window, now, site.long_workloads)})
    region = regions.one(params.get("region"), here, site.config)
    wanted = regions.wanted(here, site.config) or region != regions.ALL
    return region, [regions.menu(region, here, site.config, each=False)] if wanted else []


def _heat_workload(site: Site, chosen: str | None, present: Sequence[str]) -> str | None:
    """The workload a heatmap shows: the one chosen, else the board's usual one, else the first present."""
    if chosen:
        return chosen
    return site.default_workload if site.default_workload in present else next(iter(site.ordered(present)), None)


def endpoint_page(site: Site, provider: str, plan: str, model: str, params: Mapping[str, str]) -> Page:
    """One endpoint, every workload (or the one chosen): figures per workload and its samples over time."""
    window, include = window_param(params), client_bound_param(params)
    now = site.now()
    region, where = _region(site, window, now, params)
    rows = endpoint_rows(
        site.store, window, now, site.long_workloads, model=model, provider=provider, plan=plan,
        include_client_bound=include, region=regions.read(region),
    )  # fmt: skip
    configured = [e for e in site.config.endpoints if (e.provider, e.plan, e.model) == (provider, plan, model)]
    workload = params.get("workload") or None
    order = {w: i for i, w in enumerate(site.ordered(r.workload for r in rows))}
    shown = sorted((r for r in rows if workload in (None, r.workload)), key=lambda r: order[r.workload])
    span = max((window.span(r.workload, site.long_workloads) for r in shown), default=window.seconds)
    points = series(
        site.store, provider=provider, plan=plan, model=model, workload=workload, since=now - timedelta(seconds=span),
        region=regions.read(region),
    )  # fmt: skip
    if not rows and not configured and not points:
        raise HTTPException(404, f"no endpoint {endpoint_name(provider, plan, model)} has samples or is configured")
    # With every workload shown, the since above is the longest span; trim each workload to its own.
    points = [p for p in points if (now - p.started_at).total_seconds() <= window.span(p.workload, site.long_workloads)]
    points = _scrubbed(site, points)
    hours = uptime.hourly(points, now, span)
    groups: dict[str, list[Point]] = {w: [] for w in site.ordered({p.workload for p in points})}  # schedule's order
    for p in points:
        if p.charted(include):
            groups[p.workload].append(p)
    groups = {w: ps for w, ps in groups.items() if ps}
    found = {
        w: b
        for w in groups
        if (b := bursts(grouped(point_member(p) for p in points if p.published and p.workload == w)))
    }
    heat_workload = _heat_workload(site, workload, [r.workload for r in rows])
    heat = None
    if heat_workload is not None:
        weeks = series(site.store, provider=provider, plan=plan, model=model, workload=heat_workload,
                       since=now - timedelta(weeks=heatmap.WEEKS), region=regions.read(region))  # fmt: skip
        heat = heatmap.hour_of_week(
            (p.started_at, p.output_speed) for p in weeks if p.charted(include) and p.output_speed
        )
    simulated = any(r.simulated for r in rows) or any(e.simulated for e in configured)
    protocol = rows[0].protocol if rows else configured[0].protocol
    name = endpoint_name(provider, plan, model)
    query = urlencode({k: v for k, v in (("window", window.name), ("workload", workload), ("region", region)) if v})
    facts = {
        "provider": provider,
        "plan": plan,
        "model": model,
        "name": name,
        "simulated": simulated,
        "protocol": protocol,
        "canonical_model": site.config.models.canonical(model),
        "quantization": site.config.quantization.get((provider, model)),
        "price": cost.price_dict(site.config.price_of(provider, plan, model), now.date()),
    }
    # Every change in the window's series, oldest first: listed, and for the charts to mark (board/changes.py).
    found_changes = series_changes(points, provider, plan, model)
    changed = [change_dict(c) for c in found_changes]
    markers: dict[str, list[charts.Marker]] = {}
    for c in found_changes:  # drawn where the new level starts, on the metric's own chart
        markers.setdefault(c.metric, []).append(charts.Marker(c.at, c.after, f"{c.workload}: {describe(c)}"))
    context = {
        **facts,
        "changes": changed,
        "window": window,
        "provider_url": "/?" + urlencode({"provider": provider}),
        "menus": [
            window_menu(window),
            *where,
            _workload_menu(site.ordered(r.workload for r in rows), workload or "", "all"),
        ],
        "region_caption": regions.caption(region, site.config) if where else "",
        "stats_rows": [(r.workload, None, False, r) for r in shown],
        "charts": charts.sample_charts(groups, markers),
        "recent": _recent([(p.workload, p) for p in points]),
        "recent_label": "Workload",
        "open_recent": not shown,  # nothing published to chart: the recent samples are all there is
        "include_client_bound": include,
        "uptime": hours,
        "bursts": found,
        "heat": heat,
        "heat_workload": heat_workload,
        "days": heatmap.DAYS,
        "weeks": heatmap.WEEKS,
    }
    recent = [p for _, p in _recent([(p.workload, p) for p in points])]
    # the leaderboard JSON's shape of a row
    rows_data = _rows_data(site, shown, _costs(site, shown, window, now), window, now)
    data = {"endpoint": facts, "window": window, "region": region, "rows": rows_data, "series": groups,
            "recent": recent, "uptime": hours, "bursts": {w: bursts_dict(b) for w, b in found.items()},
            "changes": changed,
            "hour_of_week": heat and {"workload": heat_workload, "metric": "output_speed", "weeks": heatmap.WEEKS,
                                      "days": heatmap.DAYS, **dataclasses.asdict(heat)}}  # fmt: skip
    json_url = endpoint_path(provider, plan, model, "json") + (f"?{query}" if query else "")
    return Page("endpoint.html", context, data, json_url=json_url)


def model_page(site: Site, asked: str, params: Mapping[str, str]) -> Page:
    """A model on every endpoint that serves it, one workload at a time: every provider's id of the same
    weights (config.models), so ``/model/llama-3.1-8b-instant`` shows the page of ``llama-3.1-8b``."""
    window, include = window_param(params), client_bound_param(params)
    now, models = site.now(), site.config.models
    region, where = _region(site, window, now, params)
    model = models.canonical(asked)
    seen = present_models(site.store, window, now, site.long_workloads)
    ids = models.ids(model, [*seen, *(e.model for e in site.config.endpoints)])
    rows = endpoint_rows(
        site.store, window, now, site.long_workloads, model=ids, include_client_bound=include,
        region=regions.read(region),
    )  # fmt: skip
    if not rows and not any(e.model in ids for e in site.config.endpoints):
        raise HTTPException(404, f"no endpoint serving model {asked} has samples or is configured")
    workloads = site.ordered(r.workload for r in rows)
    usual = site.default_workload
    workload = params.get("workload") or (usual if usual in workloads or not workloads else workloads[0])
    shown = [r for r in rows if r.workload == workload]
    summary = model_rows(shown, window.statistic, min_samples=site.min_samples, canonical=models.canonical)
    # Per (endpoint, region) of this workload: the region x provider grid, when more than one region measured it.
    apart = endpoint_rows(
        site.store, window, now, site.long_workloads, model=ids, workload=workload, include_client_bound=include,
        region=EACH,
    )  # fmt: skip
    grid = region_grid(apart, site.config)
    since = now - timedelta(seconds=window.span(workload, site.long_workloads))
    costs = _costs(site, shown, window, now)
    named = [
        x for m in ids
        for x in model_series(site.store, model=m, workload=workload, since=since, region=regions.read(region))
    ]  # fmt: skip
    named.sort(key=lambda x: x[1].started_at)  # stable: one id's samples keep their order among equal times
    points = list(zip([name for name, _ in named], _scrubbed(site, [p for _, p in named]), strict=True))
    groups: dict[str, list[Point]] = {}
    for name, p in points:
        if p.charted(include):
            groups.setdefault(name, []).append(p)
    info = models.info_of(model)
    facts = {"model": model, "asked": asked, "ids": ids, "context_window": info.context_window if info else None}
    context = {
        **facts,
        "providers": list(zip(shown, costs, strict=True)),
        "workload": workload,
        "window": window,
        "summary": summary[0] if summary else None,
        "menus": [window_menu(window), *where, _workload_menu(workloads or [workload], workload, None)],
        "region_caption": regions.caption(region, site.config) if where else "",
        "stats_rows": [
            (r.name, endpoint_path(r.provider, r.plan, r.model) + regions.url_suffix(r.region), r.simulated, r)
            for r in shown
        ],
        "charts": charts.sample_charts(groups, keys={r.name: r.provider for r in rows}),  # a provider's colour
        "recent": _recent(points),
        "recent_label": "Endpoint",
        "open_recent": False,
        "include_client_bound": include,
        "grid": grid,
    }
    endpoints = _rows_data(site, shown, costs, window, now)
    data = {**facts, "workload": workload, "window": window, "region": region,
            "summary": summary[0] if summary else None, "endpoints": endpoints, "series": groups,
            "canary_rate": summary[0].canary_rate if summary else None,  # pooled over every provider
            "recent": _recent(points),
            "region_grid": grid_dict(grid)}  # fmt: skip
    return Page(
        "model.html",
        context,
        data,
        json_url=model_path(model, "json")
        + "?"
        + urlencode({"window": window.name, "workload": workload, "region": region}),
    )
