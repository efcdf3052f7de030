"""The agents page and its JSON twin: every probe agent, where it measures from and whether it is alive."""

from __future__ import annotations

from collections.abc import Mapping

from tokenpace.board.fleet import NONE_YET, fleet_dict
from tokenpace.store import agents
from tokenpace.web.render import Page
from tokenpace.web.site import Site


def agents_page(site: Site, params: Mapping[str, str]) -> Page:
    """Read fresh each time the page is rendered: a heartbeat writes no sample, so nothing else would tell."""
    now = site.now()
    data = fleet_dict(agents.read_all(site.store), now, agents.queues(site.store))
    context = {"agents": data["agents"], "queues": data["queues"], "none_yet": NONE_YET}
    context["missed"] = data["down_after_missed_heartbeats"]
    return Page("agents.html", context, data, json_url="/agents.json")
