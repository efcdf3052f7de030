"""Wake requests: a scheduled run that finds its endpoint cold first sends one request alone, so its own are warm.

A plan sampled hourly or every 4 h, one request a run, idles past ``cold_after`` before nearly every run: its
samples would all be cold starts, and the board would have no warm figures for it. So when a run's endpoint has
been idle for ``cold_after`` or longer (an unknown idle time is not), the run first sends one request of the
wake workload (the config's ``1k``, with its own ``max_tokens``) alone, stored as a published sample of that
workload, tagged cold: its TTFT is the cold start the board shows apart. The run's own requests follow at once,
on a warm endpoint. The wake goes through the same ``run_job`` as the run (measured here, or queued for the
job's region's agent), within the run's room: its worst case counts it (``Job.worst_case``) and it is one
request at a time (the run's width is at least 1). ``tokenpace run`` never wakes: it only tags.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import replace
from functools import partial

from tokenpace.load.coldstart import ColdStarts, is_cold
from tokenpace.measure.sample import LOCAL
from tokenpace.schedule.cadence import Job
from tokenpace.store import recent
from tokenpace.store.database import Store

Place = tuple[str, str, str]  # base URL, model, region: one deployment as seen from one place
log = logging.getLogger(__name__)


def place(job: Job) -> Place:
    return (job.endpoint.base_url, job.endpoint.model, job.region)


class Waker:
    """Sends the wake request of each run that finds its endpoint cold, one per cold spell and place.

    ``cold`` is the sampler's knowledge of idle times here; a region's are read from the store (its agents'
    samples) against ``now``, the sampler's clock, as its budget windows are. ``read`` runs a blocking read as
    the sampler does; ``failed`` logs and counts what it survives.
    """

    def __init__(
        self,
        cold: ColdStarts,
        store: Store,
        read: Callable[[Callable[[], object]], Awaitable[object]],
        now: Callable[[], float],
        failed: Callable[[str, Exception], None],
    ) -> None:
        self.cold, self.store, self._read, self._now, self._failed = cold, store, read, now, failed
        self._locks: defaultdict[Place, asyncio.Lock] = defaultdict(asyncio.Lock)  # one wake at a time each
        self._sending: Counter[Place] = Counter()  # runs past their wake, not yet ended: the endpoint is awake
        self.sent = 0  # wake requests sent (runs of one), since the sampler started

    async def before(self, job: Job, run_job: Callable[[Job], Awaitable[object]]) -> None:
        """Wake the job's endpoint if it is cold; a run of the same place that waits meanwhile then finds it warm."""
        if job.wake is None or not job.wakes:
            return
        async with self._locks[place(job)]:
            try:
                idle = await self.idle(job)
            except Exception as exc:  # unknown idle: no wake, as for an endpoint never sampled
                self._failed(f"no wake request for {job.name}: its idle time cannot be read", exc)
                return
            if idle is None or not is_cold(idle, job.cold_after_s):
                return
            log.info("%s: idle for %.0f s, sending a wake request first", job.name, idle)
            self.sent += 1
            try:
                # A prompt of its own: the round's seed is of the run's workload (schedule/rounds.py).
                await run_job(replace(job, workload=job.wake, requests=1, idle_s=idle, round_seed=None))
            except Exception as exc:  # a wake that failed must not cost the run
                self._failed(f"wake request of {job.name} failed", exc)

    async def idle(self, job: Job) -> float | None:
        """The endpoint's idle time seen from the job's place: 0 while a run of it sends; here, what this process
        and its store know (load/coldstart.py); for a region, since the end of the store's latest sample from it."""
        if self._sending[place(job)]:
            return 0.0
        e = job.endpoint
        if job.region == LOCAL:
            await self.cold.recall(e, self._read)
            return self.cold.idle(e)
        ended = await self._read(partial(recent.last_ended, self.store, e, job.region))
        return None if not isinstance(ended, float) else max(0.0, self._now() - ended)

    def started(self, job: Job) -> None:
        """The job's own requests begin: its endpoint is awake until :meth:`ended`."""
        self._sending[place(job)] += 1

    def ended(self, job: Job) -> None:
        self._sending[place(job)] -= 1
