"""Load tests: a dataset's requests released to one endpoint in a closed or open loop, every one a sample.

The engine of ``tokenpace bench``. Closed loop: ``concurrency`` workers, each sending its next chain's requests
as the previous ones end. Open loop: a chain started at every arrival of the schedule (load/arrivals.py),
however many are still in flight (up to ``max_concurrency`` if set). Either way:

- the first ``warmup`` requests are sent under the same load, stored, and marked to be left out of figures;
- the measured ones stop at ``requests`` or after ``duration_s`` (from the first measured release; in an open
  loop, on the schedule's time), whichever comes first; requests in flight then are waited for, so nothing
  sent is lost;
- each request's ``asked_ns`` is when the schedule meant to release it (the arrival time, or the moment a
  worker or the previous turn freed it), so lateness of the client's own is measured, not hidden;
- prompts and request bytes are built ahead on the worker thread, decoding happens there after a stream ends,
  and the event loop's lag is watched, as in load/run.py.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tokenpace.clients import protocol_for
from tokenpace.clients.base import HttpRequest, undecodable
from tokenpace.clients.transport import Limits, Timeouts, new_session, warm
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.load import Load
from tokenpace.config.workloads import MAX_CONCURRENCY
from tokenpace.errors import TokenpaceError
from tokenpace.load.arrivals import intervals
from tokenpace.load.chains import Dataset, Request
from tokenpace.load.decodegate import DecodeGate
from tokenpace.load.figures import Done
from tokenpace.load.lag import LoopLag
from tokenpace.load.run import (
    STAGGER_S,
    Refusals,
    SampleSink,
    quiet_interpreter,
    run_record,
    send_request,
    yield_to_the_loop,
)
from tokenpace.measure.sample import RunRecord, make_sample
from tokenpace.measure.timing import Recording
from tokenpace.prompts.tokens import preload as preload_tokenizer

BUILD_BATCH = 16  # chains built per turn of the worker thread: short turns, so decoding never waits long
AHEAD_BYTES = 64 << 20  # what chains built ahead may hold; at least one is built whatever its size
ChainRunner = Callable[[int, int, bool | None], Coroutine[Any, Any, None]]  # (chain, asked_ns, warm-up or None: over)
PREBUILT = 5_000  # chains built before a test with a request count starts: the rest are built as it goes
OPEN_WARM = 64  # connections opened ahead of an open-loop test without a cap (it cannot know how many it needs)


@dataclass(frozen=True, slots=True)
class Settings:
    """What a load test needs besides its endpoint, dataset and load: limits, and what to keep."""

    timeouts: Timeouts = field(default_factory=Timeouts)
    limits: Limits = field(default_factory=Limits)
    warm_connections: bool = True
    keep_prompts: bool = False
    seed: int = 0  # the arrival schedule's
    first_chain: int = 0  # the dataset's chain to start from: a sweep's points never send the same prompts
    command: str = ""


@dataclass
class LoadResult:
    """A load test's run record and every request it sent, warm-up included (``Done.warmup``)."""

    run: RunRecord
    load: Load
    done: list[Done] = field(default_factory=list)


class _Budget:
    """How many requests may still be released, and whether the next one is warm-up or measured."""

    def __init__(self, load: Load) -> None:
        self.load = load
        self.released = 0
        self.measuring_since: float | None = None  # loop time of the first measured release

    def take(self, now: float) -> bool | None:
        """True for a warm-up request, False for a measured one, None once the test is over."""
        load = self.load
        if load.requests is not None and self.released >= load.warmup + load.requests:
            return None
        since = self.measuring_since
        if since is not None and load.duration_s is not None and now - since >= load.duration_s:
            return None
        warmup = self.released < load.warmup
        if not warmup and self.measuring_since is None:
            self.measuring_since = now
        self.released += 1
        return warmup


Built = tuple[tuple[Request, HttpRequest], ...]


def _weight(chain: Built) -> int:
    """About the bytes a built chain holds: each request's body, and its prompt's text beside it."""
    return sum(2 * len(http.body) for _, http in chain)


class _Chains:
    """The dataset's chains with their request bytes, built ahead on the worker thread, within AHEAD_BYTES.

    A chain is handed out once and then dropped: what is held is what is built and not yet sent, never the
    test's every prompt (a million requests, or chains of thousands of long prompts, would not fit).
    """

    def __init__(
        self, dataset: Dataset, first: int, build: Callable[[Request], HttpRequest], pool: ThreadPoolExecutor
    ) -> None:
        self.dataset, self.first, self.build, self.pool = dataset, first, build, pool
        self.ready: dict[int, Built] = {}
        self.count = 0  # chains built so far: the next one to build is this one
        self.held = 0  # bytes of the chains in ``ready``
        self.first_request: HttpRequest | None = None  # the warm-up's headers
        self.stop = threading.Event()  # set when the test stops: a batch being built ends after its chain
        self._filling: asyncio.Future[None] | None = None
        self._background: set[asyncio.Future[None]] = set()  # referenced until done, so never collected mid-way

    def _batch(self, start: int, n: int) -> list[Built]:
        out: list[Built] = []
        weight = 0
        for i in range(self.first + start, self.first + start + n):
            if self.stop.is_set() or (out and self.held + weight >= AHEAD_BYTES):
                break
            out.append(tuple((r, self.build(r)) for r in self.dataset.chain(i)))
            weight += _weight(out[-1])
        return out

    async def fill(self, upto: int, needed: int = 0) -> None:
        """Build chains until ``upto`` are built, or AHEAD_BYTES are held once the first ``needed`` are."""
        while self.count < upto and (self.count < needed or self.held < AHEAD_BYTES):
            if self._filling is None:
                batch = min(BUILD_BATCH, upto - self.count)
                self._filling = asyncio.ensure_future(self._extend(batch))
            await asyncio.shield(self._filling)

    async def _extend(self, n: int) -> None:
        try:
            more = await asyncio.get_running_loop().run_in_executor(self.pool, self._batch, self.count, n)
            for chain in more:
                self.ready[self.count] = chain
                self.held += _weight(chain)
                self.count += 1
                if self.first_request is None and chain:
                    self.first_request = chain[0][1]
        finally:
            self._filling = None

    async def get(self, i: int, ahead: int) -> Built:
        """Chain ``i``, building it now if it is not ready (late, and the wait shows it); then builds ahead."""
        if i >= self.count:
            await self.fill(i + 1, needed=i + 1)
        chain = self.ready.pop(i)
        self.held -= _weight(chain)
        if self.count < i + 1 + ahead and self._filling is None:
            task = asyncio.ensure_future(self.fill(i + 1 + ahead))
            self._background.add(task)
            task.add_done_callback(_settled)
            task.add_done_callback(self._background.discard)
        return chain


def _settled(task: asyncio.Future[None]) -> None:
    """Retrieve a background build's failure: the request that needs the chain meets it and reports it."""
    if not task.cancelled():
        task.exception()


def _ahead(load: Load) -> int:
    """Chains to build before the first release and keep ready after.

    With a request count, all of them (up to PREBUILT): building a prompt costs CPU that would otherwise run
    beside the streams being timed. With a duration only, about 60 s of an open loop, or 8 per stream. Either
    way no more than AHEAD_BYTES of them (load/engine.py's _Chains).
    """
    if load.requests is not None:
        return min(load.warmup + load.requests, PREBUILT)
    return max(round(load.rate * 60), 64) if load.rate is not None else max(8 * (load.concurrency or 1), 64)


async def run_load(
    endpoint: Endpoint,
    dataset: Dataset,
    load: Load,
    settings: Settings | None = None,
    sink: SampleSink | None = None,
    on_done: Callable[[Done], None] | None = None,
    refusals: Refusals | None = None,
) -> LoadResult:
    """Release the dataset's requests under ``load`` until it is over; every request sent ends as a Done."""
    preload_tokenizer()
    settings = settings or Settings()
    refusals = Refusals() if refusals is None else refusals
    proto = protocol_for(endpoint.protocol)
    run_id = uuid.uuid4().hex
    loop = asyncio.get_running_loop()
    done_list: list[Done] = []
    lag, started, cpu0 = LoopLag(), datetime.now(UTC), time.process_time()
    worker = ThreadPoolExecutor(1, thread_name_prefix="tokenpace-decode", initializer=yield_to_the_loop)
    chains = _Chains(dataset, settings.first_chain, lambda r: proto.request(endpoint, r.prompt), worker)
    budget, decoding, seq = _Budget(load), list[asyncio.Future[Done]](), iter(range(1 << 62))

    def decode(rec: Recording, when: datetime, i: int, req: Request, warmup: bool, asked: int, chain: int) -> Done:
        gate.wait()  # on the decoder thread: the next requests are written first (load/decodegate.py)
        try:
            timeline = proto.decode(rec)
        except Exception as exc:  # a decoder's bug must not lose the request: it still ends as a sample
            timeline = undecodable(rec, exc)
        bound = lag.bound_during(rec.t_start_ns, rec.t_end_ns or rec.t_start_ns)
        sample = make_sample(
            run_id, endpoint, dataset.name, when, timeline, req.prompt, None, settings.keep_prompts,
            source="one-shot", published=False, client_bound=bound, seq=i,
        )  # fmt: skip
        return Done(sample, req.tag, warmup, asked, chain)

    def decoded(future: asyncio.Future[Done]) -> None:
        if not future.cancelled() and future.exception() is None:
            done = future.result()
            done_list.append(done)
            if sink is not None:
                sink.add_sample(done.sample)
            if on_done is not None:
                on_done(done)

    async def send(req: Request, http: HttpRequest, asked: int, warmup: bool, chain: int) -> None:
        i = next(seq)

        def ended(rec: Recording, when: datetime) -> None:
            future = loop.run_in_executor(worker, decode, rec, when, i, req, warmup, asked, chain)
            future.add_done_callback(decoded)
            decoding.append(future)

        await send_request(session, proto, endpoint, http, settings.timeouts, settings.limits, refusals, ended, gate)

    async def run_chain(i: int, asked: int, warmup: bool | None) -> None:
        for k, (req, http) in enumerate(await chains.get(i, _ahead(load))):
            if k:  # later requests of a chain are released when the one before has ended
                asked, warmup = time.perf_counter_ns(), budget.take(loop.time())
            if warmup is None:
                return
            await send(req, http, asked, warmup, settings.first_chain + i)

    pool = load.concurrency or load.max_concurrency or MAX_CONCURRENCY
    gate = DecodeGate()
    session = new_session(pool, settings.timeouts, gate.written)
    lag.start()
    try:
        with quiet_interpreter():
            await chains.fill(_ahead(load), needed=1)
            if settings.warm_connections and (first := chains.first_request) is not None:
                warm_n = min(pool, OPEN_WARM) if load.rate is not None else pool
                await warm(session, proto.warm_url(endpoint), first.headers, warm_n, settings.timeouts)
            try:
                if load.rate is None:
                    await _closed(load, budget, run_chain)
                else:
                    await _open(load, settings.seed, budget, run_chain)
            except BaseExceptionGroup as group:  # a mistake found mid-way (a file's prompt too long) is one line
                if (mistakes := group.subgroup(TokenpaceError)) is None:
                    raise
                raise mistakes.exceptions[0] from None
            finally:  # also when stopped: every request sent ends as a sample
                await asyncio.gather(*decoding)
    finally:
        chains.stop.set()  # a chain being built ahead is the last one: stopping waits for no more
        await session.close()
        await lag.stop()
        worker.shutdown()
        requested = (load.warmup + load.requests) if load.requests is not None else len(done_list)
        concurrency = load.concurrency or load.max_concurrency or 0
        samples = [d.sample for d in done_list]
        cpu = time.process_time() - cpu0
        run = run_record(run_id, started, settings.command, concurrency, requested, samples, lag, cpu, settings.seed)
        if sink is not None:
            sink.add_run(run)
    return LoadResult(run, load, done_list)


async def _closed(load: Load, budget: _Budget, run_chain: ChainRunner) -> None:
    """``concurrency`` workers, each taking the next chain when its last one has ended, the k-th starting
    k * STAGGER_S after the first."""
    loop = asyncio.get_running_loop()
    chain_ids = iter(range(1 << 62))

    async def worker(k: int) -> None:
        await asyncio.sleep(k * STAGGER_S)  # streams staggered, so rounds do not end together (load/run.py)
        while (warmup := budget.take(loop.time())) is not None:
            await run_chain(next(chain_ids), time.perf_counter_ns(), warmup)

    async with asyncio.TaskGroup() as tg:
        for k in range(load.concurrency or 1):
            tg.create_task(worker(k))


async def _open(load: Load, seed: int, budget: _Budget, run_chain: ChainRunner) -> None:
    """A chain started at every arrival of the schedule; arrivals due while a cap holds them wait (and show it)."""
    assert load.rate is not None
    loop = asyncio.get_running_loop()
    cap = asyncio.Semaphore(load.max_concurrency) if load.max_concurrency else None
    t0_ns, t0 = time.perf_counter_ns(), loop.time()
    at = 0.0

    async def capped(i: int, asked: int, warmup: bool) -> None:
        assert cap is not None
        async with cap:
            await run_chain(i, asked, warmup)

    async with asyncio.TaskGroup() as tg:
        for i, gap in enumerate(intervals(load.rate, load.arrival, load.burstiness, seed)):
            at += gap
            asked = t0_ns + round(at * 1e9)
            # The loop's timers are as coarse as a millisecond (uvloop) and may fire early: sleep again for any
            # rest, so a request is never sent before its arrival time and its wait is never negative.
            while (rest := asked - time.perf_counter_ns()) > 0:  # noqa: ASYNC110 - a deadline, not an event
                await asyncio.sleep(rest / 1e9)
            # The duration is counted on the schedule: an arrival due inside it is released however late the
            # loop got there (a stalled loop must not shorten the test), and none due after it is.
            if (warmup := budget.take(t0 + at)) is None:
                break
            tg.create_task(capped(i, asked, warmup) if cap else run_chain(i, asked, warmup))
