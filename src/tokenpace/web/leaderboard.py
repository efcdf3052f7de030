"""The leaderboard page, its JSON twin and its CSV: one :class:`ranking.Board`, three spellings."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

from tokenpace.board import changes, ranking, regions
from tokenpace.board.allowance import allowance_dict
from tokenpace.board.leaderboard_page import ranked, read_leaderboard_page
from tokenpace.board.query import METRIC_OF, SORTS, Query
from tokenpace.board.rows import WRONG_BELOW, fast_but_wrong
from tokenpace.config.endpoints import Config
from tokenpace.config.windows import EACH, WINDOWS
from tokenpace.config.workloads import ordered
from tokenpace.measure.catalogue import metric
from tokenpace.text import csv_row
from tokenpace.web import charts
from tokenpace.web.render import Page
from tokenpace.web.site import Site, window_menu

# A figure column's catalogue row (measure/catalogue.py): its label heads the column, short enough for a phone;
# the header's title carries what the label leaves out (unit, whose tokens) and the definition.
FIGURE_OF = {**METRIC_OF, "ttft_net": "ttft_net_ms", "success": "success_rate", "canary": "canary_pass_rate"}


def _figure_column(key: str, cls: str) -> tuple[str, str, str]:
    return (key, metric(FIGURE_OF[key]).label, cls)


# Column key, label, CSS class; a key in query.SORTS makes the header a sort link. "wide": left out on a
# phone's width, where the endpoint's name already says its provider, plan and model.
BOARD_COLUMNS = (
    ("name", "Endpoint", "name"),  # provider:plan/model, so the provider and plan need no columns of their own
    ("model", "Model", "wide"),
    _figure_column("speed", "num"),
    _figure_column("ttft", "num"),
    _figure_column("e2e", "num wide"),
    _figure_column("success", "num"),
    _figure_column("canary", "num wide"),  # only when some row's canary has a verdict
    ("samples", "Samples", "num wide"),
    ("price", "Price, $/1M (3:1)", "num wide"),
    ("cost", "$ per request", "num wide"),
    ("last", "Last sample", "num"),
)
# Shown beside TTFT when the rows measured the network (probe agents, clients/network.py).
TTFT_NET = _figure_column("ttft_net", "num")
TTFT_NET_TITLE = (
    "TTFT less one network round trip the probe agent measured just before the run (the fastest of a few cheap "
    "requests): the distance to the provider taken off. It cannot take off the provider's queueing or prompt "
    "processing, which stay in both figures."
)
CANARY_TITLE = (
    "The correctness canary: each fresh prompt asks the answer to begin with a line of its own; the share of "
    f"answers that did. Under {WRONG_BELOW:.0%} the endpoint is marked fast but wrong."
)
_ARROWS = {"asc": "▲", "desc": "▼"}
_SORTED_BY = {key: metric(FIGURE_OF[key]).noun for key in ("speed", "ttft", "e2e", "success")}
_SORTED_BY |= {"samples": "sample count", "name": "endpoint name"}


def _href(query: Query, **changes: Any) -> str:
    qs = query.params(**changes)
    return f"/?{qs}" if qs else "/"


def _visible_columns(
    each_region: bool, net: bool, priced: bool = True, canary: bool = False
) -> list[tuple[str, str, str]]:
    """The columns shown: a region's beside the name when rows are per region, TTFT - RTT beside TTFT when the
    rows measured the network, price and cost only when some row has a price (two columns of dashes cost a
    narrow screen the last sample), the canary's pass rate only when some row's canary was judged."""
    out = []
    for column in BOARD_COLUMNS:
        if (column[0] in ("price", "cost") and not priced) or (column[0] == "canary" and not canary):
            continue
        out.append(column)
        if column[0] == "name" and each_region:
            out.append(("region", "Region", ""))
        if column[0] == "ttft" and net:
            out.append(TTFT_NET)
    return out


def _headers(query: Query, net: bool = False, priced: bool = True, canary: bool = False) -> list[dict[str, str]]:
    """Each header's link: the column's natural order first, the other way round when clicked again."""
    current = query.direction
    out = []
    for key, label, cls in _visible_columns(query.region == EACH, net, priced, canary):
        head = {"key": key, "label": label, "cls": cls, "href": "", "state": "", "arrow": "↕", "title": ""}
        if key in ("ttft_net", "canary"):
            head["title"] = TTFT_NET_TITLE if key == "ttft_net" else CANARY_TITLE
        elif key in FIGURE_OF:
            m = metric(FIGURE_OF[key])
            head["title"] = f"{m.header}: {m.definition}"
        if key in SORTS:
            active = key == query.sort
            flipped = "asc" if current == "desc" else "desc"
            head["href"] = _href(query, sort=key, order=flipped if active else None)
            if active:
                head |= {"state": "ascending" if current == "asc" else "descending", "arrow": _ARROWS[current]}
        out.append(head)
    return out


def _menus(board: ranking.Board, config: Config) -> list[dict[str, object]]:
    q = board.query
    workloads = ordered([*board.workloads, q.workload], config.schedule.workloads)
    # No region menu where no agent ever measured and none is declared: one place, nothing to choose.
    where = [regions.menu(q.region, board.regions, config)] if regions.wanted(board.regions, config) else []
    return [
        *where,
        window_menu(WINDOWS[q.window]),
        {"name": "workload", "label": "Workload", "selected": q.workload, "options": [(w, w) for w in workloads]},
        {"name": "provider", "label": "Provider", "selected": q.provider or "",
         "options": [("", "all"), *((p, p) for p in board.providers)]},
        {"name": "plan", "label": "Plan", "selected": q.plan or "",
         "options": [("", "all"), *((p, p) for p in board.plans)]},
    ]  # fmt: skip


def _label(board: ranking.Board, e: ranking.Entry) -> str:
    """A row's name in a chart: with its region where each region has its own row (one name, several rows)."""
    return f"{e.row.name} @{regions.token(e.row.region)}" if board.query.region == EACH else e.row.name


def board_charts(board: ranking.Board, configured: Sequence[str]) -> list[charts.Chart]:
    """Output speed per endpoint (its percentiles), each endpoint's TTFT against its output speed, and its output
    speed against its blended price where it has one; ``configured``: the endpoints the colours are shared out
    to, as on every page."""
    statistic, label = board.window.statistic, board.cover.label
    shown = [e for e in board.entries if e.row.output_speed.n]
    if not shown:  # no chart of nothing: the page says why there is no figure
        return []
    boxed = shown[: charts.MAX_BOXES]
    cut = f" (the first {len(boxed)} of {len(shown)})" if len(boxed) < len(shown) else ""
    # one colour per endpoint (its rows in each region alike), the same on its own page and its model's
    colour = charts.endpoint_colours(configured, [e.row.name for e in shown])
    speed, ttft = metric("output_speed"), metric("ttft_ms")
    speeds = charts.boxes(
        "chart-board-speed", f"{speed.label} by endpoint{cut}: median, P25-P75, {charts.TAILS_TITLE}", speed.detail,
        {_label(board, e): e.row.output_speed for e in boxed}, {_label(board, e): colour[e.row.name] for e in boxed},
    )  # fmt: skip
    headline = [(e, s) for e in shown if (s := e.row.output_speed.headline(statistic)) is not None]
    timed = [
        charts.Dot(e.row.name, _label(board, e), t, s) for e, s in headline if (t := e.row.ttft_ms.headline(statistic))
    ]
    out = [speeds, charts.scatter("chart-board-ttft-speed", f"{ttft.label} against {speed.noun}, {label}",
                                  ttft.header, speed.header, timed, series_colours=colour)]  # fmt: skip
    priced = [
        charts.Dot(e.row.name, _label(board, e), price, s)
        for e, s in headline
        if e.cost is not None and (price := e.cost.blended) is not None
    ]
    if priced:  # no chart of nothing: prices come from config and presets, and simulators have none
        title = f"{speed.label} against blended price (3:1 input:output), {label}"
        out.append(charts.scatter("chart-board-price-speed", title, "$ per 1M tokens", speed.header, priced,
                                  series_colours=colour))  # fmt: skip
    return out


def leaderboard_page(site: Site, params: Mapping[str, str]) -> Page:
    m = read_leaderboard_page(site, params)
    board, q = m.board, m.board.query
    # What the filter form does not show but must keep: the sort, and a ranking minimum other than the default.
    kept = {"sort": q.sort if q.sort != "speed" else "", "order": q.order or ""}
    kept["min_samples"] = str(q.min_samples) if q.min_samples != q.default_min_samples else ""
    kept["client_bound"] = "include" if q.include_client_bound else ""
    hidden = [(k, v) for k, v in kept.items() if v]
    qs = q.params()
    context = {
        "board": board,
        "query": q,
        "window": board.window,
        "entries": board.entries,
        "models": board.models,
        "budgets": m.budgets,
        "spend": m.spend,
        "allowances": [allowance_dict(a) for a in m.allowances],
        "headers": _headers(q, m.net, m.priced, m.canary),
        "canary": m.canary,
        "wrong": fast_but_wrong,
        "cached_total": sum(e.row.cached for e in board.entries),
        "cold_total": sum(e.row.cold for e in board.entries),
        "priced": m.priced,
        "sort_label": _SORTED_BY[q.sort],
        "menus": _menus(board, site.config),
        "region_caption": m.caption,
        "each_region": q.region == EACH,
        "net": m.net,
        "ttft_net_title": TTFT_NET_TITLE,
        "region_token": regions.token,
        "agents_url": "/agents" if m.any_agent else "",
        "hidden": hidden,
        "csv_url": "/leaderboard.csv" + (f"?{qs}" if qs else ""),
        # The other view of client-bound samples: what the board would say with them counted, or without.
        "client_bound_url": _href(q, client_bound="exclude" if q.include_client_bound else "include"),
        "client_bound_total": sum(e.row.client_bound for e in board.entries),
        "charts": board_charts(board, site.endpoint_names) if board.entries else [],
        "waiting": board.waiting,
        "uncharted": board.uncharted,
        "bursts": m.bursts,
        "describe_change": changes.describe,  # the "changed" badge's title
    }
    return Page("leaderboard.html", context, m.data(), json_url="/leaderboard.json" + (f"?{qs}" if qs else ""))


def csv_text(site: Site, params: Mapping[str, str]) -> str:
    header, rows = ranking.csv_table(ranked(site, params))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(map(csv_row, rows))
    return buf.getvalue()
