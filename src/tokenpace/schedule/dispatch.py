"""The central half of regions: the sampler's runs of a region's jobs become orders in that region's queue.

The sampler (sampler.py) keeps everything it does for in-process runs: due times from the database, the
providers' concurrency, the plans' budgets, which count every region's samples since the agents write them to
the same table. Only the run itself differs: :class:`Dispatcher` queues an order and waits until an agent has
finished it, so the sampler's run ends when the agent's does and the next due time is read from the samples
the agent stored. While it waits it watches for three things that would otherwise leave it waiting forever:

- no agent took the order by its deadline: it is cancelled and counted as dropped (``dropped``); a retried
  one (it did start in time) is left to run;
- the queue worker that took it stopped beating mid-run (its agent killed, or its queue connection cut):
  ``Queue.recover`` leaves it while its agent still beats, else ends it as its stored samples say (succeeded when
  every request is stored), else retries it once, then records it failed;
- it runs past any reasonable end (``run_limit_s`` after its deadline): the sampler stops waiting for it.

One poller asks for the states of every waiting order in one query each ``poll_s``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable

from tokenpace.schedule.cadence import Job
from tokenpace.store.queue import DONE, Queue, RunOrder

log = logging.getLogger(__name__)
START_WITHIN_MIN_S, START_WITHIN_MAX_S = 30.0, 900.0


def start_within(job: Job) -> float:
    """How long an order may wait for an agent: every_s / 2, between 30 s and 15 min."""
    return min(START_WITHIN_MAX_S, max(START_WITHIN_MIN_S, job.every_s / 2))


class Dispatcher:
    """The sampler's ``run_job`` for jobs with a region: queue an order, wait for an agent to finish it."""

    def __init__(
        self,
        queue: Queue,
        *,
        poll_s: float = 0.5,
        stalled_after_s: float = 30.0,
        run_limit_s: float = 3600.0,
        clock: Callable[[], float] = time.time,
        finished: Callable[[], None] = lambda: None,
    ) -> None:
        """``finished`` is called when an agent has finished an order: its samples are in the database."""
        self.queue = queue
        self.poll_s = poll_s
        self.stalled_after_s = stalled_after_s
        self.run_limit_s = run_limit_s
        self.clock = clock
        self.finished = finished
        self.counts: Counter[str] = Counter()  # queued, finished, dropped, retried, failed, overdue
        self._waiting: dict[int, tuple[asyncio.Future[str], float]] = {}  # job id -> (its end, its deadline)
        self._poller: asyncio.Task[None] | None = None
        self._last_recover = 0.0

    async def __call__(self, job: Job) -> str:
        """Queue the job's order and return how it ended: a procrastinate status, ``dropped`` or ``overdue``."""
        deadline = self.clock() + start_within(job)
        order = RunOrder(
            job.endpoint.name, job.workload.name, job.region, job.requests, deadline, job.idle_s, job.round_seed
        )
        job_id = await self.queue.defer(order)
        self.counts["queued"] += 1
        end: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting[job_id] = (end, deadline)
        if self._poller is None or self._poller.done():
            self._poller = asyncio.create_task(self._poll(), name="tokenpace dispatch")
        try:
            how = await end
        finally:
            self._waiting.pop(job_id, None)
        self.counts[how if how in ("dropped", "overdue", "failed") else "finished"] += 1
        if how != "dropped":
            self.finished()
        return how

    async def _poll(self) -> None:
        while self._waiting:
            try:
                await self._tick()
            except Exception as exc:  # the database away for a while: keep waiting, say it once per tick
                log.warning("cannot follow the queued orders: %s", exc)
            await asyncio.sleep(self.poll_s)

    async def _tick(self) -> None:
        now = self.clock()
        if now - self._last_recover >= self.stalled_after_s / 3:
            self._last_recover = now
            for _, what in await self.queue.recover(self.stalled_after_s, among=list(self._waiting)):
                self.counts[what] += what == "retried"
        states = await self.queue.states(list(self._waiting))
        for job_id, (end, deadline) in list(self._waiting.items()):
            state = states.get(job_id)
            if end.done():
                continue
            if state is None or state.status in DONE:
                end.set_result("gone" if state is None else state.status)
            elif state.status == "todo" and not state.attempts and now > deadline and await self.queue.cancel(job_id):
                log.info("order %d: no agent took it by its deadline: dropped", job_id)
                end.set_result("dropped")
            elif now > deadline + self.run_limit_s:
                end.set_result("overdue")

    async def close(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
        for end, _ in self._waiting.values():
            if not end.done():
                end.cancel()
