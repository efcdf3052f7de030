"""The endpoint page and the model page, rendered from their models (board/endpoint_page.py, model_page.py).

Each page's one model is both the template's context and, through its ``data()``, the JSON twin, so the two never
disagree. The charts, menus and links are drawn here; every figure comes from the model. The endpoint page's twin
adds one key, ``badges``: its badges' URLs, which are the web's to spell (web/badges.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from starlette.exceptions import HTTPException

from tokenpace.board import heatmap, regions
from tokenpace.board.changes import describe
from tokenpace.board.endpoint_page import EndpointPage, read_endpoint_page
from tokenpace.board.model_page import ModelPage, read_model_page
from tokenpace.board.pageparts import PageRegion
from tokenpace.config.endpoints import endpoint_name
from tokenpace.config.windows import Window
from tokenpace.measure.catalogue import metric
from tokenpace.web import badges, charts
from tokenpace.web.paths import endpoint_path, model_path
from tokenpace.web.render import Page
from tokenpace.web.site import Site, client_bound_param, window_menu, window_param


def _workload_menu(workloads: Sequence[str], selected: str, blank: str | None) -> dict[str, object]:
    options = ([("", blank)] if blank else []) + [(w, w) for w in workloads]
    return {"name": "workload", "label": "Workload", "selected": selected, "options": options}


def _page_menus(window: Window, place: PageRegion, workload: dict[str, object]) -> list[dict[str, object]]:
    return [window_menu(window), *([place.menu] if place.menu else []), workload]


def endpoint_context(
    m: EndpointPage, data: Mapping[str, Any], configured: Sequence[str], params: Mapping[str, str] = {}
) -> dict[str, object]:
    """The endpoint page's template context: the model's values (``data``: its JSON twin), with its charts and
    menus drawn; ``configured``: the endpoints the colours are shared out to, as on every page."""
    name = endpoint_name(m.facts["provider"], m.facts["plan"], m.facts["model"])
    # its workloads in shades of the endpoint's own colour, the board's: the page's charts are of one endpoint
    colour = charts.endpoint_colours(configured, [name])[name]
    shades = charts.tints(colour, len(m.groups))
    markers: dict[str, list[charts.Marker]] = {}
    for c in m.changes:  # drawn where the new level starts, on the metric's own chart
        markers.setdefault(c.metric, []).append(charts.Marker(c.at, c.after, f"{c.workload}: {describe(c)}"))
    return {
        **m.facts,
        "changes": data["changes"],
        "window": m.window,
        "provider_url": "/?" + urlencode({"provider": m.facts["provider"]}),
        "menus": _page_menus(m.window, m.place, _workload_menu(m.workloads, m.workload or "", "all")),
        "region_caption": m.place.caption,
        "stats_rows": [(r.workload, None, False, r) for r in m.shown],
        "charts": charts.sample_charts(m.groups, markers, dict(zip(m.groups, shades, strict=True)), dashed=True)
        if m.groups
        else [],  # no chart of nothing
        "uncharted": data["client_bound_only"],
        "include_url": "?" + urlencode({**params, "client_bound": "include"}),
        "recent": [(p.workload, p) for p in m.recent],
        "recent_label": "Workload",
        "open_recent": not m.shown,  # nothing published to chart: the recent samples are all there is
        "include_client_bound": m.include_client_bound,
        "uptime": m.uptime,
        "canary": data["canary"],
        "copying": data["copy_ratio"],
        "copy_metric": metric("copy_ratio"),
        "standings": m.standings,
        "cover": m.cover,
        "bursts": m.bursts,
        "heat": m.heat,
        "colour": colour,  # the heatmap's too
        "heat_workload": m.heat_workload,
        "days": heatmap.WEEKDAYS,
        "weeks": heatmap.WEEKS,
    }


def endpoint_page(site: Site, provider: str, plan: str, model: str, params: Mapping[str, str]) -> Page:
    """One endpoint, every workload (or the one chosen): figures per workload and its samples over time."""
    window, include = window_param(params), client_bound_param(params)
    m = read_endpoint_page(site, provider, plan, model, window, include, params)
    if m is None:
        raise HTTPException(404, f"no endpoint {endpoint_name(provider, plan, model)} has samples or is configured")
    picked = (("window", window.name), ("workload", m.workload), ("region", m.place.region))
    query = urlencode({k: v for k, v in picked if v})
    json_url = endpoint_path(provider, plan, model, "json") + (f"?{query}" if query else "")
    embeds = badges.snippets(provider, plan, model)
    data = {**m.data(), "badges": {e["metric"]: e["url"] for e in embeds}}
    context = endpoint_context(m, data, site.endpoint_names, params) | {"badges": embeds}
    return Page("endpoint.html", context, data, json_url=json_url)


def model_context(m: ModelPage, configured: Sequence[str], params: Mapping[str, str] = {}) -> dict[str, object]:
    """The model page's template context: the model's values, with its charts and menus drawn; ``configured``:
    the endpoints the colours are shared out to, as on every page."""
    return {
        **m.facts,
        "providers": list(zip(m.shown, m.costs, strict=True)),
        "workload": m.workload,
        "window": m.window,
        "summary": m.summary,
        "headline": m.headline,
        "cover": m.cover,
        "menus": _page_menus(m.window, m.place, _workload_menu(m.workloads or [m.workload], m.workload, None)),
        "region_caption": m.place.caption,
        "stats_rows": [
            (r.name, endpoint_path(r.provider, r.plan, r.model) + regions.url_suffix(r.region), r.simulated, r)
            for r in m.shown
        ],
        "charts": charts.sample_charts(m.groups, series_colours=charts.endpoint_colours(configured, m.groups))
        if m.groups
        else [],  # no chart of nothing
        "uncharted": m.uncharted,
        "include_url": "?" + urlencode({**params, "client_bound": "include"}),
        "recent": m.recent,
        "recent_label": "Endpoint",
        "open_recent": False,
        "include_client_bound": m.include_client_bound,
        "grid": m.grid,
    }


def model_page(site: Site, asked: str, params: Mapping[str, str]) -> Page:
    """A model on every endpoint that serves it, one workload at a time."""
    window, include = window_param(params), client_bound_param(params)
    m = read_model_page(site, asked, window, include, params)
    if m is None:
        raise HTTPException(404, f"no endpoint serving model {asked} has samples or is configured")
    query = urlencode({"window": window.name, "workload": m.workload, "region": m.place.region})
    return Page(
        "model.html",
        model_context(m, site.endpoint_names, params),
        m.data(),
        json_url=model_path(m.facts["model"], "json") + "?" + query,
    )
