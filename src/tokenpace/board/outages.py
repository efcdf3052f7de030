"""Incidents as pages read them: derived from the stored samples over a span, listed, and a provider's daily bars.

The samples are read from the span's start less the longest baseline a rule looks back over (and a day, and back
to the week's start: tracking.read_start), so an incident near the start of the span is judged as it was when it
happened. Pages keep one :class:`~tokenpace.board.tracking.IncidentLog` that walks on over new samples;
:func:`read_incidents` derives them all at once, as the log's first refresh does. Every incident says where it was seen
from ("seen by tokenpace from eu-west", or "from this server" for samples the serving process took itself): what
tokenpace measured there, no claim about the provider's own status page or other places.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from tokenpace.board import regions
from tokenpace.board.incidents import RULES, SEVERITIES, Incident
from tokenpace.board.rows import FAILING_BELOW
from tokenpace.board.tracking import Days, Derived, IncidentLog
from tokenpace.config.endpoints import Config
from tokenpace.config.incidents import Thresholds
from tokenpace.store.database import Store

SPAN_DAYS = 90  # what /incidents lists and a status page draws, a bar a day
MAX_LISTED = 500  # incidents a page lists, newest first: a flapping endpoint must not make a page of megabytes
MAX_FEED = 50  # entries of the Atom feed
THIS_SERVER = "this server"


def read_incidents(store: Store, t: Thresholds, now: datetime, days: int = SPAN_DAYS) -> Derived:
    """The incidents open at any time in the ``days`` before ``now`` (oldest first), and the samples a day read,
    derived from every sample at once."""
    return IncidentLog(store, t, days).refresh(now)


def seen_from(region: str, config: Config) -> str:
    """Where an incident was seen, as every page and message says it: "seen by tokenpace from eu-west"."""
    return f"seen by tokenpace from {regions.name(region, config) if region else THIS_SERVER}"


def incident_text(c: Incident, config: Config) -> str:
    """One line: "critical outage on groq:free/llama, seen by tokenpace from this server, since 2026-12-03 12:03
    UTC" (or "from ... to ..." once closed)."""
    what = c.rule if c.workload is None else f"{c.rule} ({c.workload})"
    when = f"since {c.opened_at:%Y-%m-%d %H:%M} UTC"
    if c.closed_at is not None:
        when = f"from {c.opened_at:%Y-%m-%d %H:%M} to {c.closed_at:%Y-%m-%d %H:%M} UTC"
    return f"{c.severity} {what} on {c.endpoint}, {seen_from(c.region, config)}, {when}"


def incident_dict(c: Incident, config: Config) -> dict[str, Any]:
    """An incident as JSON-able data; ``text`` is :func:`incident_text`'s line."""
    return {
        "endpoint": c.endpoint, "provider": c.provider, "plan": c.plan, "model": c.model,
        "region": regions.token(c.region), "seen_from": seen_from(c.region, config), "rule": c.rule,
        "severity": c.severity, "workload": c.workload, "opened_at": c.opened_at.isoformat(),
        "closed_at": None if c.closed_at is None else c.closed_at.isoformat(), "open": c.closed_at is None,
        "opened_by": list(c.opened_by), "closed_by": c.closed_by, "text": incident_text(c, config),
    }  # fmt: skip


def newest(found: Sequence[Incident], limit: int = MAX_LISTED) -> list[Incident]:
    """The latest ``limit`` incidents: the open ones first, then by when they closed, each newest first."""
    return sorted(found, key=lambda c: (c.closed_at is None, c.closed_at or c.opened_at), reverse=True)[:limit]


def worst(severities: Sequence[str]) -> str | None:
    """The worst severity of several, None for none."""
    return max(severities, key=SEVERITIES.index) if severities else None


@dataclass(frozen=True, slots=True)
class DayBar:
    """One bar: a UTC day, its published samples and how many failed, the worst severity of an incident open in it."""

    day: date
    samples: int
    severity: str | None
    failed: int

    @property
    def ok_share(self) -> float | None:
        """ok share = 1 - failed / samples (tokenpace's own cancellations count as no failure); None: no sample."""
        return None if not self.samples else 1 - self.failed / self.samples

    @property
    def state(self) -> str:
        """The bar's colour: empty (no sample), the worst severity of an incident open that day, else by its ok
        share as an hour of an endpoint's strip (board/uptime.py) but with the board's failing bound: down under
        half, degraded under FAILING_BELOW, up. A chronically failing endpoint opens no incident (no clean
        baseline to drop from), and a green bar must not say it was fine."""
        share = self.ok_share
        if self.severity or share is None:
            return self.severity or "empty"
        return "down" if share < 0.5 else "degraded" if share < FAILING_BELOW else "up"


@dataclass(frozen=True, slots=True)
class Strip:
    """One endpoint's days from one region, oldest first."""

    provider: str
    plan: str
    model: str
    region: str
    days: tuple[DayBar, ...]


def days_of(now: datetime, days: int) -> list[date]:
    """The ``days`` UTC days up to ``now``'s, oldest first."""
    today = now.astimezone(UTC).date()
    return [today - timedelta(days=n) for n in range(days - 1, -1, -1)]


def sampled(counted: Days, now: datetime, days: int = SPAN_DAYS) -> Days:
    """The endpoints and regions with a published sample in the span's days, and their samples a day there."""
    first = days_of(now, days)[0]
    kept = {place: Counter({d: n for d, n in per.items() if d >= first}) for place, per in counted.items()}
    return {place: per for place, per in kept.items() if per}


def strips(counted: Days, failed: Days, found: Sequence[Incident], now: datetime, days: int = SPAN_DAYS) -> list[Strip]:
    """A strip per endpoint and region with a sample or an incident in the span, A to Z, region '' first; ``failed``:
    the samples a day that failed, for each bar's ok share."""
    wanted = days_of(now, days)
    first = wanted[0]
    counts = sampled(counted, now, days)
    marks: dict[tuple[str, str, str, str], dict[date, list[str]]] = {}
    for c in found:
        place = marks.setdefault((c.provider, c.plan, c.model, c.region), {})
        end = (c.closed_at or now).astimezone(UTC).date()
        d = max(c.opened_at.astimezone(UTC).date(), first)
        while d <= end:
            place.setdefault(d, []).append(c.severity)
            d += timedelta(days=1)
    out = []
    for key in sorted(counts.keys() | marks.keys()):
        n, m, bad = counts.get(key, Counter()), marks.get(key, {}), failed.get(key, Counter())
        out.append(Strip(*key, tuple(DayBar(d, n.get(d, 0), worst(m.get(d, [])), bad.get(d, 0)) for d in wanted)))
    return out


def rule_dicts(t: Thresholds) -> list[dict[str, str]]:
    """The written rules as /methodology lists them: name, severity, what each reads, and the rule itself."""
    return [{"name": r.name, "severity": r.severity, "reads": r.reads, "text": r.text(t)} for r in RULES]
