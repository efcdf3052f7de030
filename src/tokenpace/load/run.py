"""Take samples: N requests per endpoint, C at a time, every one ending as a stored sample.

Everything that costs CPU and is not the measurement happens off the clock: prompts and request bytes are
built before the first request, connections are opened before measuring, and decoding waits until a stream
has ended. The client's own loop lag is watched throughout so a run whose client was the bottleneck is
flagged rather than trusted.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import random
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

import aiohttp

from tokenpace.clients import protocol_for
from tokenpace.clients.base import HttpRequest, WireProtocol, undecodable
from tokenpace.clients.transport import Limits, Timeouts, new_session, record, warm
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.workloads import Workload
from tokenpace.load.coldstart import ColdStarts
from tokenpace.load.decodegate import DecodeGate
from tokenpace.load.lag import LoopLag
from tokenpace.measure.failures import Failure
from tokenpace.measure.sample import Origin, RunRecord, Sample, Source, make_sample
from tokenpace.measure.timing import Recording
from tokenpace.prompts.corpus import Corpus
from tokenpace.prompts.prompt import Prompt, build_prompt
from tokenpace.prompts.tokens import preload as preload_tokenizer

DECODER_SWITCH_INTERVAL_S = 0.0002
# A closed loop's streams start this far apart: released all at once, equal streams end together, and every
# round boundary the client writes them all back to back, each waiting on the ones before (docs/accuracy.md).
STAGGER_S = 0.0005


QUIET_MAX_S = 300.0  # the longest garbage collection is held off while runs overlap (see quiet_interpreter)
_quiet_lock = threading.Lock()
_quiet_runs = 0  # runs overlap under `tokenpace serve`: the first one in quiets, the last one out restores
_quiet_restore: tuple[bool, float] = (True, 0.005)
_quiet_since = 0.0  # time.monotonic() of the last collection while quiet
_full_at = 0.0  # time.monotonic() of the last full collection on the way in


@contextlib.contextmanager
def quiet_interpreter() -> Iterator[None]:
    """No pauses of the interpreter's own while streams are timed; everything is restored afterwards.

    A full garbage collection over tens of thousands of chunk records stalled the loop for ~100 ms at 256
    streams (bench/fidelity.py), so collection waits until the run ends; and a short GIL switch interval makes
    the decoder thread hand the GIL back within a fraction of a millisecond when bytes arrive (default 5 ms).
    Under serve, overlapping runs could keep collection off for good: a run that enters after more than
    QUIET_MAX_S without one collects first, one bounded pause every five minutes at worst rather than
    unbounded memory. On the way in, only the young generations are collected unless a full collection is
    QUIET_MAX_S old: under serve a full one walks the whole heap (pages and rows kept for readers), a pause of
    tens of milliseconds on the loop that serves the board and times the runs already in flight elsewhere.
    """
    global _quiet_runs, _quiet_restore, _quiet_since, _full_at
    with _quiet_lock:
        if _quiet_runs == 0:
            if time.monotonic() - _full_at > QUIET_MAX_S:
                gc.collect()
                _full_at = time.monotonic()
            else:
                gc.collect(1)
            _quiet_restore = (gc.isenabled(), sys.getswitchinterval())
            gc.disable()
            sys.setswitchinterval(DECODER_SWITCH_INTERVAL_S)
            _quiet_since = time.monotonic()
        elif _quiet_restore[0] and time.monotonic() - _quiet_since > QUIET_MAX_S:  # (only if it was on before)
            gc.collect()
            _quiet_since = time.monotonic()
        _quiet_runs += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_runs -= 1
            if _quiet_runs == 0:
                sys.setswitchinterval(_quiet_restore[1])
                if _quiet_restore[0]:
                    gc.enable()


def yield_to_the_loop() -> None:
    """Lowest CPU priority for the decoder thread, so on a busy core the kernel runs the timing loop first."""
    with contextlib.suppress(AttributeError, OSError):  # not every platform lets a thread change its own
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


class Refusals:
    """The optional request field each endpoint refused: its later requests are built without it.

    Whoever calls run_workload() keeps one for as long as the lesson should last: the sampler for its lifetime, since
    under serve every run would otherwise send a refused request first (billed perhaps, never a sample;
    Job.worst_case allows for one per run), and ``tokenpace run`` for the command. Explicit rather than a
    module global, so two samplers, or two tests, never learn from each other's endpoints.
    """

    def __init__(self) -> None:
        self._by_endpoint: dict[Endpoint, Failure] = {}

    def __contains__(self, endpoint: Endpoint) -> bool:
        return endpoint in self._by_endpoint

    def get(self, endpoint: Endpoint) -> Failure | None:
        """The failure that showed the endpoint refused a field; None while it has refused none."""
        return self._by_endpoint.get(endpoint)

    def remember(self, endpoint: Endpoint, failure: Failure) -> None:
        self._by_endpoint[endpoint] = failure


class SampleSink(Protocol):
    def add_sample(self, sample: Sample) -> None: ...
    def add_run(self, run: RunRecord) -> None: ...


@dataclass
class RunResult:
    run: RunRecord
    samples: list[Sample] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How many requests, how many at once, with which limits: one run_workload() call's options.

    Not a plan: that word is the provider's billing plan (Endpoint.plan, with its budget and cadence).
    """

    requests: int = 10
    concurrency: int = 1
    timeouts: Timeouts = field(default_factory=Timeouts)
    warmup: bool = True
    seed: int | None = None  # None: fresh prompts every run
    keep_prompts: bool = False  # store each prompt's text with its sample (the fingerprint is always kept)
    source: Source = "one-shot"  # the service's sampler says "scheduled"
    publish: bool = False  # rank these samples on the board (always, for scheduled ones)
    limits: Limits = field(default_factory=Limits)  # bytes a response may bring
    origin: Origin = field(default_factory=Origin)  # a region's agent and its job; this process by default


async def _measure_endpoint(
    endpoint: Endpoint,
    workload: Workload,
    options: RunOptions,
    run_id: str,
    seed: int,
    keep: Callable[[Sample], None],
    decoder: ThreadPoolExecutor,
    corpus: Corpus | None,
    lag: LoopLag,
    refusals: Refusals,
    cold: ColdStarts,
) -> None:
    """Take ``options.requests`` samples of one endpoint, decoding each on the decoder thread as it ends.

    A workload with its own concurrency (the parallel one) releases its requests in groups of that size, all
    of a group at once, the next group when the last one has finished. Otherwise ``pool`` workers take the
    requests in turn, the k-th starting k * STAGGER_S after the first. Requests released together share the
    idle time measured just before their release (coldstart.py). A paired workload (cached-10k) sends requests
    2k and 2k+1 as one pair, the second once the first has ended, ``options.concurrency`` pairs at a time; each
    pair is a group.
    """
    loop = asyncio.get_running_loop()
    proto = protocol_for(endpoint.protocol)

    stop = threading.Event()

    def build() -> tuple[list[Prompt], list[HttpRequest]]:
        prompts: list[Prompt] = []
        requests: list[HttpRequest] = []
        for i in range(options.requests):
            if stop.is_set():  # stopped (Ctrl-C, SIGTERM): the thread is waited for, so end now
                break
            if workload.paired:  # a pair's turns share their seed: the same prefix, a different task
                prompts.append(build_prompt(workload, seed + i // 2, corpus, turn=i % 2 + 1))
            else:
                prompts.append(build_prompt(workload, seed + i, corpus))
            requests.append(proto.request(endpoint, prompts[-1]))
        return prompts, requests

    # Off the loop: a 100k prompt costs about a second of CPU, which would stall other runs' clocks (serve).
    try:
        prompts, requests = await loop.run_in_executor(decoder, build)
    finally:
        stop.set()
    if cold.needs_recall(endpoint):  # the store's word on its idle time, once: a read, off the loop
        await loop.run_in_executor(None, cold.recall, endpoint)
    decoding: list[asyncio.Future[Sample]] = []
    pool = workload.concurrency or options.concurrency

    def decode(rec: Recording, started: datetime, i: int, group: str | None, idle_s: float | None) -> Sample:
        gate.wait()  # on the decoder thread: the next requests are written first
        try:
            timeline = proto.decode(rec)
        except Exception as exc:  # a decoder's bug must not lose the request: it still ends as a sample
            timeline = undecodable(rec, exc)
        bound = lag.bound_during(rec.t_start_ns, rec.t_end_ns or rec.t_start_ns)
        published = options.publish or options.source == "scheduled"
        return make_sample(
            run_id, endpoint, workload.name, started, timeline, prompts[i], group, options.keep_prompts,
            source=options.source, published=published, client_bound=bound, origin=options.origin, seq=i,
            idle_s=idle_s, cold=cold.tag(endpoint, idle_s), prefix_turn=i % 2 + 1 if workload.paired else None,
        )  # fmt: skip

    def decoded(future: asyncio.Future[Sample]) -> None:
        if not future.cancelled() and future.exception() is None:
            keep(future.result())

    gate = DecodeGate()
    async with new_session(pool, options.timeouts, gate.written) as session:
        if options.warmup:
            await warm(session, proto.warm_url(endpoint), requests[0].headers, pool, options.timeouts)

        async def one(i: int, group: str | None = None, released: tuple[float | None] | None = None) -> None:
            """``released``: the idle time before this request's release, shared with the others released with it."""
            idle_s = cold.idle(endpoint) if released is None else released[0]

            def ended(rec: Recording, started: datetime) -> None:
                cold.ended(endpoint)
                future = loop.run_in_executor(decoder, decode, rec, started, i, group, idle_s)
                future.add_done_callback(decoded)
                decoding.append(future)

            cold.sent(endpoint)  # no await before send_request: its ``ended`` always balances this
            await send_request(
                session, proto, endpoint, requests[i], options.timeouts, options.limits, refusals, ended, gate
            )

        step = 2 if workload.paired else 1
        order = iter(range(0, options.requests, step))
        first_release = (cold.idle(endpoint),)

        async def worker(k: int) -> None:
            await asyncio.sleep(k * STAGGER_S)  # its place in the schedule: the wait before it is not the client's
            for i in order:
                group = f"{run_id[:12]}-p{i // 2}" if workload.paired else None
                for turn in range(i, min(i + step, options.requests)):  # a pair's turns one after the other
                    released = first_release if turn == i and i < pool * step else None
                    await one(turn, group, released)

        try:
            if workload.concurrency:
                for k, first in enumerate(range(0, options.requests, pool)):
                    release = (cold.idle(endpoint),)
                    async with asyncio.TaskGroup() as tg:
                        for i in range(first, min(first + pool, options.requests)):
                            tg.create_task(one(i, f"{run_id[:12]}-{k}", release))
            else:
                async with asyncio.TaskGroup() as tg:
                    for k in range(min(pool, options.requests)):
                        tg.create_task(worker(k))
        finally:
            await asyncio.gather(*decoding)


async def send_request(
    session: aiohttp.ClientSession, proto: WireProtocol, endpoint: Endpoint, request: HttpRequest,
    timeouts: Timeouts, limits: Limits, refusals: Refusals, ended: Callable[[Recording, datetime], None],
    gate: DecodeGate | None = None,
) -> None:  # fmt: skip
    """Send one request, its timing in a fresh recording; ``ended(recording, sent at)`` runs once it is over,
    on cancellation too, so a cancelled request is still a sample.

    An optional field the endpoint refused before is left out (the request was built before the clock
    started, like every request); one it refuses now is learnt, and the request asked again without it.
    """
    if (refused := refusals.get(endpoint)) is not None:
        request = proto.without_extras(request, refused) or request
    rec, started = Recording(), datetime.now(UTC)
    try:
        await _record(session, request, timeouts, rec, proto, limits, gate)
        if rec.failure is not None and (plain := proto.without_extras(request, rec.failure)) is not None:
            # A negotiation, not a measurement: ask again without the refused field, clock restarted.
            refusals.remember(endpoint, rec.failure)
            rec, started = Recording(), datetime.now(UTC)
            await _record(session, plain, timeouts, rec, proto, limits, gate)
    finally:
        ended(rec, started)


async def _record(
    session: aiohttp.ClientSession, request: HttpRequest, timeouts: Timeouts, rec: Recording, proto: WireProtocol,
    limits: Limits, gate: DecodeGate | None,
) -> None:  # fmt: skip
    """transport.record, decoding held back (``gate``) from the moment it is asked for until it is written."""
    if gate is not None:
        gate.asking(rec)
    try:
        await record(session, request, timeouts, rec, proto.has_token, limits)
    finally:
        if gate is not None:
            gate.written(rec)  # at the latest: one that failed before its write is never written


def run_record(
    run_id: str, started: datetime, command: str, concurrency: int, requested: int, samples: Sequence[Sample],
    lag: LoopLag, cpu_s: float, seed: int | None,
) -> RunRecord:  # fmt: skip
    """The run's record: what it asked for and took, and the client's own health meanwhile (loop lag, CPU per
    event = process CPU / events decoded)."""
    events = sum(len(s.timeline.events) for s in samples)
    return RunRecord(
        id=run_id,
        started_at=started,
        finished_at=datetime.now(UTC),
        command=command,
        concurrency=concurrency,
        requested=requested,
        completed=len(samples),
        loop_lag_p50_ms=lag.p(50),
        loop_lag_p99_ms=lag.p(99),
        loop_lag_max_ms=max(lag.lags_ms, default=None),
        cpu_us_per_event=cpu_s * 1e6 / events if events else None,
        client_bound=lag.client_bound,
        seed=seed,
    )


async def run_workload(
    endpoints: Sequence[Endpoint],
    workload: Workload,
    options: RunOptions,
    sink: SampleSink | None = None,
    on_sample: Callable[[Sample], None] | None = None,
    command: str = "",
    corpus: Corpus | None = None,
    refusals: Refusals | None = None,
    cold: ColdStarts | None = None,
) -> RunResult:
    """Measure each endpoint in turn and record the run, including when it is interrupted.

    ``refusals``: what earlier runs learnt of optional fields each endpoint refuses, and where this run adds
    what it learns; None learns for this call only. ``cold``: when each endpoint's last request ended, and
    where this run adds its own (coldstart.py); None knows nothing before this call, and tags with the default
    threshold.
    """
    preload_tokenizer()
    refusals = Refusals() if refusals is None else refusals
    cold = ColdStarts() if cold is None else cold
    run_id = uuid.uuid4().hex
    seed = (
        options.seed if options.seed is not None else random.SystemRandom().getrandbits(31)
    )  # fits every database's INTEGER
    samples: list[Sample] = []

    def keep(sample: Sample) -> None:
        samples.append(sample)
        if sink is not None:
            sink.add_sample(sample)
        if on_sample is not None:
            on_sample(sample)

    lag = LoopLag()
    started = datetime.now(UTC)
    cpu0 = time.process_time()
    decoder = ThreadPoolExecutor(1, thread_name_prefix="tokenpace-decode", initializer=yield_to_the_loop)
    lag.start()
    try:
        with quiet_interpreter():
            for k, endpoint in enumerate(endpoints):  # endpoints never share a prompt, nonce included
                first = seed + k * options.requests
                await _measure_endpoint(
                    endpoint, workload, options, run_id, first, keep, decoder, corpus, lag, refusals, cold
                )
    finally:
        await lag.stop()
        decoder.shutdown()
        concurrency = workload.concurrency or options.concurrency
        requested = options.requests * len(endpoints)
        cpu = time.process_time() - cpu0
        run = run_record(run_id, started, command, concurrency, requested, samples, lag, cpu, seed)
        if sink is not None:
            sink.add_run(run)
    return RunResult(run, samples)


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop where it is installed: its lower per-event cost is timing accuracy here."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop
