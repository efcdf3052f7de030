"""The sampler: the one loop that measures every endpoint and workload on its cadence, within its limits.

Jobs and their due times come from ``cadence``. When a job is due it runs if its provider has room for its
requests (a parallel workload of 10 needs 10) and each of its plan's budget windows (its 24 h budget, its limits'
5 h or 7 d ...) has room for its worst case beside what the plan spent in that window; one that fits
only once the plan's runs in flight end waits for them, one that does not fit even then is skipped and counted.
Due times come from the database, so a restart neither bursts nor samples twice. All times are UTC epoch
seconds from an injectable :class:`Clock`. A run that finds its endpoint cold sends a wake request first (wake.py).
A 429 holds its plan's jobs as long as its server asked; those due meanwhile are skipped and counted (backoff.py).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import Counter, defaultdict, deque
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Literal, Protocol, TypeVar

from tokenpace.config.prices import Price
from tokenpace.config.settings import DEFAULT_COLD_AFTER_S, Budget, Spend
from tokenpace.load.coldstart import ColdStarts
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.load.send import Refusals
from tokenpace.prompts.corpus import Corpus
from tokenpace.schedule import backoff, rounds
from tokenpace.schedule.cadence import Job, Slot, next_due
from tokenpace.schedule.status import BudgetStatus, JobStatus, Status
from tokenpace.schedule.wake import Waker
from tokenpace.store import recent
from tokenpace.store.database import Store, utc
from tokenpace.store.usage import spent, spent_since

T = TypeVar("T")
log = logging.getLogger(__name__)
DAY_S = 86_400.0
MAX_NAP_S = 60.0  # wake at least this often, so a wall-clock jump or a suspend delays a run by little
# Requests this process measures at once, every provider together. Beyond it the loop would time its own backlog,
# not the endpoints: a config of 11,905 providers started every run at once, and SIGTERM waited 10 s for the loop.
MEASURED_AT_ONCE = 32


def usage(store: Store, provider: str, plan: str, since: float) -> Spend:
    """A plan's samples since ``since``: count, input (provider's count, else o200k), output (the larger).

    Samples the store could not write count too: they were spent all the same (``store.usage``).
    """
    return spent(store, provider, plan, since)


def job_last_started(store: Store, job: Job) -> float | None:
    """When the job's latest sample started, or None if it has none; one cancelled at shutdown is left out,
    so that a run cut short is retried soon rather than an interval later."""
    provider, plan, model, workload = job.key
    return recent.last_started(store, provider=provider, plan=plan, model=model, workload=workload, region=job.region)


class Clock(Protocol):
    def now(self) -> float: ...  # UTC epoch seconds
    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


RunJob = Callable[[Job], Awaitable[object]]
Fit = Literal["run", "wait", "later"]  # later: an interval later (a skip, or a budget that cannot be read)


class Sampler:
    """One loop for every job: due times, jitter, per-provider concurrency, per-plan budgets, a clean stop."""

    def __init__(
        self,
        jobs: Sequence[Job],
        store: Store,
        *,
        clock: Clock | None = None,
        run_job: RunJob | None = None,
        grace_s: float = 30.0,
        corpus: Corpus | None = None,
        inline_reads: bool = False,
        max_in_flight: int | None = MEASURED_AT_ONCE,
    ) -> None:
        """``run_job`` defaults to measuring the job into ``store``. Reads run on a thread so the loop keeps
        timing streams meanwhile; ``inline_reads`` runs them on the loop, for a virtual clock in tests.
        ``max_in_flight`` bounds the requests of every run at once (None: no bound, for runs measured elsewhere,
        by the regions' agents); a run wider than it runs alone."""
        first: dict[Slot, Job] = {}
        for job in jobs:
            first.setdefault(job.slot, job)  # one job per key and region
        self.jobs = tuple(first.values())
        self.store = store
        self.clock = clock or SystemClock()
        self.run_job = run_job or self._measure
        self.grace_s = grace_s
        self.corpus = corpus
        self.refused_fields = Refusals()  # learnt by the first run of each endpoint, for every later one
        # When each endpoint's last request ended: the store's word at its first run, this process's after.
        thresholds = {j.endpoint: j.cold_after_s for j in self.jobs}
        self.cold = ColdStarts(lambda e: thresholds.get(e, DEFAULT_COLD_AFTER_S), partial(recent.last_ended, store))
        self._inline = inline_reads
        self.waker = Waker(self.cold, store, self._read, self.clock.now, self._failed)
        self._started = self.clock.now()
        self._last: dict[Slot, float] = {}
        self._due: dict[Slot, float] = {}  # absent while a job runs
        self._running: dict[Slot, asyncio.Task[None]] = {}
        self._in_flight: Counter[str] = Counter()  # requests, per provider
        self._all_in_flight = 0  # requests, every provider together
        self._max_in_flight = math.inf if max_in_flight is None else max_in_flight
        self._providers = {job.endpoint.provider for job in self.jobs}
        self._limit: dict[str, int] = {}
        for job in self.jobs:
            p = job.endpoint.provider
            self._limit[p] = min(self._limit.get(p, job.concurrency), job.concurrency)
        self._budgets = {j.key[:2]: j.budgets for j in self.jobs if j.budgets}
        self._prices: defaultdict[tuple[str, str], dict[str, Price]] = defaultdict(dict)  # per plan, per model
        for j in self.jobs:
            if j.price is not None:
                self._prices[j.key[:2]][j.endpoint.model] = j.price
        self._used: dict[tuple[str, str], tuple[Spend, ...]] = {}
        self._skipped: Counter[tuple[str, str]] = Counter()
        self._last_skip: dict[tuple[str, str], float] = {}
        self._skips: dict[tuple[str, str], deque[float]] = defaultdict(deque)  # times, the last 24 h's only
        # Refused requests, stored as no sample, by the time they became known: the plan's widest window's only.
        self._refusals: dict[tuple[str, str], deque[tuple[float, Spend]]] = defaultdict(deque)
        self._wake = asyncio.Event()
        self._deadline: float | None = None  # set by stop(): in-flight runs are cancelled then
        self._failures = 0
        self.holds = backoff.Holds(store, self._read, self._failed)
        self.lateness: deque[float] = deque(maxlen=10_000)  # seconds from due to launch, the latest runs'
        self.round_salt = rounds.new_salt()  # each round's prompts follow it (schedule/rounds.py)

    async def _measure(self, job: Job) -> None:
        options = RunOptions(  # the parallel workload sets its own concurrency; the samples are in the store
            job.requests, 1, source="scheduled", publish=True, command="tokenpace serve", round_seed=job.round_seed,
            keep_done=False,
        )  # fmt: skip
        done = await run_workload(
            [job.endpoint], job.workload, options, self.store, corpus=self.corpus, refusals=self.refused_fields,
            cold=self.cold,
        )  # fmt: skip
        ok, bound = done.summary.ok, " (client-bound)" * done.run.client_bound
        log.info("%s: %d samples, %d ok%s", job.name, done.run.completed, ok, bound)

    async def _read(self, fn: Callable[[], T]) -> T:
        # A read waits on the store's writer thread; on the loop it would delay the streams being timed.
        return fn() if self._inline else await asyncio.to_thread(fn)

    def stop(self, grace_s: float | None = None) -> None:
        """No new runs; in-flight ones get ``grace_s`` (default: the sampler's) more, then are cancelled.

        Call it on the loop's thread (a signal handler added with ``loop.add_signal_handler`` is). Calling it
        again, say with ``grace_s=0`` on a second Ctrl-C, shortens the wait.
        """
        now = self.clock.now()
        grace = self.grace_s if grace_s is None else grace_s
        self._deadline = min(math.inf if self._deadline is None else self._deadline, now + grace)
        self._wake.set()

    async def run(self) -> None:
        """Sample until :meth:`stop`; cancelled runs record their requests as ``cancelled`` samples."""
        self._started = self.clock.now()
        for job in self.jobs:
            if self._deadline is not None:  # stopped while reading: thousands of jobs take seconds to read
                return
            last = None
            try:
                last = await self._read(partial(job_last_started, self.store, job))
            except Exception as exc:  # unknown: it starts soon, as a job never sampled does
                self._failed(f"cannot read when {job.name} last ran", exc)
            if last is not None:
                self._last[job.slot] = last
        # After the reads, which take seconds for thousands of jobs: due times spread from when sampling begins.
        now = self.clock.now()
        for job in self.jobs:
            self._due[job.slot] = next_due(job, self._last.get(job.slot), now)
        for provider, plan in self._budgets:
            try:
                self._used[provider, plan] = await self._spent((provider, plan), now)
            except Exception as exc:  # checked again before each run, which starts only if the check succeeds
                self._failed(f"cannot read the {provider}:{plan} budget's use", exc)
        await self.holds.read(now - backoff.LOOKBACK_S)  # a hold from before a restart still holds
        try:
            while self._deadline is None:
                self._wake.clear()
                try:
                    await self._nap(*await self._launch_due())
                except Exception as exc:  # a bug must not stop the sampler, and the web server beside it
                    self._failed("the sampler's loop", exc)
                    await self._nap_until(MAX_NAP_S)
            await self._drain()
        finally:  # run() itself cancelled: nothing may outlive it
            for task in self._running.values():
                task.cancel()
            await asyncio.gather(*self._running.values(), return_exceptions=True)

    async def _launch_due(self) -> tuple[set[str], set[tuple[str, str]]]:
        """Start every due job that fits, earliest first; returns the providers that had no room and the plans
        waiting for their runs in flight to end."""
        now = self.clock.now()
        blocked: set[str] = set()
        waiting: set[tuple[str, str]] = set()
        due = sorted((t, job.name, job) for job in self.jobs if (t := self._due.get(job.slot)) is not None)
        for t, _, job in due:
            provider, plan = job.key[:2]
            if t > now or provider in blocked or (provider, plan) in waiting:
                continue
            if self._all_in_flight and self._all_in_flight + job.width > self._max_in_flight:
                blocked.update(self._providers)  # every job waits for a run to end, the earliest due first
                break
            if self._in_flight[provider] + job.width > self._limit[provider]:
                blocked.add(provider)  # later jobs of this provider wait too, so a wide job is not starved
                continue
            held = self.holds.skips((provider, plan), now, job.name)  # skipped as for a budget, counted apart
            fit = "later" if held else "run" if not job.budgets else await self._fits(job, job.budgets, now)
            if self._deadline is not None:  # stop() came during the read: nothing may start after it
                break
            if fit == "wait":
                waiting.add((provider, plan))  # later jobs of the plan wait too, as for a provider's room
                continue
            if fit == "later":
                self._due[job.slot] = next_due(job, now, now)  # as if it had run: try again an interval later
                continue
            del self._due[job.slot]
            self.lateness.append(self.clock.now() - t)
            self._in_flight[provider] += job.width
            self._all_in_flight += job.width
            launched = rounds.seeded(job, now, self.round_salt)
            self._running[job.slot] = asyncio.create_task(self._run_one(launched, now), name=f"tokenpace {job.name}")
        return blocked, waiting

    async def _spent(self, plan: tuple[str, str], now: float) -> tuple[Spend, ...]:
        """What the plan spent in each of its budgets' windows up to ``now``: the store's, and its refusals."""
        widest = max(b.window_s for b in self._budgets[plan])
        refusals = self._refusals[plan]
        while refusals and refusals[0][0] < now - widest:
            refusals.popleft()
        sinces = [now - b.window_s for b in self._budgets[plan]]
        found = await self._read(partial(spent_since, self.store, *plan, sinces, self._prices.get(plan)))
        return tuple(sum((u for t, u in refusals if t >= since), f) for f, since in zip(found, sinces, strict=True))

    async def _fits(self, job: Job, budgets: tuple[Budget, ...], now: float) -> Fit:
        """run: in each window, used + worst case of the plan's runs in flight + this run's worst case <= caps x
        share; wait: it fits once those runs end; later: it fits in no case (counted as a skip) or the use is
        unknown."""
        plan = job.key[:2]
        try:
            self._used[plan] = spent_in = await self._spent(plan, now)
        except Exception as exc:  # unknown use may not be spent: wait an interval, as for a skip
            self._failed(f"not starting {job.name}: its budget cannot be checked", exc)
            return "later"
        # A run in flight may have stored some samples already: counted twice, which errs on the safe side.
        reserved = sum((j.worst_case() for j in self.jobs if j.slot in self._running and j.key[:2] == plan), Spend())
        need = job.worst_case()
        if all((used + reserved + need).fits(b) for used, b in zip(spent_in, budgets, strict=True)):
            return "run"
        if all((used + need).fits(b) for used, b in zip(spent_in, budgets, strict=True)):  # free when runs end
            return "wait"
        self._skipped[plan] += 1
        self._last_skip[plan] = now
        skips = self._skips[plan]
        skips.append(now)
        while skips[0] < now - DAY_S:  # only the last 24 h's are asked for
            skips.popleft()
        log.info("skipped %s: the %s:%s budget has no room for it in this window", job.name, *plan)
        return "later"

    async def _run_one(self, job: Job, started: float) -> None:
        try:
            known = job.endpoint in self.refused_fields
            await self.waker.before(job, self.run_job)
            self.waker.started(job)
            try:
                await self.run_job(job)
            except Exception as exc:  # one broken endpoint or failed write must not stop the others
                self._failed(f"scheduled run {job.name} failed", exc)
            finally:
                self.waker.ended(job)
            if not known and job.endpoint in self.refused_fields:
                # Its refused requests are stored as no sample, so usage() never sees them: count them here, from
                # now, no earlier than they were sent, so they leave the 24 h no sooner than the real ones do.
                self._refusals[job.key[:2]].append((self.clock.now(), job.refusals()))
            try:  # a failed write keeps its sample in store.unsaved (or rescued), where usage() still counts it
                await self._read(self.store.flush)
            except Exception as exc:
                self._failed(f"after {job.name}", exc)
            await self.holds.read(started, job.key[:2])
            before = self._last.get(job.slot)
            try:
                last = await self._read(partial(job_last_started, self.store, job))
            except Exception as exc:
                last = None
                self._failed(f"after {job.name}: cannot read when it last ran, taking its start", exc)
            # The database's time, as a restart will read it; a run that stored nothing still counts as having
            # run (at its launch), so a failing job is not retried at once.
            if last is None or (before is not None and last <= before):
                last = started
            self._last[job.slot] = last
            self._due[job.slot] = next_due(job, last, self.clock.now())
        finally:
            if job.slot not in self._due:  # whatever went wrong above, the job stays on the schedule
                self._due[job.slot] = next_due(job, started, self.clock.now())
            self._in_flight[job.endpoint.provider] -= job.width
            self._all_in_flight -= job.width
            del self._running[job.slot]
            self._wake.set()

    def _failed(self, what: str, exc: Exception) -> None:
        """Log an exception the sampler survives, in one line, and count it."""
        self._failures += 1
        log.warning("%s: %s", what, " ".join(str(exc).split()) or type(exc).__name__)

    async def _nap(self, blocked: set[str], waiting: set[tuple[str, str]]) -> None:
        """Sleep until the next due time of a provider with room and a plan not waiting, a run's end or stop()."""
        waits = [t for key, t in self._due.items() if key[0] not in blocked and key[:2] not in waiting]
        delay = min([MAX_NAP_S, *(t - self.clock.now() for t in waits)])
        if delay <= 0:
            return
        await self._nap_until(delay)

    async def _nap_until(self, delay: float) -> None:
        """Sleep ``delay`` seconds on the clock, or less if woken (a run ended, stop() was called)."""
        sleeper = asyncio.ensure_future(self.clock.sleep(delay))
        waker = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            waker.cancel()

    async def _drain(self) -> None:
        """Wait for in-flight runs until the stop deadline; the rest are cancelled (measure records them)."""
        while self._running and self._deadline is not None and (left := self._deadline - self.clock.now()) > 0:
            self._wake.clear()
            await self._nap_until(left)

    def _recent_skips(self, plan: tuple[str, str], now: float) -> int:
        """Skips of the plan in the 24 h before ``now`` (reads a copy: the page may ask from another thread)."""
        return sum(t >= now - DAY_S for t in tuple(self._skips.get(plan, ())))

    def status(self) -> Status:
        """Each job's next due time and last start, and each budget's use and skips (as of its last check)."""
        job_states = tuple(
            JobStatus(j, utc(self._due.get(j.slot)), j.slot in self._running, utc(self._last.get(j.slot)))
            for j in self.jobs
        )
        now = self.clock.now()
        budgets = tuple(
            BudgetStatus(
                *plan,
                caps,
                self._used.get(plan, tuple(Spend() for _ in caps)),
                self._skipped[plan],
                utc(self._last_skip.get(plan)),
                self._recent_skips(plan, now),
            )
            for plan, caps in self._budgets.items()
        )
        started = datetime.fromtimestamp(self._started, UTC)
        return Status(started, job_states, budgets, self._failures, self.holds.status())
