"""Incident alerts: ``tokenpace serve`` POSTs "incident opened" and "incident closed" to the alert webhooks.

Beside the change watcher (serve/alerts.py) and through its Sender, so each webhook keeps its one bounded queue,
its timeouts and its retries. Once a minute, after something new was stored, the :class:`IncidentWatcher` derives
the incidents of the last day from the stored samples (board/outages.py, the same rules as /incidents) and
queues what changed since it last looked, each once:

- "opened" for an incident open now at a place (endpoint, region, rule, workload) not announced open yet;
- "closed" for an incident whose closing sample was not sent yet, that was announced open (by this process or
  one before it) or closed after serve started, preceded by its "opened" when that was never sent (it opened and
  closed between two looks).

What was announced open is kept in the database (store/alerted.py), so a restart announces no open incident
again, and sends the close of one announced before it that closed while serve was down, if that close is among the
last day's incidents (one that closed earlier is forgotten, logged, not sent). An announced incident is known by
its place, not its opening sample: a long one read from a later start may show another first sample, and is still
the same incident. After a restart, an incident at a place announced before is the one announced if it opened at
the same sample, or opened over a day ago (what a later read may see open at another sample); one that opened
later is another, announced.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from tokenpace.board.incidents import Incident
from tokenpace.board.outages import incident_dict
from tokenpace.board.tracking import IncidentLog
from tokenpace.config.endpoints import Config
from tokenpace.serve.alerts import CHECK_EVERY_S, MAX_FIELD, Looking
from tokenpace.store import alerted
from tokenpace.store.alerted import IncidentPlace
from tokenpace.store.database import Store
from tokenpace.web.paths import status_path

log = logging.getLogger(__name__)
READ_DAYS = 1  # incidents open in the last day: an older closed one was sent then, or happened before serve


def _clip(text: str) -> str:
    return text if len(text) <= MAX_FIELD else text[: MAX_FIELD - 1] + "…"


def incident_body(event: str, c: Incident, config: Config) -> bytes:
    """The JSON a webhook gets: ``text`` (what Slack shows), ``event`` and the incident's fields; a few KiB."""
    fields: dict[str, Any] = {k: _clip(v) if isinstance(v, str) else v for k, v in incident_dict(c, config).items()}
    fields["opened_by"] = fields["opened_by"][-5:]  # the latest few: the page lists them all
    text = _clip(f"tokenpace: incident {event}: {fields.pop('text')}")
    board = config.alerts.board_url
    url = None if board is None else _clip(board + status_path(c.provider))
    return json.dumps({"text": text, "event": f"incident_{event}", **fields, "board_url": url}).encode()


class IncidentWatcher(Looking):
    """Derives incidents every ``every_s`` seconds once the store has new samples; queues each open and close once."""

    what = "incidents"

    def __init__(
        self,
        store: Store,
        config: Config,
        send: Callable[[bytes], None],
        *,
        every_s: float = CHECK_EVERY_S,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._store, self._config, self._send, self._every, self._now = store, config, send, every_s, now
        self._started = now()
        self._announced: dict[IncidentPlace, Incident] = {}  # open, "opened" sent
        self._before: dict[IncidentPlace, tuple[str, datetime]] = {}  # announced open by earlier processes
        self._looked = False  # a look went through: what earlier processes announced was read and matched
        self._closed: dict[str, datetime] = {}  # closing samples sent, until they are older than a read
        self._writes = -1
        self._log = IncidentLog(store, config.incidents, READ_DAYS)  # walks on over each look's new samples
        self.failures = 0

    def _announced_before(self, place: IncidentPlace, c: Incident, now: datetime) -> bool:
        """Whether ``c`` is the incident an earlier process announced open at its place (module docstring)."""
        before = self._before.get(place)
        if before is None or not (c.opened_by[-1] == before[0] or c.opened_at < now - timedelta(days=READ_DAYS)):
            return False
        del self._before[place]
        return True

    def new(self, found: Sequence[Incident], now: datetime) -> list[tuple[str, Incident]]:
        """("opened" or "closed", incident) for what was not sent yet (see the module's docstring), oldest first."""
        events = []
        for c in sorted(found, key=lambda c: (c.opened_at, c.closed_at is None)):
            place = (c.provider, c.plan, c.model, c.region, c.rule, c.workload)
            if c.closed_at is None:
                if place not in self._announced:
                    self._announced[place] = c
                    if not self._announced_before(place, c, now):
                        events.append(("opened", c))
            elif c.closed_by is not None and c.closed_by not in self._closed:
                was = self._announced.pop(place, None) is not None or self._announced_before(place, c, now)
                if was or c.closed_at >= self._started:
                    events += [*([] if was else [("opened", c)]), ("closed", c)]
                    self._closed[c.closed_by] = c.closed_at
        gone = now - timedelta(days=READ_DAYS + 1)
        self._closed = {sample: at for sample, at in self._closed.items() if at >= gone}
        return events

    def _keep(self, events: Sequence[tuple[str, Incident]], stale: Sequence[IncidentPlace]) -> None:
        """What was announced open, in the database: ``stale`` removed, then each "opened" added and each "closed"
        removed (a stale place may hold a new incident announced now)."""
        for place in stale:
            alerted.forget(self._store, place)
        for event, c in events:
            place = (c.provider, c.plan, c.model, c.region, c.rule, c.workload)
            if event == "opened":
                alerted.remember(self._store, place, c.opened_by[-1], c.opened_at)
            else:
                alerted.forget(self._store, place)

    async def check(self) -> list[tuple[str, Incident]]:
        """One look at the store; the events it queued."""
        if self._store.writes == self._writes:
            return []
        self._writes = self._store.writes
        now = self._now()
        first = not self._looked
        if first:
            self._before = await asyncio.to_thread(alerted.announced, self._store)
        found = (await asyncio.to_thread(self._log.refresh, now)).found
        events = self.new(found, now)
        stale = list(self._before)  # announced open, and no incident at their place since: closed long ago
        for place in stale:
            log.info("the incident announced open at %s closed while serve was down, over a day ago: not sent", place)
        self._before, self._looked = {}, True
        for event, c in events:
            message = incident_body(event, c, self._config)
            log.info("%s", json.loads(message)["text"])
            self._send(message)
        await asyncio.to_thread(self._keep, events, stale)
        return events
