"""The engine: a dataset's request chains released to an endpoint under a load, every request sent a stored sample.

Both ways tokenpace measures are one load here. A scheduled or one-shot run (:func:`run_workload`) releases a
workload's fresh prompts (prompts/chains.py's FreshPrompts) to each endpoint in turn: a closed loop of
``concurrency`` streams, bursts of the workload's own concurrency (the parallel workload), the two turns of a
paired workload as a chain. A load test (:func:`run_load`, ``tokenpace bench``) releases any dataset in a
closed or open loop, for a request count or a duration (load/release.py), after its warm-up requests: prompts of
their own, never the dataset's (prompts/synthetic.py's WarmedUp). Either way:

- everything that costs CPU and is not the measurement happens off the clock and off the loop: chains and their
  request bytes are built ahead on the decoder thread (load/ahead.py), connections are opened before the first
  release, decoding (and adding each request to the run's running figures, load/running.py) waits until a
  stream has ended and its neighbours are written (load/decodegate.py), the interpreter kept quiet meanwhile
  (load/interpreter.py);
- each request's ``asked_ns`` is when the schedule meant to release it, so lateness of the client's own is measured,
  not hidden; the event loop's lag is watched, so each figure a busy client could have moved too far is flagged
  rather than trusted (load/lag.py, measure/verdict.py);
- every request sent ends as one :class:`~tokenpace.load.figures.Done` (its sample and what the load test adds),
  also when the run is stopped, and the run's record is written then too;
- memory follows the concurrency, not the request count: chains are built just ahead of their release within
  a bound of bytes; requests ended and not yet decoded are at most four per stream (64 at least; a decoder that
  falls behind holds the next send back, which the dispatch delay shows); each Done goes to the sink (the store)
  as it ends, and is kept whole only where the caller asks (``RunOptions.keep_done``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import random
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from tokenpace.clients import protocol_for
from tokenpace.clients.base import HttpRequest, undecodable
from tokenpace.clients.transport import Limits, Timeouts, new_session, warm
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.traffic import Load
from tokenpace.config.workloads import MAX_CONCURRENCY, Workload
from tokenpace.errors import TokenpaceError
from tokenpace.load.ahead import ChainsAhead, chains_ahead
from tokenpace.load.coldstart import ColdStarts
from tokenpace.load.decodegate import DecodeGate
from tokenpace.load.figures import Done
from tokenpace.load.interpreter import quiet_interpreter, request_ended, yield_to_the_loop
from tokenpace.load.lag import LoopLag
from tokenpace.load.release import Release, ReleaseBudget, release
from tokenpace.load.results import WorkerVerdict
from tokenpace.load.running import RunningFigures
from tokenpace.load.send import Refusals, send_request
from tokenpace.measure.sample import Origin, RunRecord, Sample, Source, make_sample
from tokenpace.measure.timing import Recording
from tokenpace.measure.verdict import judge_figures, stamps
from tokenpace.prompts.chains import Dataset, FreshPrompts, Request
from tokenpace.prompts.corpus import Corpus
from tokenpace.prompts.synthetic import WarmedUp
from tokenpace.prompts.tokens import preload as preload_tokenizer

DECODE_BACKLOG_PER_STREAM, DECODE_BACKLOG_MIN = 4, 64
OPEN_WARM = 64  # connections opened ahead of an open-loop test without a cap (it cannot know how many it needs)


class SampleSink(Protocol):
    def add_sample(self, sample: Sample) -> None: ...
    def add_run(self, run: RunRecord) -> None: ...


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How a run measures besides its load: limits, what to keep, where its samples go on the board.

    ``requests`` and ``concurrency`` are :func:`run_workload`'s load (a load test gives a Load instead). Not a
    plan: that word is the provider's billing plan (Endpoint.plan, with its budget and cadence)."""

    requests: int = 10
    concurrency: int = 1
    timeouts: Timeouts = field(default_factory=Timeouts)
    warm_connections: bool = True  # open the connections before the first release
    seed: int | None = None  # the prompts' (run_workload: None draws one) and an open loop's arrivals'
    keep_prompts: bool = False  # store each prompt's text with its sample (the fingerprint is always kept)
    source: Source = "one-shot"  # the service's sampler says "scheduled"
    publish: bool = False  # rank these samples on the board (always, for scheduled ones)
    limits: Limits = field(default_factory=Limits)  # bytes a response may bring
    origin: Origin = field(default_factory=Origin)  # a region's agent and its job; this process by default
    command: str = ""  # as stored with the run
    first_chain: int = 0  # the dataset's chain to start from: a sweep's points never send the same prompts
    round_seed: int | None = None  # a scheduled round's: its documents and tasks, shared (load/chains.py)
    run_id: str | None = None  # the run's id; None: a fresh one (the worker processes of one run share it)
    # Every Done in RunResult.done (a library caller's small run); False: only the run's running figures, so its
    # memory does not grow with its requests (tokenpace's commands and service: the samples are in the store).
    keep_done: bool = True


@dataclass
class RunResult:
    """A run's record, its running figures (every request's) and, with ``RunOptions.keep_done``, every request it
    sent, warm-up included (``Done.warmup``), in the order they ended."""

    run: RunRecord
    load: Load
    done: list[Done] = field(default_factory=list)
    workers: tuple[WorkerVerdict, ...] = ()  # a run shared by worker processes: each one's verdict (load/workers.py)
    summary: RunningFigures = field(default_factory=RunningFigures)

    @property
    def samples(self) -> list[Sample]:
        return [d.sample for d in self.done]


@dataclass
class _Run:
    """What every endpoint of one run shares: its id, options and load, the client's health, the decoder."""

    id: str
    load: Load
    options: RunOptions
    refusals: Refusals
    cold: ColdStarts | None
    lag: LoopLag
    decoder: ThreadPoolExecutor  # at nice 19: decodes while other requests of the run are being timed
    # At normal priority: decodes a stream that ended with nothing else of the run in flight. On a busy machine
    # a nice-19 thread gets almost no CPU, and a 400k-event stream took 20 s to decode with nothing to protect.
    idle_decoder: ThreadPoolExecutor
    keep: Callable[[Done], None]  # on the loop, as each request's decoding ends
    summary: RunningFigures  # added to on the decoder threads: 0.1-0.3 ms a request, too much for the loop
    last: int | None  # the most chains an endpoint's release can take; None: no end
    whole_chains: bool  # a workload run: each chain sent whole (a pair's turns), none of it warm-up
    in_flight: int = 0  # requests of the run sent and not yet ended
    adding: threading.Lock = field(default_factory=threading.Lock)  # the two decoder threads' turns at ``summary``
    ready: Callable[[], Awaitable[None]] | None = None  # awaited once set up, before the first release
    completed: int = 0  # requests ended (and decoded)
    events: int = 0  # their timelines' events


async def run_workload(
    endpoints: Sequence[Endpoint],
    workload: Workload,
    options: RunOptions,
    sink: SampleSink | None = None,
    on_done: Callable[[Done], None] | None = None,
    corpus: Corpus | None = None,
    refusals: Refusals | None = None,
    cold: ColdStarts | None = None,
) -> RunResult:
    """Measure each endpoint in turn with ``options.requests`` of the workload's fresh prompts; one run record.

    Endpoint k's prompts are built from seeds seed + k * requests + i: endpoints never share a prompt (with
    ``options.round_seed``, they share all of it but the nonce line, which follows those seeds). ``refusals``:
    what earlier runs learnt of optional fields each endpoint refuses, and where this run adds what it learns;
    None learns for this call only. ``cold``: when each endpoint's last request ended, and where this run adds
    its own (load/coldstart.py); None knows nothing before this call, and tags with the default threshold.
    """
    seed = options.seed if options.seed is not None else random.SystemRandom().getrandbits(31)  # any database's INTEGER
    options = dataclasses.replace(options, seed=seed)
    concurrency = workload.concurrency or options.concurrency
    n = options.requests
    last = math.ceil(n / 2) if workload.paired else n  # chains: a pair's two turns are one, sent whole
    load = Load(concurrency=concurrency, requests=last, burst=workload.concurrency is not None)
    targets = [
        (e, FreshPrompts(workload, seed + k * n, corpus, n, options.round_seed)) for k, e in enumerate(endpoints)
    ]
    cold = ColdStarts() if cold is None else cold
    return await _measure_all(targets, load, options, sink, on_done, refusals, cold, last=last, whole_chains=True)


async def run_load(
    endpoint: Endpoint,
    dataset: Dataset,
    load: Load,
    options: RunOptions | None = None,
    sink: SampleSink | None = None,
    on_done: Callable[[Done], None] | None = None,
    refusals: Refusals | None = None,
    summary: RunningFigures | None = None,
    ready: Callable[[], Awaitable[None]] | None = None,
) -> RunResult:
    """Release the dataset's requests under ``load`` until it is over; every request sent ends as a Done.

    ``ready``: awaited once the chains are built and the connections open, just before the first release (a
    worker process waits there for its run's common start, load/workers.py). ``summary``: where the level's
    figures are kept as its requests end (a new one, without an SLO, if None); a caller that holds it can still
    read a level that was stopped in progress.
    """
    last = None if load.requests is None else load.warmup + load.requests
    options = options or RunOptions()
    target = [(endpoint, dataset)]
    return await _measure_all(
        target, load, options, sink, on_done, refusals, None, last=last, whole_chains=False,
        ready=ready, summary=summary,
    )  # fmt: skip


async def _measure_all(
    targets: Sequence[tuple[Endpoint, Dataset]],
    load: Load,
    options: RunOptions,
    sink: SampleSink | None,
    on_done: Callable[[Done], None] | None,
    refusals: Refusals | None,
    cold: ColdStarts | None,
    *,
    last: int | None,
    whole_chains: bool,
    ready: Callable[[], Awaitable[None]] | None = None,
    summary: RunningFigures | None = None,
) -> RunResult:
    """Each target measured in turn under one run id, one loop-lag watch and one decoder thread; the run's
    record written at the end, also when stopped."""
    preload_tokenizer()
    done: list[Done] = []
    summary = RunningFigures() if summary is None else summary

    def keep(d: Done) -> None:
        run.completed += 1
        run.events += len(d.sample.timeline.events)
        if options.keep_done:
            done.append(d)
        if sink is not None:
            sink.add_sample(d.sample)
        if on_done is not None:
            on_done(d)
        request_ended()

    def lowest() -> None:  # each decoder thread as it starts (its first decode, after lag.start())
        yield_to_the_loop()
        lag.share()

    lag, started, cpu0 = LoopLag(), datetime.now(UTC), time.process_time()
    decoder = ThreadPoolExecutor(1, thread_name_prefix="tokenpace-decode", initializer=lowest)
    idle_decoder = ThreadPoolExecutor(1, thread_name_prefix="tokenpace-decode-idle", initializer=lag.share)
    refusals = Refusals() if refusals is None else refusals
    run_id = options.run_id or uuid.uuid4().hex  # the worker processes of one run share theirs (load/workers.py)
    run = _Run(run_id, load, options, refusals, cold, lag, decoder, idle_decoder, keep, summary, last, whole_chains)
    run.ready = ready
    lag.start()
    try:
        with quiet_interpreter():
            for endpoint, dataset in targets:
                await _measure_endpoint(run, endpoint, dataset)
    finally:
        await lag.stop()
        decoder.shutdown()
        idle_decoder.shutdown()
        if whole_chains:  # a workload run asks for requests; its Load counts chains (a pair is one)
            requested = options.requests * len(targets)
        elif load.requests is not None:
            requested = (load.warmup + load.requests) * len(targets)
        else:
            requested = run.completed
        concurrency = load.concurrency or load.max_concurrency or 0
        record = run_record(run, started, concurrency, requested, time.process_time() - cpu0)
        if sink is not None:
            sink.add_run(record)
    return RunResult(record, load, done, summary=summary)


async def _measure_endpoint(run: _Run, endpoint: Endpoint, dataset: Dataset) -> None:
    """One endpoint's part of a run: its chains released under the run's load, each request decoded as it ends."""
    loop = asyncio.get_running_loop()
    proto = protocol_for(endpoint.protocol)
    options, load, cold = run.options, run.load, run.cold

    def build(r: Request) -> HttpRequest:
        return proto.request(endpoint, r.prompt)

    start, warmups = options.first_chain, 0 if run.whole_chains else load.warmup
    if warmups:  # release i < warmups is warm-up i (WarmedUp): the dataset's chains are all measured
        dataset, start = WarmedUp(dataset, warmups, start, options.seed or 0), 0
    chains = ChainsAhead(dataset, start, build, run.decoder, run.last)
    ahead = chains_ahead(load, run.last)
    # Futures of the requests being decoded, each dropped once decoded: what is held follows the concurrency.
    budget, decoding, seq = ReleaseBudget(load), set[asyncio.Future[Done]](), iter(range(1 << 62))
    streams = load.concurrency or load.max_concurrency or MAX_CONCURRENCY  # the most in flight
    # Ended requests waiting for the decoder, at most: a few per stream, so a decoder a busy machine starves for a
    # moment (it runs at nice 19) does not hold sends back at once, and what waits still follows the concurrency.
    backlog = max(DECODE_BACKLOG_PER_STREAM * streams, DECODE_BACKLOG_MIN)
    room = asyncio.Event()  # set while fewer than ``backlog`` ended requests wait for the decoder
    room.set()
    broken: list[BaseException] = []  # a decoder's own failure (its futures are dropped as they end)
    published = options.publish or options.source == "scheduled"

    def idle() -> float | None:
        return None if cold is None else cold.idle(endpoint)

    def decode(rec: Recording, when: datetime, req: Request, r: Release, i: int) -> Done:
        gate.wait()  # on the decoder thread: the next requests are written first (load/decodegate.py)
        try:
            timeline = proto.decode(rec)
        except Exception as exc:  # a decoder's bug must not lose the request: it still ends as a sample
            timeline = undecodable(rec, exc)
        verdict = judge_figures(stamps(timeline), run.lag.bound(rec.doubt))
        chain = -1 if r.warmup and warmups else options.first_chain + r.chain - warmups
        group = f"{run.id[:12]}-{r.burst}" if r.burst is not None else None
        if req.prefix_turn is not None:  # a paired workload's turns: the pair is the group
            group = f"{run.id[:12]}-p{chain}"
        sample = make_sample(
            run.id, endpoint, dataset.name, when, timeline, req.prompt, group, options.keep_prompts,
            source=options.source, published=published, client_bound=verdict.bound, client_lag_ms=verdict.lag_ms,
            origin=options.origin, seq=i,
            idle_s=r.idle_s, cold=cold is not None and cold.tag(endpoint, r.idle_s), prefix_turn=req.prefix_turn,
            copying=published,
        )  # fmt: skip
        done = Done(sample, req.tag, r.warmup, r.asked_ns, chain)
        with run.adding:
            run.summary.add(done)
        return done

    def decoded(future: asyncio.Future[Done]) -> None:
        decoding.discard(future)
        if len(decoding) < backlog:
            room.set()
        if future.cancelled():
            return
        if (exc := future.exception()) is not None:
            broken.append(exc)  # raised once the run's requests have all ended, as it would have been
            return
        run.keep(future.result())

    async def send(req: Request, http: HttpRequest, r: Release) -> None:
        while not room.is_set():  # each recording waiting to be decoded holds its bytes: the backlog is bounded
            await room.wait()
        i = next(seq)

        def ended(rec: Recording, when: datetime) -> None:
            if cold is not None:
                cold.ended(endpoint)
            run.in_flight -= 1
            pool = run.decoder if run.in_flight else run.idle_decoder
            future = loop.run_in_executor(pool, decode, rec, when, req, r, i)
            decoding.add(future)
            if len(decoding) >= backlog:
                room.clear()
            future.add_done_callback(decoded)

        run.in_flight += 1  # no await before send_request: its ``ended`` always balances this
        if cold is not None:
            cold.sent(endpoint)
        await send_request(session, proto, endpoint, http, options.timeouts, options.limits, run.refusals, ended, gate)

    async def run_chain(r: Release) -> None:
        for k, (req, http) in enumerate(await chains.get(r.chain, ahead)):
            if k:  # a chain's later requests are released when the one before has ended
                warmup = r.warmup if run.whole_chains else budget.take(loop.time())
                if warmup is None:
                    return
                r = dataclasses.replace(r, asked_ns=time.perf_counter_ns(), warmup=warmup, idle_s=idle(), burst=None)
            await send(req, http, r)

    gate = DecodeGate()
    session = new_session(streams, options.timeouts, gate.written, None if run.lag.watching else run.lag)
    try:
        await chains.fill(ahead, needed=1)
        if cold is not None:
            await cold.recall(endpoint)  # the store's word on its idle time, once per endpoint
        if options.warm_connections and (first := chains.first_request) is not None:
            warm_n = min(streams, OPEN_WARM) if load.rate is not None else streams
            await warm(session, proto.warm_url(endpoint), first.headers, warm_n, options.timeouts)
        try:
            if run.ready is not None:
                await run.ready()
            await release(load, options.seed or 0, budget, run_chain, idle)
        except BaseExceptionGroup as group:  # a mistake found mid-way (a file's prompt too long) is one line
            if (mistakes := group.subgroup(TokenpaceError)) is None:
                raise
            raise mistakes.exceptions[0] from None
        finally:  # also when stopped: every request sent ends as a sample
            await asyncio.gather(*decoding)
        if broken:
            raise broken[0]
    finally:
        chains.stop.set()  # a chain being built ahead is the last one: stopping waits for no more
        await session.close()


def run_record(run: _Run, started: datetime, concurrency: int, requested: int, cpu_s: float) -> RunRecord:
    """The run's record: what it asked for and took, and the client's own health meanwhile (loop lag, CPU per
    event = process CPU / events decoded)."""
    events, lag = run.events, run.lag
    return RunRecord(
        id=run.id,
        started_at=started,
        finished_at=datetime.now(UTC),
        command=run.options.command,
        concurrency=concurrency,
        requested=requested,
        completed=run.completed,
        loop_lag_p50_ms=lag.p(50),
        loop_lag_p99_ms=lag.p(99),
        loop_lag_max_ms=lag.max_ms,
        cpu_us_per_event=cpu_s * 1e6 / events if events else None,
        client_bound=lag.client_bound,
        seed=run.options.seed,
    )
