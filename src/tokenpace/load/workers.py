"""Worker processes for big loads: one load test shared by N processes, each timing its streams on its own loop.

One process times its streams on one core (about 36 µs of CPU an event: docs/accuracy.md), so past a few
hundred streams the client, not the server, sets the pace. ``bench --workers N`` shares the load out:

- worker i takes its part (:func:`parts`): concurrency c split as evenly as can be (c // N, one more for the first
  c % N), an open loop's rate R / N and its cap likewise, the requests and the warm-up requests likewise, the
  same duration; and the dataset's chains first + k N + i (:class:`Strided`), so no two workers send the same
  prompt and each sees the dataset's whole spread. Its arrivals and warm-up prompts have a seed of its own, and
  a constant schedule's arrivals interleave (worker i starts i / R later);
- every worker is a spawned process (children.py: deaf to Ctrl-C, gone with its parent) running
  load/engine.py's :func:`run_load` on its own uvloop loop, with the run's one id. perf_counter_ns is
  CLOCK_MONOTONIC, one clock for the whole machine, so every worker's timestamps compare directly: the parent
  waits until each has built its chains and opened its connections, then gives them one start a moment ahead,
  and each waits for it before its first release;
- each request's :class:`Done` comes back as it ends (a thread at the lowest priority ships them, so the loop
  that times streams never pickles), and the parent feeds it to the sink and ``on_done`` as a local run does;
  the worker's run record comes last. The parent's record merges them (:func:`merged_record`): client-bound if
  any worker was, the worst worker's loop lag, CPU per event = the CPU of every worker and of the parent over
  the run / every event; each worker's own verdict is kept beside it (``RunResult.workers``).

Stopping (the parent's task cancelled by Ctrl-C or SIGTERM) tells every worker to stop; each ends what it had
in flight as samples and sends them with its record, as a local run keeps what it measured, and a worker that
fails stops the others. A load that splits over one worker only (concurrency 1) runs in this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import multiprocessing
import multiprocessing.connection
import os
import queue
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from tokenpace.children import child_started, deaf_children
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.traffic import Load
from tokenpace.errors import TokenpaceError
from tokenpace.load.engine import RunOptions, RunResult, SampleSink, run_load
from tokenpace.load.figures import Done
from tokenpace.load.interpreter import event_loop_factory, quiet_interpreter, request_ended, yield_to_the_loop
from tokenpace.load.running import RunningFigures
from tokenpace.load.send import Refusals
from tokenpace.load.sharing import Part, Strided, merged_record, most_workers, packed, parts, unpacked, verdict
from tokenpace.measure.sample import RunRecord, Sample
from tokenpace.prompts.chains import Dataset

START_AHEAD_NS = 50_000_000  # the common start, this far after the last worker said it was ready
WORKER_STOP_S = 60.0  # how long a stopped worker may take to end its requests and send them; then it is killed
OUTBOX = 4_096  # messages a worker holds for its parent at most: past it, its loop waits for its shipper
_READY, _DONE, _RUN, _END, _GO, _STOP = "ready", "done", "run", "end", "go", "stop"


async def run_shared(
    endpoint: Endpoint,
    dataset: Dataset,
    load: Load,
    options: RunOptions | None = None,
    sink: SampleSink | None = None,
    on_done: Callable[[Done], None] | None = None,
    refusals: Refusals | None = None,
    summary: RunningFigures | None = None,
    workers: int = 2,
) -> RunResult:
    """:func:`run_load` shared by ``workers`` processes (fewer if the load splits over fewer); one run, one record,
    its figures kept in ``summary`` (see run_load) as the workers' requests come back."""
    options = options or RunOptions()
    n = min(workers, most_workers(load))
    if n <= 1:
        return await run_load(endpoint, dataset, load, options, sink, on_done, refusals, summary=summary)
    run_id = options.run_id or uuid.uuid4().hex
    shares = parts(load, options, n, run_id)
    done: list[Done] = []
    summary = RunningFigures() if summary is None else summary

    def keep(d: Done) -> None:
        summary.add(d)
        if options.keep_done:
            done.append(d)
        if sink is not None:
            sink.add_sample(d.sample)
        if on_done is not None:
            on_done(d)
        request_ended()

    started, cpu0 = datetime.now(UTC), time.process_time()
    crew = _Crew(endpoint, dataset, shares, refusals, keep)
    try:
        with quiet_interpreter():  # no collection walking every Done kept so far, again and again
            await crew.until(lambda w: w.ready or w.ended)
            if not crew.failed():  # (a failure told every worker to stop)
                crew.tell((_GO, time.perf_counter_ns() + START_AHEAD_NS))
            await crew.until(lambda w: w.ended)
    except BaseException:  # stopped (cancelled) or broken: every worker ends its requests as samples first
        crew.tell((_STOP,))
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(crew.until(lambda w: w.ended), WORKER_STOP_S)
        raise
    finally:
        crew.close()
        record = merged_record(run_id, started, options, load, crew.ends(), time.process_time() - cpu0)
        if sink is not None:
            sink.add_run(record)
    crew.raise_failure()
    return RunResult(record, load, done, workers=tuple(verdict(*end) for end in crew.ends()), summary=summary)


class _Worker:
    """The parent's side of one worker process: its part, its pipe, and what it has said so far."""

    def __init__(self, part: Part, process: multiprocessing.process.BaseProcess, conn: Any) -> None:
        self.part, self.process, self.conn = part, process, conn
        self.ready = self.ended = False
        self.record: RunRecord | None = None
        self.failure: BaseException | str | None = None
        self.requests = self.events = 0


class _Crew:
    """Every worker of one run: started together, heard on the parent's loop, stopped together."""

    def __init__(
        self,
        endpoint: Endpoint,
        dataset: Dataset,
        shares: list[Part],
        refusals: Refusals | None,
        keep: Callable[[Done], None],
    ) -> None:
        self.loop = asyncio.get_running_loop()
        self.keep, self.news = keep, asyncio.Event()
        context = multiprocessing.get_context("spawn")  # a fork would copy this process's threads' locks as they are
        self.all: list[_Worker] = []
        with deaf_children():
            for part in shares:
                conn, child = context.Pipe()
                view = Strided(dataset, part.options.first_chain, part.workers, part.worker)
                args = (endpoint, view, part, refusals, child)
                process = context.Process(target=_child, args=args, name=f"tokenpace-load-{part.worker}", daemon=True)
                process.start()
                child.close()  # the child holds its end: our copy closed, EOF here means the child is gone
                self.all.append(_Worker(part, process, conn))
        for w in self.all:
            watch_pipe(self.loop, w.conn, self._heard, w)

    def _heard(self, w: _Worker) -> None:
        try:
            while w.conn.poll():
                for message in w.conn.recv():
                    self._take(w, message)
        except (EOFError, OSError):  # gone without its last word: killed, or crashed
            self.loop.remove_reader(w.conn.fileno())
            if not w.ended:
                w.ended, w.failure = True, f"load worker {w.part.worker} stopped (exit code {w.process.exitcode})"
                self.news.set()

    def _take(self, w: _Worker, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == _DONE:
            d = unpacked(*message[1])
            w.requests += 1
            w.events += len(d.sample.timeline.events)
            self.keep(d)
            return
        if kind == _READY:
            w.ready = True
        elif kind == _RUN:
            w.record = message[1]
        elif kind == _END:
            w.ended, w.failure = True, message[1]
            if w.failure is not None:
                self.tell((_STOP,))  # one worker failed: the run is over for all
        self.news.set()

    async def until(self, condition: Callable[[_Worker], bool]) -> None:
        while not all(condition(w) for w in self.all):
            self.news.clear()
            await self.news.wait()

    def failed(self) -> bool:
        return any(w.failure is not None for w in self.all)

    def tell(self, message: tuple[Any, ...]) -> None:
        for w in self.all:
            with contextlib.suppress(OSError):  # gone already
                w.conn.send(message)

    def ends(self) -> list[tuple[Part, RunRecord | None, int, int]]:
        return [(w.part, w.record, w.requests, w.events) for w in self.all]

    def close(self) -> None:
        for w in self.all:
            with contextlib.suppress(ValueError, OSError):
                self.loop.remove_reader(w.conn.fileno())
            w.process.join(0 if not w.ended else 5)
            if w.process.is_alive():
                w.process.kill()
                w.process.join()
            w.conn.close()

    def raise_failure(self) -> None:
        for w in self.all:
            if isinstance(w.failure, BaseException):
                raise w.failure
            if w.failure is not None:
                raise TokenpaceError(w.failure)


# In each worker process only.


def _child(endpoint: Endpoint, dataset: Strided, part: Part, refusals: Refusals | None, conn: Any) -> None:
    child_started()  # the parent stops us; a terminal's Ctrl-C is its to answer
    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        runner.run(_work(endpoint, dataset, part, refusals, conn))


class _Shipped:
    """The worker's sink: samples go back as Dones (with what a load test reads besides), the record at the end."""

    def __init__(self, out: _Outbox) -> None:
        self.out = out

    def add_sample(self, sample: Sample) -> None:
        pass

    def add_run(self, run: RunRecord) -> None:
        self.out.put((_RUN, run))


async def _work(endpoint: Endpoint, dataset: Strided, part: Part, refusals: Refusals | None, conn: Any) -> None:
    loop = asyncio.get_running_loop()
    out = _Outbox()
    sender = out.shipper = threading.Thread(target=_ship, args=(conn, out.queue), name="tokenpace-ship", daemon=True)
    sender.start()
    go: asyncio.Future[int] = loop.create_future()

    def heard() -> None:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            message = (_STOP,)
        if message[0] == _GO and not go.done():
            go.set_result(message[1])
        elif message[0] == _STOP:
            loop.remove_reader(conn.fileno())
            job.cancel()

    async def ready() -> None:
        out.put((_READY,))
        start_ns = await go + part.offset_ns
        while (rest := start_ns - time.perf_counter_ns()) > 0:  # noqa: ASYNC110 - a deadline, not an event
            await asyncio.sleep(rest / 1e9)

    def shipped(d: Done) -> None:
        out.put((_DONE, packed(dataset.placed(d, part.options.run_id or ""))))

    options = dataclasses.replace(part.options, keep_done=False)  # each Done goes to the parent as it ends
    measuring = run_load(endpoint, dataset, part.load, options, _Shipped(out), shipped, refusals, ready=ready)
    job = asyncio.ensure_future(measuring)
    watch_pipe(loop, conn, heard)
    failure: BaseException | str | None = None
    try:
        await job
    except asyncio.CancelledError:
        pass  # stopped: what was in flight ended as Dones, and the record went after them
    except TokenpaceError as exc:  # a mistake found mid-way (a file's prompt too long): the parent says it
        failure = exc
    except Exception:
        failure = f"load worker {part.worker} failed:\n{traceback.format_exc()}"
    finally:
        with contextlib.suppress(ValueError, OSError):
            loop.remove_reader(conn.fileno())
        out.put((_END, failure))
        out.put(None)
        await asyncio.to_thread(sender.join)


class _Outbox:
    """What a worker has for its parent, at most OUTBOX messages: a parent behind (storing every request) holds
    the worker back, its loop waiting (which its lag shows), never its memory growing with the requests; with the
    shipper gone (the parent gone) nothing waits."""

    def __init__(self) -> None:
        self.queue: queue.Queue[tuple[Any, ...] | None] = queue.Queue(OUTBOX)
        self.shipper: threading.Thread | None = None

    def put(self, message: tuple[Any, ...] | None) -> None:
        while True:
            try:
                self.queue.put(message, timeout=0.1)
                return
            except queue.Full:
                if self.shipper is None or not self.shipper.is_alive():
                    return


def _ship(conn: Any, out: queue.Queue[tuple[Any, ...] | None]) -> None:
    """Send what the worker has for its parent, as many messages at once as are waiting; None ends it."""
    yield_to_the_loop()  # pickling waits while the loop has streams to time
    while True:
        batch = [out.get()]
        with contextlib.suppress(queue.Empty):
            while True:
                batch.append(out.get_nowait())
        messages = [m for m in batch if m is not None]
        try:
            if messages:
                conn.send(messages)
        except (OSError, ValueError):  # the parent is gone: child_started's watch ends us
            return
        if batch[-1] is None:
            conn.close()
            return


def watch_pipe(loop: asyncio.AbstractEventLoop, conn: Any, heard: Callable[..., None], *args: Any) -> None:
    """Call ``heard`` whenever ``conn`` has something to read, the pipe left blocking: uvloop (libuv) makes a
    watched descriptor non-blocking, and a message read in parts then failed as if the other side had gone, as
    did the worker's sends when the parent's buffer was full."""
    loop.add_reader(conn.fileno(), heard, *args)
    os.set_blocking(conn.fileno(), True)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the platform says), at least one."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)
