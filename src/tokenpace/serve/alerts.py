"""Alerts: ``tokenpace serve`` POSTs each change it finds in the samples to the configured webhooks.

Two tasks beside the sampler, never in its way. The :class:`Watcher` looks for changes (board/changes.py) once a
minute, on a thread (the reads and the tests are the store's and the CPU's, not the timing loop's), only after
something new was stored, and then only for the endpoints and workloads whose last sample moved. The
:class:`Sender` delivers them, one task and one bounded queue per webhook, so a webhook that hangs delays only its
own messages: each POST has a timeout, a failure is retried with exponential backoff (1, 2, 4, 8 s), a full queue
drops its oldest message with a counted warning.

Each change is sent once: the watcher remembers, per endpoint, workload and metric, the last change it sent
and when. A change found later is the same one (a later sample moved its estimate) unless its direction differs
or it started after that moment, when the samples that show it did not exist yet. The memory is the process's:
after a restart, each change still current (within its last 96 samples) is sent once more.

A webhook URL may be a credential (Slack's are): logs say its host only, and never an exception's text, which
can quote the URL.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp

from tokenpace.board.changes import CHANGE_LABELS, CHANGE_UNITS, Change, Kept, change_dict, change_figure
from tokenpace.config.alerts import host
from tokenpace.config.windows import RowKey
from tokenpace.store.database import Store
from tokenpace.web.paths import endpoint_path

log = logging.getLogger(__name__)
CHECK_EVERY_S = 60.0
TIMEOUT_S = 10.0  # per POST, connecting included
ATTEMPTS = 5  # the first POST and 4 retries
BACKOFF_S = 1.0  # doubled after each failed attempt
QUEUE_MAX = 100  # messages waiting per webhook
MAX_FIELD = 300  # characters of any text in a message: names come from configs and servers
USER_AGENT = "tokenpace-alerts"


def _cut(text: str) -> str:
    return text if len(text) <= MAX_FIELD else text[: MAX_FIELD - 1] + "…"


def slack_text(c: Change) -> str:
    """The Slack-compatible line, e.g. "tokenpace: groq/llama output speed fell 312 -> 151 tok/s (1k, since
    2026-12-03 12:03 UTC)"."""
    verb = "rose" if c.after > c.before else "fell"
    values = f"{change_figure(c.metric, c.before)} -> {change_figure(c.metric, c.after)}{CHANGE_UNITS[c.metric]}"
    since = c.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"tokenpace: {_cut(c.endpoint)} {CHANGE_LABELS[c.metric]} {verb} {values} ({_cut(c.workload)}, since {since})"
    )


def body(c: Change, board_url: str | None) -> bytes:
    """The JSON a webhook gets: ``text`` (what Slack shows) and the change's fields; at most a few KiB."""
    fields: dict[str, Any] = {k: _cut(v) if isinstance(v, str) else v for k, v in (change_dict(c) or {}).items()}
    fields.pop("text")
    url = None if board_url is None else board_url + endpoint_path(c.provider, c.plan, c.model)
    return json.dumps({"text": slack_text(c), **fields, "board_url": url and _cut(url)}).encode()


@dataclass
class Counts:
    """What a webhook's sender did since serve started."""

    sent: int = 0
    failed: int = 0  # messages given up after every attempt, or refused for good (4xx)
    dropped: int = 0  # oldest messages dropped from a full queue
    attempts: int = 0


class Sender:
    """One delivery task and one bounded queue per webhook URL."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        timeout_s: float = TIMEOUT_S,
        attempts: int = ATTEMPTS,
        backoff_s: float = BACKOFF_S,
        queue_max: int = QUEUE_MAX,
    ) -> None:
        self._urls = list(urls)
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._attempts, self._backoff = attempts, backoff_s
        self._queues: list[deque[bytes]] = [deque() for _ in self._urls]
        self._queue_max = queue_max
        self._ready = [asyncio.Event() for _ in self._urls]
        self.counts = [Counts() for _ in self._urls]

    def put(self, message: bytes) -> None:
        """Queue a message for every webhook; never waits (a full queue drops its oldest, counted and logged)."""
        for i, queue in enumerate(self._queues):
            if len(queue) >= self._queue_max:
                queue.popleft()
                self.counts[i].dropped += 1
                log.warning("alerts to %s: queue full, dropped the oldest message", host(self._urls[i]))
            queue.append(message)
            self._ready[i].set()

    async def run(self) -> None:
        """Deliver until cancelled."""
        headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT}
        async with aiohttp.ClientSession(timeout=self._timeout, headers=headers) as session:
            await asyncio.gather(*(self._deliver(session, i) for i in range(len(self._urls))))

    async def _deliver(self, session: aiohttp.ClientSession, i: int) -> None:
        queue, ready, counts = self._queues[i], self._ready[i], self.counts[i]
        while True:
            await ready.wait()
            while queue:
                message = queue.popleft()
                if await self._post(session, self._urls[i], message, counts):
                    counts.sent += 1
                else:
                    counts.failed += 1
            ready.clear()

    async def _post(self, session: aiohttp.ClientSession, url: str, message: bytes, counts: Counts) -> bool:
        """POST with retries: True once a 2xx answers; False after the last attempt, or at once on a 4xx but
        408 and 429 (the webhook refuses the message itself: sending it again cannot help)."""
        why = ""
        for attempt in range(self._attempts):
            if attempt:
                await asyncio.sleep(self._backoff * 2 ** (attempt - 1))
            counts.attempts += 1
            try:
                async with session.post(url, data=message, allow_redirects=False) as r:
                    if 200 <= r.status < 300:
                        return True
                    why = f"HTTP {r.status}"
                    if 400 <= r.status < 500 and r.status not in (408, 429):
                        break
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                why = type(exc).__name__  # never str(exc): it may quote the URL
            log.info("alert to %s: attempt %d failed (%s)", host(url), attempt + 1, why)
        log.warning("alert to %s not delivered: %s", host(url), why)
        return False


class Looking:
    """A watcher's loop: ``check`` every ``_every`` seconds until cancelled; a failed check is logged (as looking for
    ``what``), counted in ``failures`` and tried again."""

    what = "changes"
    _every: float
    failures: int

    async def check(self) -> object:
        raise NotImplementedError

    async def run(self) -> None:
        while True:
            try:
                await self.check()
            except Exception as exc:  # a store outage must not end alerting, nor serve
                self.failures += 1
                log.warning("looking for %s failed: %s", self.what, " ".join(str(exc).split()) or type(exc).__name__)
            await asyncio.sleep(self._every)


class Watcher(Looking):
    """Looks for changes every ``every_s`` seconds once the store has new samples; queues each new one once."""

    def __init__(
        self,
        store: Store,
        keys: Collection[RowKey],
        send: Callable[[Change], None],
        *,
        every_s: float = CHECK_EVERY_S,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._store, self._keys, self._send, self._every, self._now = store, list(keys), send, every_s, now
        self._kept = Kept(store)  # each key re-read and tested only once its last sample moved
        self._sent: dict[tuple[RowKey, str], tuple[Change, datetime]] = {}  # per key and metric: last sent, when
        self._writes = -1
        self.failures = 0

    def new(self, found: Sequence[Change], now: datetime) -> list[Change]:
        """The changes not sent yet (see the module's docstring), remembered as sent at ``now``."""
        fresh = []
        for c in found:
            last = self._sent.get((c.key, c.metric))
            if last is None or last[0].direction != c.direction or c.at > last[1]:
                self._sent[c.key, c.metric] = (c, now)
                fresh.append(c)
        return fresh

    async def check(self) -> list[Change]:
        """One look at the store; the changes it queued."""
        if self._store.writes == self._writes:
            return []
        self._writes = self._store.writes
        now = self._now()
        found = [c for cs in (await asyncio.to_thread(self._kept.recent_of, self._keys)).values() for c in cs]
        fresh = self.new(found, now)
        for c in fresh:
            log.info("%s", slack_text(c))
            self._send(c)
        return fresh


async def alerting(watcher: Watcher, sender: Sender, *more: Looking) -> None:
    """The watcher and the sender (and more watchers sending through it: serve/incidents.py), until cancelled."""
    await asyncio.gather(watcher.run(), sender.run(), *(w.run() for w in more))
