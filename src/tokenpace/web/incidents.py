"""Incidents on the web: ``/incidents`` (and its JSON twin and Atom feed), and ``/status/PROVIDER``'s daily bars.

Every incident is derived from the stored samples by the written rules (board/incidents.py, listed on
/methodology) and says where it was seen from; none says anything of the provider's own status page. A page lists
at most MAX_LISTED incidents and the feed MAX_FEED, newest first, however many a flapping endpoint opened.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.responses import Response

from tokenpace.board import outages
from tokenpace.board.incidents import SEVERITIES, Incident
from tokenpace.board.tracking import Derived
from tokenpace.config.endpoints import endpoint_name
from tokenpace.web.paths import endpoint_path, status_path
from tokenpace.web.render import Page
from tokenpace.web.site import Site

ATOM_TYPE = "application/atom+xml; charset=utf-8"
# Pages and /metrics share one refresh of the incident log a minute at most, as the alert watcher looks: the first
# derives the span (about 55 us a sample), each later one walks on over the samples stored since (tracking.py).
INCIDENTS_REFRESH_S = 60.0


def site_incidents(site: Site) -> Derived:
    """The span's incidents and samples a day for every page (and /metrics): the log walked on once the store has
    changed, at most once a minute."""
    now = site.now()
    return site.incidents.get(("incidents",), lambda: site.incident_log.refresh(now))


def _newest_dicts(site: Site, found: list[Incident], limit: int) -> list[dict[str, Any]]:
    shown = outages.newest(found, limit)
    return [outages.incident_dict(c, site.config) | {"url": endpoint_path(c.provider, c.plan, c.model)} for c in shown]


def incidents_page(site: Site, params: Mapping[str, str]) -> Page:
    found = site_incidents(site).found
    listed = _newest_dicts(site, found, outages.MAX_LISTED)
    providers = sorted({c.provider for c in found} | {e.provider for e in site.config.endpoints})
    data = {
        "span_days": outages.SPAN_DAYS,
        "count": len(found),
        "listed": len(listed),
        "open": sum(c.closed_at is None for c in found),
        "incidents": listed,
        "rules": outages.rule_dicts(site.config.incidents),
        "status_pages": {p: status_path(p) for p in providers},
    }
    return Page("incidents.html", data, data, json_url="/incidents.json")


def atom(site: Site) -> Response:
    """The Atom feed: the latest MAX_FEED incidents, each entry updated when it opened or, later, closed."""
    found = site_incidents(site).found
    entries = _newest_dicts(site, found, outages.MAX_FEED)
    updated = max((e["closed_at"] or e["opened_at"] for e in entries), default=None)
    context = {"entries": entries, "updated": updated or site.now().isoformat()}
    body = site.env.get_template("incidents.atom").render(context)
    return Response(body, media_type=ATOM_TYPE)


def status_page(site: Site, provider: str, params: Mapping[str, str]) -> Page:
    """A provider's status as tokenpace saw it: 404 for one neither configured nor sampled in the span."""
    derived = site_incidents(site)
    counted = {place: per for place, per in derived.days.items() if place[0] == provider}
    sampled = outages.sampled(counted, site.now())
    if not sampled and all(e.provider != provider for e in site.config.endpoints):
        raise HTTPException(404, "no provider of that name is measured: see /incidents for the status pages")
    found = [c for c in derived.found if c.provider == provider]
    strips = outages.strips(sampled, derived.failed, found, site.now())
    rows = [
        {"endpoint": endpoint_name(s.provider, s.plan, s.model), "plan": s.plan, "model": s.model,
         "url": endpoint_path(s.provider, s.plan, s.model), "seen_from": outages.seen_from(s.region, site.config),
         "days": [{"day": d.day.isoformat(), "samples": d.samples, "failed": d.failed, "ok_share": d.ok_share,
                   "severity": d.severity, "state": d.state} for d in s.days],
         "worst": outages.worst([d.severity for d in s.days if d.severity])}
        for s in strips
    ]  # fmt: skip
    data = {
        "provider": provider,
        "span_days": outages.SPAN_DAYS,
        "open": [outages.incident_dict(c, site.config) for c in found if c.closed_at is None],
        "endpoints": rows,
        "incidents": _newest_dicts(site, found, outages.MAX_LISTED),
        "severities": list(SEVERITIES),
    }
    return Page("status.html", data, data, json_url=status_path(provider, "json"))
