"""Routing regret on the web: ``/routing`` and its JSON twin, a table of how good each routing policy was.

Scoring a week walks every sample of it once per figure and every hour once per policy (board/regret.py), so
the scores are kept like the incidents: derived again once the store has changed, at most once a minute.
"""

from __future__ import annotations

from collections.abc import Mapping

from tokenpace.board import routing
from tokenpace.board.regret import REGRET_DAYS, Score
from tokenpace.errors import BadRequest
from tokenpace.web.paths import model_path
from tokenpace.web.render import Page
from tokenpace.web.site import Site

MAX_WORKLOADS = 50  # workload names a page or an error lists: samples may carry any number of them


def _scores(site: Site, workload: str) -> tuple[list[Score], list[str]]:
    now = site.now()
    return site.incidents.get(  # the incidents' memo: derived from the samples, at most once a minute
        ("routing", workload), lambda: routing.read_scores(site.store, site.config, now, workload, site.min_samples)
    )


def routing_page(site: Site, params: Mapping[str, str]) -> Page:
    workload = params.get("workload") or site.default_workload
    known = site.ordered({*site.config.schedule.workloads, site.default_workload})
    if workload not in known:  # checked before it keys the memo: a flood of names must not fill it
        _, present = _scores(site, site.default_workload)
        known = site.ordered({*known, *present})
        if workload not in known:
            shown = workload if len(workload) <= 40 else workload[:40] + "..."
            names = ", ".join(known[:MAX_WORKLOADS]) + (", ..." if len(known) > MAX_WORKLOADS else "")
            raise BadRequest(f"workload {shown!r}: use one of {names}")
    found, present = _scores(site, workload)
    listed = [
        routing.score_dict(s, site.config) | {"url": model_path(s.model)} for s in found[: routing.MAX_ROUTING_ROWS]
    ]
    data = {
        "span_days": REGRET_DAYS,
        "workload": workload,
        "workloads": site.ordered({*known, *present})[:MAX_WORKLOADS],
        "formula": routing.FORMULA,
        "hours_rule": routing.HOURS_RULE,
        "policies": routing.policy_dicts(site.min_samples),
        "figures": routing.figure_names(),
        "count": len(found),
        "listed": len(listed),
        "rows": listed,
    }
    return Page("routing.html", data, data, json_url="/routing.json")
