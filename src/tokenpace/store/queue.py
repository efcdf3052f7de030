"""The region queues: one procrastinate queue per region in the PostgreSQL store, the only job engine tokenpace has.

``tokenpace serve`` with ``[regions]`` defers a :class:`RunOrder` per due (endpoint, workload, region); agents of
that region take them (agent/worker.py). procrastinate does the hard parts: LISTEN/NOTIFY dispatch, one worker
per job (``FOR UPDATE SKIP LOCKED``), worker heartbeats, graceful shutdown. tokenpace adds, here:

- a queueing lock per (endpoint, workload, region): while one order waits, no second is queued behind it, so
  jobs never pile up for an agent that is away;
- a deadline in every order: one taken after it is dropped and counted, not run late;
- a stalled job (its worker's heartbeat older than ``stalled_after_s``: the agent was killed or cut off) ends as
  its samples say (:meth:`Queue.recover`): left running while the agent that stored its requests still beats (its
  own heartbeat in ``agents``), else succeeded when every request is stored, else retried once, then recorded as
  failed; the database's unique (job_id, job_seq) keeps a retried job's requests from being stored twice, and an
  agent does not run again a retried job whose requests are all stored (agent/worker.py).

An order names its endpoint and workload, never a key: each agent reads keys from its own environment. In a
round of shared prompts it carries the round's seed too, so the agent builds the round's prompts.
procrastinate's errors become :class:`StoreError` here, as the store's own do.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tokenpace.errors import ConfigError, StoreError
from tokenpace.measure.bounds import MAX_IDLE_S  # an order's idle time is bounded as a sample's
from tokenpace.store.agents import MISSED
from tokenpace.store.dialects import hide_password, say

log = logging.getLogger(__name__)
TASK = "tokenpace.measure"  # procrastinate's name of the one task: measure an order
DONE = frozenset({"succeeded", "failed", "cancelled", "aborted"})
RETRIES = 1  # a stalled job is retried this many times, then recorded as failed
ROUND_SEED_BITS = 31  # a round's prompt seed (schedule/rounds.py) is below 2**31, as a run's own seed is


def _order_int(value: object) -> int:
    """An order's whole number as JSON brings it (TypeError for anything else: a float, a bool, text)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"a whole number expected, got {type(value).__name__}")
    return value


def queue_name(region: str) -> str:
    """The procrastinate queue of a region: ``tokenpace-REGION``."""
    return f"tokenpace-{region}"


@dataclass(frozen=True, slots=True)
class RunOrder:
    """What a region's agent is asked: ``requests`` samples of an endpoint and workload, started by ``deadline``."""

    endpoint: str  # Endpoint.name, resolved by the agent in its own config
    workload: str
    region: str
    requests: int
    deadline: float  # UTC epoch seconds: taken later, the order is dropped and counted
    idle_s: float | None = None  # a wake order's idle time as the sampler saw it (schedule/wake.py)
    round_seed: int | None = None  # its round's prompt seed (schedule/rounds.py); None: prompts of its own

    @property
    def lock(self) -> str:
        """The queueing lock: one waiting order per (endpoint, workload, region)."""
        return f"{self.endpoint}\x1f{self.workload}\x1f{self.region}"

    @classmethod
    def from_kwargs(cls, kwargs: dict[str, Any]) -> RunOrder:
        """The order a job carries; ValueError when it is not one (a hostile or foreign row)."""
        try:
            order = cls(
                str(kwargs["endpoint"]), str(kwargs["workload"]), str(kwargs["region"]),
                int(kwargs["requests"]), float(kwargs["deadline"]),
                None if kwargs.get("idle_s") is None else float(kwargs["idle_s"]),
                None if kwargs.get("round_seed") is None else _order_int(kwargs["round_seed"]),
            )  # fmt: skip
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a tokenpace order: {type(exc).__name__} {exc}") from None
        idle_ok = order.idle_s is None or 0 <= order.idle_s <= MAX_IDLE_S  # NaN fails both comparisons
        seed_ok = order.round_seed is None or 0 <= order.round_seed < 1 << ROUND_SEED_BITS
        sizes_ok = 1 <= order.requests <= 10_000 and len(order.endpoint) <= 1000 and len(order.workload) <= 200
        if not (sizes_ok and idle_ok and seed_ok):
            raise ValueError("not a tokenpace order: a value is out of bounds")
        return order


@dataclass(frozen=True, slots=True)
class State:
    status: str  # procrastinate's: todo, doing, succeeded, failed, cancelled, aborted
    attempts: int


def _foreign() -> tuple[type[Exception], ...]:
    import procrastinate.exceptions
    import psycopg

    return (procrastinate.exceptions.ProcrastinateException, psycopg.Error, OSError)


class Queue:
    """The region queues of one PostgreSQL database, as the central scheduler and the agents use them."""

    def __init__(self, url: str, *, pool_size: int = 4) -> None:
        if not url.startswith(("postgresql://", "postgres://")):
            raise ConfigError("regions need a PostgreSQL store: give --db postgresql://USER@HOST/DB")
        try:
            import procrastinate  # the optional extra, with the PostgreSQL driver
        except ImportError:
            raise StoreError(
                "regions need the queue engine: run with `uv run --extra postgresql ...` "
                "or `pip install 'tokenpace[postgresql]'`"
            ) from None
        self.shown, self._secrets = hide_password(url)
        self._url = url
        connector = procrastinate.PsycopgConnector(conninfo=url, min_size=1, max_size=pool_size)
        self.app = procrastinate.App(connector=connector)
        self._errors = _foreign()

    def _say(self, exc: BaseException) -> StoreError:
        return StoreError(say(self.shown, exc, self._secrets))

    @contextlib.asynccontextmanager
    async def _mapped(self) -> AsyncIterator[None]:
        try:
            yield
        except self._errors as exc:
            raise self._say(exc) from None

    async def open(self) -> None:
        import psycopg

        async with self._mapped():
            # The pool retries a refused connection until its 30 s timeout, then says only that it timed out:
            # one connection first fails at once with the server's own reason.
            await (await psycopg.AsyncConnection.connect(self._url)).close()
            await self.app.open_async()

    async def close(self) -> None:
        with contextlib.suppress(*self._errors):
            await self.app.close_async()

    async def installed(self) -> bool:
        """Whether procrastinate's tables exist (``tokenpace serve`` with regions creates them)."""
        async with self._mapped():
            found = await self.app.connector.execute_query_one_async(
                "SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS present"
            )
        return bool(found["present"])

    async def install(self) -> bool:
        """Create procrastinate's tables if absent (the central process does, never an agent); True if it did."""
        if await self.installed():
            return False
        async with self._mapped():
            await self.app.schema_manager.apply_schema_async()
        return True

    async def defer(self, order: RunOrder) -> int:
        """Queue the order; the id of the order of the same lock that already waits, if one does."""
        import procrastinate.exceptions

        async with self._mapped():
            deferrer = self.app.configure_task(TASK, queue=queue_name(order.region), queueing_lock=order.lock)
            for _ in range(3):  # the waiting one may be taken between our two statements: then queue ours again
                try:
                    return await deferrer.defer_async(**asdict(order))
                except procrastinate.exceptions.AlreadyEnqueued:
                    rows = await self.app.connector.execute_query_all_async(
                        "SELECT id FROM procrastinate_jobs WHERE queueing_lock = %(lock)s AND status = 'todo'",
                        lock=order.lock,
                    )
                    if rows:
                        return int(rows[0]["id"])
        raise StoreError(f"{self.shown}: cannot queue {order.endpoint} {order.workload} in {order.region}")

    async def states(self, ids: Iterable[int]) -> dict[int, State]:
        """Each job's status and attempts, in one query (a job deleted since is absent)."""
        async with self._mapped():
            rows = await self.app.connector.execute_query_all_async(
                "SELECT id, status::text AS status, attempts FROM procrastinate_jobs WHERE id = ANY(%(ids)s)",
                ids=list(ids),
            )
        return {int(r["id"]): State(r["status"], int(r["attempts"])) for r in rows}

    async def cancel(self, job_id: int) -> bool:
        """Cancel a job that has not started; False if an agent already took it."""
        async with self._mapped():
            return bool(await self.app.job_manager.cancel_job_by_id_async(job_id))

    async def _stored(self, job_id: int) -> tuple[int, bool]:
        """How many of a job's requests are stored, and whether an agent that stored one still beats (its row in
        ``agents``, not stopped, its heartbeat within MISSED of its own intervals on the database's clock)."""
        found = await self.app.connector.execute_query_one_async(
            "SELECT COUNT(s.job_seq) AS stored, COALESCE(bool_or(a.stopped_at IS NULL AND a.heartbeat_at >"
            " extract(epoch FROM now()) - %(missed)s * a.heartbeat_s), false) AS alive"
            " FROM samples s LEFT JOIN agents a ON a.name = s.agent WHERE s.job_id = %(job)s",
            job=str(job_id),
            missed=MISSED,
        )
        return int(found["stored"]), bool(found["alive"])

    async def recover(self, stalled_after_s: float, among: Sequence[int] | None = None) -> list[tuple[int, str]]:
        """Jobs whose queue worker stopped beating mid-run, (id, what): left while the agent that stored its requests
        still beats (it ends the job itself), else "stored" (every request stored: succeeded), else "retried" once,
        then "failed"."""
        import procrastinate

        done = []
        async with self._mapped():
            for job in await self.app.job_manager.get_stalled_jobs(seconds_since_heartbeat=stalled_after_s):
                if job.id is None or (among is not None and job.id not in among):
                    continue
                # The outcome follows what was stored: a queue connection cut (pg_terminate_backend) stops the
                # worker's heartbeat while its job runs on; retrying it ran it twice, and failing it said failed
                # of a job whose every request was stored.
                stored, alive = await self._stored(job.id)
                try:
                    requests = RunOrder.from_kwargs(job.task_kwargs).requests
                except ValueError:  # no order of ours: nothing of it can be stored
                    requests = None
                if alive:
                    continue  # still measuring, or finishing it itself: looked at again next time
                if requests is not None and stored >= requests:
                    await self.app.job_manager.finish_job(job, procrastinate.jobs.Status.SUCCEEDED, delete_job=False)
                    done.append((job.id, "stored"))
                elif job.attempts < RETRIES:
                    await self.app.job_manager.retry_job(job)
                    done.append((job.id, "retried"))
                else:
                    await self.app.job_manager.finish_job(job, procrastinate.jobs.Status.FAILED, delete_job=False)
                    done.append((job.id, "failed"))
        for job_id, what in done:
            if what == "stored":
                log.info("job %d: its queue worker stopped answering, every request stored: succeeded", job_id)
            else:
                log.warning("job %d: its agent stopped answering mid-run: %s", job_id, what)
        return done
