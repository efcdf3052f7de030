"""The incidents ``tokenpace serve`` announced open to the alert webhooks and has not announced closed yet, kept in
the database so that a restart does not announce them again (serve/incidents.py).

One row per place (endpoint, region, rule, workload: an incident at most is open at each), with the id and start
of the sample that opened it. Only the serving process reads and writes it: an agent's role is granted no right
on it (grants.py grants table by table). Its rows are bounded by the places the config measures.
"""

from __future__ import annotations

import json
from datetime import datetime

from tokenpace.store.database import Store, epoch, utc

IncidentPlace = tuple[str, str, str, str, str, str | None]  # provider, plan, model, region, rule, workload


def _place_text(place: IncidentPlace) -> str:
    return json.dumps(place)


def announced(store: Store) -> dict[IncidentPlace, tuple[str, datetime]]:
    """Each place announced open: the id and start of the sample that opened its incident."""
    found = {}
    for key, opened_by, opened_at in store.query("SELECT place, opened_by, opened_at FROM incident_alerts"):
        provider, plan, model, region, rule, workload = json.loads(key)
        at = utc(opened_at)
        if at is not None:
            found[(provider, plan, model, region, rule, workload)] = (str(opened_by), at)
    return found


def remember(store: Store, place: IncidentPlace, opened_by: str, opened_at: datetime) -> None:
    """The incident at ``place`` announced open: its opening sample's id and start."""
    store.execute(
        "INSERT INTO incident_alerts (place, opened_by, opened_at) VALUES (?, ?, ?)"
        " ON CONFLICT (place) DO UPDATE SET opened_by = excluded.opened_by, opened_at = excluded.opened_at",
        (_place_text(place), opened_by, epoch(opened_at)),
    )


def forget(store: Store, place: IncidentPlace) -> None:
    """The incident at ``place`` announced closed, or gone by unseen."""
    store.execute("DELETE FROM incident_alerts WHERE place = ?", (_place_text(place),))
