"""A probe agent: a procrastinate worker on its region's queue that measures each order with the same client as serve.

For each order it takes, the agent resolves the endpoint by name in its own config (keys come from its own
environment, never from the queue), measures the network path to it (clients/network.py), runs the workload
and stores the samples tagged with its region, its name and the job (one sample per job and request: a
retried job cannot store twice). An order taken after its deadline is dropped and counted, not run late.

A retried job whose requests are all stored already (its first attempt went on while its queue connection was
cut) is not run again, and a job's samples the database did not take at once are tried again for a few seconds
before the job ends; a queue worker that stops because its database connection failed is started again.

Beside the worker it beats: every ``heartbeat_s`` it writes its row in ``agents`` (counts, clock offset
against the database), which is how the board and ``tokenpace agents`` tell up from down. Samples whose write
failed (the database away) stay in ``Store.unsaved`` and go in with the next write that succeeds; on the way
out, what is still unsaved goes to the rescue file, so nothing measured is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tokenpace.clients.network import measure_network
from tokenpace.clients.transport import Timeouts
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.load.coldstart import ColdStarts
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.load.send import Refusals
from tokenpace.measure.sample import Origin
from tokenpace.prompts.corpus import Corpus
from tokenpace.store import agents
from tokenpace.store.database import Store
from tokenpace.store.queue import TASK, Queue, RunOrder, queue_name
from tokenpace.version import __version__

if TYPE_CHECKING:  # the queue engine is the optional extra: Queue() says so in one line when it is missing
    from procrastinate import JobContext

log = logging.getLogger(__name__)
HEARTBEAT_S = 10.0
# The worker polls for jobs this often (one cheap query per poll) and LISTENs to nothing: any role may NOTIFY any
# channel (PostgreSQL has no right for it), and a worker that listened took a forged "abort_job_requested" for its
# running job from another region's agent role (issue 29). Abort requests are read from the jobs table instead.
FETCH_POLL_S = 0.2
FLUSH_TRIES, FLUSH_PAUSE_S = 10, 0.5  # a job's samples the database refused (its link cut): tried for ~5 s more
NETWORK_TRIES = 5  # the fastest of five cheap requests: one late timer on the path skews fewer of them


def default_name(region: str) -> str:
    """``HOST/REGION``: one agent per region and machine; give --name to run more."""
    return f"{socket.gethostname()}/{region}"


@dataclass
class JobCounts:
    done: int = 0
    failed: int = 0
    dropped: int = 0


class Agent:
    """One region's worker: takes orders, measures them into the store, beats while it runs."""

    def __init__(
        self,
        cfg: Config,
        endpoints: list[Endpoint],
        store: Store,
        queue: Queue,
        region: str,
        *,
        name: str | None = None,
        concurrency: int = 10,
        heartbeat_s: float = HEARTBEAT_S,
        corpus: Corpus | None = None,
        timeouts: Timeouts | None = None,
    ) -> None:
        self.cfg = cfg
        self.endpoints = {e.name: e for e in endpoints}
        self.store = store
        self.queue = queue
        self.region = region
        self.name = name or default_name(region)
        self.concurrency = concurrency
        self.heartbeat_s = heartbeat_s
        self.corpus = corpus
        self.timeouts = timeouts or Timeouts()
        self.counts = JobCounts()
        self.refusals = Refusals()
        # Idle times from this agent's own requests only: an agent's own role may insert samples but not read
        # them (store/grants.py), so after a restart its first request to an endpoint has no idle time.
        self.cold = ColdStarts(cfg.cold_after_of)
        self._row = agents.AgentRow(self.name, region, socket.gethostname(), __version__, _now(), _now(), heartbeat_s)
        queue.app.task(name=TASK, queue=queue_name(region), pass_context=True)(self._measure)

    async def _measure(self, context: JobContext, /, **kwargs: Any) -> None:
        job = context.job
        try:
            order = RunOrder.from_kwargs(kwargs)
            if order.region != self.region:
                raise ValueError(f"an order for region {order.region[:40]!r} in the queue of {self.region}")
            endpoint = self.endpoints.get(order.endpoint)
            if endpoint is None:
                raise ValueError(f"endpoint {order.endpoint[:200]!r} is not in this agent's config {self.cfg.source}")
            workload = self.cfg.workload(order.workload)
        except Exception as exc:  # a job this agent cannot run: failed, with why, never a crash of the worker
            self.counts.failed += 1
            log.warning("job %s failed: %s", job.id, exc)
            raise
        if job.attempts == 0 and time.time() > order.deadline:
            self.counts.dropped += 1
            log.info("job %s (%s %s) taken after its deadline: dropped", job.id, order.endpoint, order.workload)
            return
        if job.attempts and await asyncio.to_thread(self._all_stored, str(job.id), order.requests):
            self.counts.done += 1  # its first attempt measured it all (its queue worker was cut off): not twice
            log.info("job %s: retried, every request already stored: not run again", job.id)
            return
        if order.idle_s is not None:  # a wake order: the sampler saw the endpoint idle this long
            self.cold.learn(endpoint, time.time() - order.idle_s)
        network = await measure_network(endpoint, self.timeouts, tries=NETWORK_TRIES)
        origin = Origin(self.region, self.name, str(job.id), network)
        command = f"tokenpace agent {self.region}"
        options = RunOptions(
            order.requests, source="scheduled", publish=True, timeouts=self.timeouts, origin=origin, command=command,
            round_seed=order.round_seed, keep_done=False,
        )  # fmt: skip
        done = await run_workload(
            [endpoint], workload, options, self.store, corpus=self.corpus, refusals=self.refusals, cold=self.cold
        )
        await self._stored_or_kept(str(job.id))
        self.counts.done += 1
        ok, taken = done.summary.ok, done.run.completed
        log.info("job %s: %s %s, %d samples, %d ok", job.id, endpoint.name, workload.name, taken, ok)

    async def _stored_or_kept(self, job_id: str) -> None:
        """Wait for the job's samples to be written; those the database does not take (its link cut) are tried
        again a few times, so the job ends with them stored, else kept (Store.unsaved: the next write tries)."""
        for attempt in range(FLUSH_TRIES):
            try:
                await asyncio.to_thread(self.store.flush)
                if not any(s.job_id == job_id for s in self.store.unsaved):
                    return
            except Exception as exc:
                if attempt == FLUSH_TRIES - 1:
                    log.warning("job %s: samples kept until the database takes them: %s", job_id, exc)
                    return
            await asyncio.sleep(FLUSH_PAUSE_S)
            self.store.retry_unsaved()

    def _all_stored(self, job_id: str, requests: int) -> bool:
        """Whether every request of a job is in the database or in this store's unsaved samples (False when the
        database cannot say: then the job runs, and what it stored before is not stored twice)."""
        try:
            stored = agents.stored_requests(self.store, job_id)
        except Exception as exc:
            log.warning("job %s: which requests are stored is unknown: %s", job_id, exc)
            return False
        held = stored | {s.job_seq for s in self.store.unsaved if s.job_id == job_id}
        return held >= set(range(requests))

    async def beat(self, stopped: bool = False) -> None:
        """Write the agent's row: its counts, its clock's offset from the database's, ``stopped_at`` on the way out."""
        try:
            offset = await asyncio.to_thread(agents.clock_offset_ms, self.store)
            c = self.counts
            self._row = replace(
                self._row, heartbeat_at=_now(), stopped_at=_now() if stopped else None, jobs_done=c.done,
                jobs_failed=c.failed, jobs_dropped=c.dropped, clock_offset_ms=offset,
            )  # fmt: skip
            await asyncio.to_thread(agents.beat, self.store, self._row)
        except Exception as exc:  # the database away: the next beat tries again
            log.warning("heartbeat of %s failed: %s", self.name, exc)

    async def _beating(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_s)
            await self.beat()

    async def run(self, grace_s: float = 30.0) -> None:
        """Work until cancelled; on cancellation running jobs get ``grace_s`` to finish, then are aborted."""
        await self.beat()  # before any job: its role's samples must name a row it wrote (store/grants.py)
        beating = asyncio.create_task(self._beating(), name="tokenpace heartbeat")
        try:
            said = False
            while not await self.queue.installed():  # an agent may start before serve has created the queues
                if not said:
                    log.warning("waiting for `tokenpace serve` (with [regions]) to create the region queues")
                    said = True
                await asyncio.sleep(self.heartbeat_s)
            while True:  # until cancelled: a worker whose database link failed stops by itself, so start another
                try:
                    await self.queue.app.run_worker_async(
                        queues=[queue_name(self.region)], name=self.name, concurrency=self.concurrency,
                        install_signal_handlers=False, update_heartbeat_interval=self.heartbeat_s,
                        stalled_worker_timeout=agents.MISSED * self.heartbeat_s, shutdown_graceful_timeout=grace_s,
                        fetch_job_polling_interval=FETCH_POLL_S, delete_jobs="never", listen_notify=False,
                    )  # fmt: skip
                    why = "a database connection failed"
                except Exception as exc:  # the database away (cancellation is no Exception: it ends the agent)
                    why = " ".join(str(exc).split()) or type(exc).__name__
                log.warning("the queue worker of %s stopped (%s): started again", self.name, why)
                await asyncio.sleep(self.heartbeat_s)
        finally:
            beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beating
            await self.beat(stopped=True)


def _now() -> datetime:
    return datetime.now(UTC)
