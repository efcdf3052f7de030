"""Incident alerts: ``tokenpace serve`` POSTs "incident opened" and "incident closed" to the alert webhooks.

Beside the change watcher (serve/alerts.py) and through its Sender, so each webhook keeps its one bounded queue,
its timeouts and its retries. Once a minute, after something new was stored, the :class:`IncidentWatcher` derives
the incidents of the last day from the stored samples (board/outages.py, the same rules as /incidents) and
queues what changed since it last looked, each once:

- "opened" for an incident open now at a place (endpoint, region, rule, workload) not announced open yet;
- "closed" for an incident whose closing sample was not sent yet and that closed after serve started, preceded by
  its "opened" when that was never sent (it opened and closed between two looks).

The memory is the process's: after a restart, an incident still open is announced once more, and one that closed
while serve was down is not sent. An announced incident is known by its place, not its opening sample: a long one
read from a later start may show another first sample, and is still the same incident.
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
from tokenpace.store.database import Store
from tokenpace.web.paths import status_path

log = logging.getLogger(__name__)
READ_DAYS = 1  # incidents open in the last day: an older closed one was sent then, or happened before serve
IncidentPlace = tuple[str, str, str, str, str, str | None]  # provider, plan, model, region, rule, workload


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
        self._closed: dict[str, datetime] = {}  # closing samples sent, until they are older than a read
        self._writes = -1
        self._log = IncidentLog(store, config.incidents, READ_DAYS)  # walks on over each look's new samples
        self.failures = 0

    def new(self, found: Sequence[Incident], now: datetime) -> list[tuple[str, Incident]]:
        """("opened" or "closed", incident) for what was not sent yet (see the module's docstring), oldest first."""
        events = []
        for c in sorted(found, key=lambda c: (c.opened_at, c.closed_at is None)):
            place = (c.provider, c.plan, c.model, c.region, c.rule, c.workload)
            if c.closed_at is None:
                if place not in self._announced:
                    self._announced[place] = c
                    events.append(("opened", c))
            elif c.closed_by is not None and c.closed_by not in self._closed and c.closed_at >= self._started:
                if self._announced.pop(place, None) is None:
                    events.append(("opened", c))
                events.append(("closed", c))
                self._closed[c.closed_by] = c.closed_at
        gone = now - timedelta(days=READ_DAYS + 1)
        self._closed = {sample: at for sample, at in self._closed.items() if at >= gone}
        return events

    async def check(self) -> list[tuple[str, Incident]]:
        """One look at the store; the events it queued."""
        if self._store.writes == self._writes:
            return []
        self._writes = self._store.writes
        now = self._now()
        found = (await asyncio.to_thread(self._log.refresh, now)).found
        events = self.new(found, now)
        for event, c in events:
            message = incident_body(event, c, self._config)
            log.info("%s", json.loads(message)["text"])
            self._send(message)
        return events
