"""A route read from the store as of a time, the goal a URL or the command line spells, and the route as data.

``/route.json`` and ``tokenpace route`` both ask :func:`goal_from_params` for the goal (each value checked and
bounded, one BadRequest line naming what to fix) and :func:`read_route` for the route; :func:`route_dict` is
the JSON both write. Every id of the model's weights (config.models) is one model, as on the model page.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any, cast

from tokenpace.board import cost, numbers, query, regions
from tokenpace.board.route import BY, NOW_WINDOWS, PERCENTILES, By, Candidate, Goal, Pick, Route, rank
from tokenpace.board.rows import FAILING_BELOW, iso
from tokenpace.board.rules import StaleAfter, never_stale
from tokenpace.config.endpoints import Config
from tokenpace.config.windows import DEFAULT_WINDOW, EACH, WINDOWS, Window
from tokenpace.errors import BadRequest
from tokenpace.measure import catalogue
from tokenpace.store.database import Store
from tokenpace.store.windows import EndpointRow, endpoint_rows, present_models

MAX_GOAL_NAME = 200  # a model's or workload's name in a query: longer is no name any config holds
MAX_NUMBER_CHARS = 20  # a price or share as typed: float() of thousands of digits is refused after a while
MAX_PRICE = 1_000_000.0  # $ per 1M tokens: a limit above this limits nothing


def _as_typed(value: str) -> str:
    return value if len(value) <= 40 else value[:40] + "..."


def _name(what: str, value: str) -> str:
    if not value or len(value) > MAX_GOAL_NAME or not value.isprintable():
        raise BadRequest(
            f"{what} {_as_typed(value)!r}: give a {what}'s name, 1 to {MAX_GOAL_NAME} printable characters"
        )
    return value


def _bounded_number(what: str, value: str, low: float, high: float) -> float:
    """A finite decimal number within [low, high], as typed (at most MAX_NUMBER_CHARS characters)."""
    try:
        number = float(value) if len(value) <= MAX_NUMBER_CHARS and value.isascii() else math.nan
    except ValueError:
        number = math.nan
    if not low <= number <= high:  # NaN and infinities fail here too
        raise BadRequest(f"{what} {_as_typed(value)!r}: use a number from {low:g} to {high:g}")
    return number


def goal_from_params(
    params: Mapping[str, str], min_samples: int = 3, workload: str = "1k", region: str = regions.ALL
) -> tuple[Goal, Window]:
    """The goal and the board's window a query asks for; defaults: the config's minimum, opening workload and
    region. Unknown keys are ignored; a bad value raises one BadRequest line naming the parameter and its range."""
    get = {k: v.strip() for k, v in params.items()}
    model = _name("model", get.get("model", ""))
    by = get.get("by") or "speed"
    if by not in BY:
        raise BadRequest(f"by {_as_typed(by)!r}: use one of {', '.join(BY)}")
    p_text = get.get("p") or "50"
    if p_text not in {str(p) for p in PERCENTILES}:
        raise BadRequest(f"p {_as_typed(p_text)!r}: use one of {', '.join(map(str, PERCENTILES))}")
    board_window = query.window(get.get("window") or DEFAULT_WINDOW)
    place = regions.check(get.get("region") or region)
    if place == EACH:
        raise BadRequest("region '*': a route is of one region, or every region pooled (all)")
    price = get.get("max_price")
    goal = Goal(
        model=model,
        by=cast(By, by),
        p=int(p_text),
        workload=_name("workload", get.get("workload") or workload),
        region=place,
        max_price=None if not price else _bounded_number("max_price", price, 0, MAX_PRICE),
        min_success=_bounded_number("min_success", get.get("min_success") or str(FAILING_BELOW), 0, 1),
        min_samples=query.parse_min_samples(get.get("min_samples") or str(min_samples)),
    )
    return goal, board_window


def read_route(
    store: Store,
    config: Config,
    goal: Goal,
    now: datetime,
    *,
    window: Window = WINDOWS[DEFAULT_WINDOW],
    stale_after: StaleAfter = never_stale,
    long_workloads: Collection[str] = (),
) -> Route:
    """The route of a goal as of ``now``, from the samples up to ``now`` only: each endpoint of the model (every
    id of its weights) on the goal's workload and region, over the now-windows and ``window``."""
    seen = present_models(store, window, now, long_workloads)
    ids = config.models.ids(config.models.canonical(goal.model), [*seen, *(e.model for e in config.endpoints)])
    region = regions.store_filter(goal.region)
    found: dict[tuple[str, str, str], dict[str, EndpointRow]] = {}
    windows = (*NOW_WINDOWS, window)
    for w in windows:
        rows = endpoint_rows(store, w, now, long_workloads, workload=goal.workload, model=ids, region=region)
        for r in rows:
            found.setdefault((r.provider, r.plan, r.model), {})[w.name] = r
    candidates = []
    for (provider, plan, model), by_window in sorted(found.items()):
        last = by_window.get(window.name) or next(iter(by_window.values()))
        price = config.price_of(provider, plan, model)
        candidates.append(
            Candidate(
                tuple((w, by_window.get(w.name)) for w in windows),
                stale_after(last),
                None if price is None else cost.blended(price),
            )
        )
    return rank(candidates, goal, now, board_window=window)


def pick_dict(p: Pick, goal: Goal) -> dict[str, Any]:
    """One endpoint's place as JSON: identity, rank, figure, interval, n, window, staleness, success, reasons."""
    r = p.row
    out = [{"code": code, "why": why} for code, why in p.reasons]
    return {
        "rank": p.rank, "tied": p.tied, "in": p.chosen, "name": r.name, "provider": r.provider, "plan": r.plan,
        "model": r.model, "region": regions.token(r.region), "figure": p.figure,
        "interval": None if p.interval is None else list(p.interval), "n": p.n,
        "window": {"name": p.window.name, "label": p.window.label, "seconds": p.window.seconds},
        "now_window": p.now_window, "windows": [{"name": name, "n": n} for name, n in p.counts],
        "last_at": iso(r.last_at), "age_s": p.age_s, "stale": p.stale, "success_rate": p.success,
        "samples": r.samples, "price_blended": p.price, "out": out, "reason": _reason_line(p, goal),
    }  # fmt: skip


def _reason_line(p: Pick, goal: Goal) -> str:
    """Why an endpoint is in (its figure and window) or out (its reasons), in one line."""
    if not p.chosen:
        return "out: " + "; ".join(why for _, why in p.reasons)
    fallback = "" if p.now_window else "; no now-window held enough samples"
    return f"in: {goal_text(goal, p.figure)} over the {p.window.label} (n={p.n}{fallback})"


def goal_text(goal: Goal, value: float | None) -> str:
    """A goal's figure in words: "P50 Output speed 812.0 tok/s", "$0.25 per 1M tokens (3:1)"."""
    metric = BY[goal.by]
    if metric is None:
        return f"{numbers.dollars(value)} per 1M tokens (3:1)"
    m = catalogue.metric(metric)
    return f"P{goal.p} {m.label} {numbers.figure_text(value, 'num' if m.unit == 'tok/s' else 'ms')} {m.unit_text}"


def route_dict(route: Route) -> dict[str, Any]:
    """The route as JSON: the goal, when, the board's window, and each endpoint in then out."""
    g = route.goal
    return {
        "generated_at": route.now.isoformat(),
        "goal": {"model": g.model, "by": g.by, "p": None if g.by == "price" else g.p, "workload": g.workload,
                 "region": g.region, "max_price": g.max_price, "min_success": g.min_success,
                 "min_samples": g.min_samples, "needed": g.needed},
        "board_window": {"name": route.board_window.name, "label": route.board_window.label},
        "now_windows": [{"name": w.name, "label": w.label, "seconds": w.seconds} for w in NOW_WINDOWS],
        "entries": [pick_dict(p, g) for p in route.picks],
    }  # fmt: skip
