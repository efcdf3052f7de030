"""The routing feed on the web: ``/route`` and its JSON twin ``/route.json``, with ``format=litellm`` or
``format=openrouter`` for the exports (board/route_export.py); the route is board/route_read.py's.

Every parameter is checked and bounded where the goal is read (route_read.goal_from_params), and a bad one is a
400 of one line naming what to fix; the region must be one the data holds or the config declares, as on the board.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from starlette.exceptions import HTTPException

from tokenpace.board import regions
from tokenpace.board.route import BY, PERCENTILES, Goal
from tokenpace.board.route_export import FORMATS, litellm, openrouter
from tokenpace.board.route_read import goal_from_params, goal_text, read_route, route_dict
from tokenpace.config.windows import WINDOWS
from tokenpace.errors import BadRequest
from tokenpace.store.windows import present
from tokenpace.web.render import Page
from tokenpace.web.site import Site

ROUTE_PARAMS = ("model", "by", "p", "workload", "region", "window", "max_price", "min_success", "min_samples")


def _route_query(goal: Goal, window: str, fmt: str = "json") -> str:
    values = {"model": goal.model, "by": goal.by, "p": str(goal.p), "workload": goal.workload, "region": goal.region,
              "window": window, "max_price": "" if goal.max_price is None else f"{goal.max_price:g}",
              "min_success": f"{goal.min_success:g}", "min_samples": str(goal.min_samples)}  # fmt: skip
    return urlencode([*((k, v) for k, v in values.items() if v), *([("format", fmt)] if fmt != "json" else [])])


def route_page(site: Site, params: Mapping[str, str]) -> Page:
    """A model's endpoints ranked for the goal the parameters name, and its exports."""
    goal, window = goal_from_params(params, site.min_samples, site.default_workload, regions.default(site.config))
    fmt = (params.get("format") or "json").strip()
    if fmt not in FORMATS:
        raise BadRequest(f"format {fmt[:40]!r}: use one of {', '.join(FORMATS)}")
    now = site.now()
    here = {x[3] for x in present(site.store, window, now, site.long_workloads)}
    regions.check_known(goal.region, here, site.config)
    route = read_route(
        site.store, site.config, goal, now, window=window, stale_after=site.stale_after,
        long_workloads=site.long_workloads,
    )  # fmt: skip
    ids = site.config.models.ids(site.config.models.canonical(goal.model), [e.model for e in site.config.endpoints])
    if not route.picks and not any(e.model in ids for e in site.config.endpoints):
        raise HTTPException(404, f"no endpoint serving model {goal.model[:200]} has samples or is configured")
    exports = {"litellm": litellm(route, site.config), "openrouter": openrouter(route)}
    data: dict[str, Any] = route_dict(route) if fmt == "json" else exports[fmt]
    context = {
        "route": route, "goal": goal, "window": window, "entries": route_dict(route)["entries"],
        "figure_of": lambda value: goal_text(goal, value), "exports": exports, "bys": list(BY),
        "percentiles": PERCENTILES, "windows": list(WINDOWS), "query": _route_query(goal, window.name),
        "export_urls": {f: "/route.json?" + _route_query(goal, window.name, f) for f in ("litellm", "openrouter")},
    }  # fmt: skip
    return Page("route.html", context, data, json_url="/route.json?" + _route_query(goal, window.name, fmt))
