"""A load shared by worker processes: each one's part (load/sharing.py), and runs against the simulator, in
process (load/workers.py's run_shared) and through `tokenpace bench --workers`, stopped by SIGTERM too."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import SimThread
from tokenpace import sim
from tokenpace.cli import main
from tokenpace.clients.transport import Timeouts
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.traffic import Load
from tokenpace.config.workloads import BUILTIN
from tokenpace.load.engine import RunOptions, RunResult
from tokenpace.load.interpreter import event_loop_factory
from tokenpace.load.results import from_json, read_result, to_json
from tokenpace.load.sharing import Strided, merged_record, most_workers, packed, parts, split_problem, unpacked
from tokenpace.load.workers import run_shared, watch_pipe
from tokenpace.measure.sample import RunRecord
from tokenpace.prompts.chains import Dataset
from tokenpace.prompts.datasets import open_dataset
from tokenpace.store.database import open_store

QUICK = sim.Scenario(ttft_ms=10, tokens_per_s=1000, output_tokens=5)
SMALL = ("--data", "synthetic:input=40,output=5")
OPTIONS = RunOptions(timeouts=Timeouts(connect=5, first_token=20, idle=20, total=60), seed=11)
MS = 1_000_000


def dataset(seed: int = 11) -> Dataset:
    return open_dataset("synthetic:input=40,output=5", BUILTIN["1k"], seed, None)


def shared(url: str, load: Load, workers: int = 2, options: RunOptions = OPTIONS) -> tuple[RunResult, int, int]:
    """run_shared against ``url``, with perf_counter_ns read here just before and just after it."""
    endpoint = Endpoint("sim", "sim", url, simulated=True)
    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        before = time.perf_counter_ns()
        result = runner.run(run_shared(endpoint, dataset(), load, options, workers=workers))
        return result, before, time.perf_counter_ns()


def test_each_worker_takes_an_even_part_and_its_own_seed() -> None:
    load = Load(concurrency=5, requests=101, warmup=1)
    p0, p1 = parts(load, OPTIONS, 2, "r" * 32)
    assert (p0.load.concurrency, p1.load.concurrency) == (3, 2)
    assert (p0.load.requests, p1.load.requests) == (51, 50) and (p0.load.warmup, p1.load.warmup) == (1, 0)
    assert p0.options.run_id == p1.options.run_id == "r" * 32 and p0.options.seed != p1.options.seed
    opened = Load(concurrency=None, rate=10, arrival="constant", requests=9, max_concurrency=7)
    q = parts(opened, OPTIONS, 3, "r")
    assert [x.load.rate for x in q] == pytest.approx([10 / 3] * 3) and [x.load.max_concurrency for x in q] == [3, 2, 2]
    assert [x.offset_ns for x in q] == [0, 100 * MS, 200 * MS]  # constant arrivals interleave: one every 100 ms


def test_workers_chains_are_disjoint_and_leave_no_gap() -> None:
    views = [Strided(dataset(), 40, 3, i) for i in range(3)]
    placed = sorted(v.placed_chain(k) for v in views for k in range(40, 50))
    assert placed == list(range(40, 70))
    assert views[1].chain(41) == dataset().chain(40 + 3 + 1)  # a view's chain is the dataset's, as placed


def test_what_cannot_be_split_says_so() -> None:
    assert most_workers(Load(concurrency=1, requests=100)) == 1  # an auto sweep's first level: in one process
    assert most_workers(Load(concurrency=None, rate=5, requests=None, duration_s=10)) > 1000
    assert "concurrency 2" in split_problem(Load(concurrency=2), 3, cpus=8)
    assert "-n 4" in split_problem(Load(concurrency=8, requests=3), 4, cpus=8)
    assert "on 2 CPUs" in split_problem(Load(concurrency=64), 5, cpus=2)
    assert split_problem(Load(concurrency=None, rate=5, max_concurrency=2), 2, cpus=2) == ""


def test_the_runs_record_is_its_workers_merged() -> None:
    now = datetime.now(UTC)

    def record(bound: bool, p99: float, cpu_us: float) -> RunRecord:
        return RunRecord("w", now, now, "", 2, 10, 10, 0.1, p99, p99 * 2, cpu_us, bound, seed=1)

    shares = parts(Load(concurrency=4, requests=20), OPTIONS, 2, "run")
    ends = [(shares[0], record(False, 1.0, 30.0), 10, 1000), (shares[1], record(True, 7.0, 50.0), 10, 3000)]
    merged = merged_record("run", now, OPTIONS, Load(concurrency=4, requests=20), ends, parent_cpu_s=0.004)
    assert merged.id == "run" and merged.client_bound and merged.concurrency == 4
    assert (merged.loop_lag_p99_ms, merged.loop_lag_max_ms, merged.requested, merged.completed) == (7.0, 14.0, 20, 20)
    assert merged.cpu_us_per_event == pytest.approx((4000 + 30_000 + 150_000) / 4000)  # parent's too
    assert merged.seed == OPTIONS.seed


def test_a_pipe_listened_to_stays_blocking() -> None:
    """uvloop made a watched pipe non-blocking: a big batch read in parts then passed for a worker gone, and a
    worker's send to a full pipe for a parent gone (seen under load: "load worker 0 stopped")."""
    import multiprocessing

    async def watched() -> bool:
        ours, theirs = multiprocessing.Pipe()
        loop = asyncio.get_running_loop()
        watch_pipe(loop, ours, lambda: None)
        try:
            return os.get_blocking(ours.fileno())
        finally:
            loop.remove_reader(ours.fileno())
            ours.close()
            theirs.close()

    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        assert runner.run(watched())


def test_two_workers_send_exactly_the_requests_asked_each_once_as_one_run_on_one_clock(
    sim_thread: Callable[..., SimThread],
) -> None:
    s = sim_thread(QUICK)
    options = RunOptions(timeouts=OPTIONS.timeouts, seed=11, first_chain=100)
    result, before, after = shared(s.url, Load(concurrency=4, requests=30, warmup=2), options=options)
    done = result.done
    assert len(done) == 32 and sum(d.warmup for d in done) == 2 and all(d.sample.ok for d in done)
    assert len(s.simulator.truth) == 32  # what the server received: no more, no fewer
    assert len({d.sample.prompt_fingerprint for d in done}) == 32  # no prompt sent twice
    assert sorted(d.chain for d in done if not d.warmup) == list(range(100, 130))  # the dataset's, from first_chain
    assert {d.sample.run_id for d in done} == {result.run.id} and result.run.completed == 32
    assert [(w.worker, w.concurrency, w.requests) for w in result.workers] == [(0, 2, 16), (1, 2, 16)]
    assert all(w.events > 0 and w.cpu_us_per_event is not None for w in result.workers)
    assert all(unpacked(*packed(d)) == d for d in done)  # what crossed the pipe is what was measured
    assert result.run.requested == 32 and result.run.cpu_us_per_event is not None
    # One clock: every worker's send and end lie within this process's window around the run, and the server
    # (a thread of this process) received each request after its worker sent it and wrote before it arrived.
    for d in done:
        t = d.sample.timeline
        assert before <= d.asked_ns <= t.t_sent_ns <= t.t_end_ns <= after
        truth = s.simulator.truth[t.response_id or ""]
        assert t.t_sent_ns <= truth.t_received_ns + MS  # (a millisecond for stamps converted between clocks)
        assert truth.events[0][0] <= t.events[0].t_ns + MS


def test_an_open_loop_shares_its_rate(sim_thread: Callable[..., SimThread]) -> None:
    s = sim_thread(QUICK)
    load = Load(concurrency=None, rate=40, arrival="constant", requests=24)
    result, _, _ = shared(s.url, load)
    assert len(result.done) == 24 and [w.rate for w in result.workers] == [20, 20]
    for worker in (0, 1):  # worker i sends chains i, i + 2, ...: each on a schedule of its own at 20/s
        asked = sorted(d.asked_ns for d in result.done if d.chain % 2 == worker)
        assert [round((b - a) / MS, 3) for a, b in itertools.pairwise(asked)] == [50.0] * 11


def test_bench_with_workers_keeps_each_workers_verdict(tmp_path: Path, sim_thread: Callable[..., SimThread]) -> None:
    s = sim_thread(QUICK)
    out, db = tmp_path / "out", str(tmp_path / "t.db")
    run = CliRunner().invoke(main, ["bench", "--base-url", s.url, "--model", "m", "-c", "4", "-n", "20",
                                    "--workers", "2", "--db", db, "--out", str(out), "-q", *SMALL])  # fmt: skip
    assert run.exit_code == 0, run.output
    (point,) = read_result(next(out.glob("*.json"))).points
    assert point.figures.requests == 20 and [w.worker for w in point.workers] == [0, 1]
    assert point.cpu_us_per_event is not None and all(w.loop_lag_p99_ms is not None for w in point.workers)
    assert "concurrency 4 on 2 workers: #0 (2 streams) loop lag P99 " in run.output
    with open_store(db) as store:
        samples, runs = store.samples(), store.runs()
    assert len(samples) == 21 and {x.run_id for x in samples} == {point.run_id} == {r.id for r in runs}
    # A document written before workers reads as one process's.
    doc = json.loads(next(out.glob("*.json")).read_text())
    del doc["points"][0]["workers"]
    assert from_json(json.dumps(doc)).points[0].workers == ()
    assert from_json(to_json(read_result(next(out.glob("*.json"))))).points[0].workers == point.workers


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("-c", "2", "--workers", "3"), "--workers 3: 3 workers for concurrency 2"),
        (("-c", "8", "-n", "2", "--workers", "4"), "give -n 4 or more"),
        (("-c", "4", "--sweep", "concurrency=1,4", "--workers", "2"), "concurrency 1"),
        (("-c", "512", "--workers", "1024"), "CPUs: at most"),
    ],
)
def test_workers_that_cannot_share_the_load_are_refused_in_one_line(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    run = CliRunner().invoke(main, ["bench", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", *args,
                                    "--db", str(tmp_path / "t.db"), "--out", str(tmp_path / "o")])  # fmt: skip
    assert run.exit_code == 2 and said in run.output, run.output


def test_sigterm_to_the_group_stops_every_worker_and_keeps_what_was_measured(
    tmp_path: Path, sim_thread: Callable[..., SimThread]
) -> None:
    s = sim_thread(sim.Scenario(ttft_ms=10, tokens_per_s=100, output_tokens=20))
    out, db = tmp_path / "out", tmp_path / "t.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokenpace", "bench", "--base-url", s.url, "--model", "m", "-c", "4", "--workers", "2",
         "--duration", "60s", "--db", str(db), "--out", str(out), "-q", *SMALL],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        for _ in range(1200):
            if len(s.simulator.truth) >= 20:
                break
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGTERM)  # as a supervisor stops a group: the workers hear it too, and ignore it
        _, errors = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143 and "stopped (SIGTERM)" in errors, errors
    (point,) = read_result(next(out.glob("*.json"))).points
    with open_store(str(db)) as store:
        samples, (run,) = store.samples(), store.runs()
    cancelled = [x for x in samples if not x.ok]
    # Every request sent is stored, those in flight when it stopped as failed (cancelled), with the run's record
    # merged from both workers' (each sent its own after its requests).
    assert len(samples) == point.figures.requests + 1 == run.completed >= 20 and len(cancelled) <= 4
    assert {x.run_id for x in samples} == {run.id} and run.cpu_us_per_event is not None
    assert not _left_in(proc.pid)


def _left_in(session: int) -> list[int]:
    """Processes of the session still alive (a worker that outlived its parent)."""
    deadline, found = time.monotonic() + 10, [0]
    while found and time.monotonic() < deadline:
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == session and fields[0] != "Z":
                found.append(int(stat.parent.name))
        time.sleep(0.1)
    return found


def test_a_workers_outbox_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A parent behind its workers (it stores every request) holds each worker back at OUTBOX messages, never
    letting a worker's memory grow with its requests; with its shipper gone (the parent gone) nothing waits."""
    import threading

    from tokenpace.load import workers

    monkeypatch.setattr(workers, "OUTBOX", 2)
    box = workers._Outbox()
    for message in (("a",), ("b",), ("c",)):  # no shipper: the third is dropped rather than waited for
        box.put(message)
    assert box.queue.qsize() == 2
    taken: list[tuple[str, ...] | None] = []
    release = threading.Event()

    def ship() -> None:
        release.wait(10)
        taken.extend(box.queue.get() for _ in range(3))

    box.shipper = threading.Thread(target=ship)
    box.shipper.start()
    putting = threading.Thread(target=box.put, args=(("d",),))
    putting.start()
    putting.join(0.3)
    assert putting.is_alive()  # full: it waits for the shipper
    release.set()
    putting.join(10)
    box.shipper.join(10)
    assert taken == [("a",), ("b",), ("d",)]
