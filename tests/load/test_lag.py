"""The client watches its own event loop: how late each timestamp may be, and a run it could not time honestly."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest

from tokenpace.load.lag import CLIENT_BOUND_P99_MS, READ_LAGS_KEPT, Busy, LoopLag


async def test_a_blocked_loop_is_flagged_client_bound() -> None:
    lag = LoopLag(interval=0.002, watch=True)
    lag.start()
    for _ in range(20):
        await asyncio.sleep(0.003)
        time.sleep(0.03)  # noqa: ASYNC251 - the point: the loop is busy and every wake-up due comes late
    await lag.stop()
    assert lag.lags_ms and max(lag.lags_ms) >= 20
    assert lag.p(99) is not None and lag.p(99) > CLIENT_BOUND_P99_MS  # type: ignore[operator]
    assert lag.client_bound


async def test_no_samples_is_not_client_bound() -> None:
    lag = LoopLag()
    assert lag.p(99) is None and not lag.client_bound


async def test_a_timestamp_taken_after_a_stall_is_bounded_by_the_stall() -> None:
    """A stream read once the loop is free again was read at least as late as the stall was long, and the
    decoder thread can say so while the loop is still stalled: no wake-up after the timestamp is needed."""
    lag = LoopLag(interval=0.001, watch=True)
    lag.start()
    await asyncio.sleep(0.02)
    before = time.perf_counter_ns()
    time.sleep(0.05)  # noqa: ASYNC251 - the stall: bytes that came meanwhile are read after it
    read = time.perf_counter_ns()
    found: list[float] = []
    decoder = threading.Thread(target=lambda: found.append(lag.lag_at(read)))
    decoder.start()
    decoder.join()  # the loop is still held: judged on the wake-ups before the stall
    await lag.stop()
    assert found[0] >= 50.0
    assert lag.lag_at(before) < 45.0  # the moment before it was not that late


async def test_a_quiet_loop_bounds_a_timestamp_by_about_its_interval() -> None:
    lag = LoopLag(interval=0.001, watch=True)
    lag.start()
    await asyncio.sleep(0.05)
    t = time.perf_counter_ns()
    bound = await asyncio.get_running_loop().run_in_executor(None, lag.lag_at, t)
    await lag.stop()
    assert 0.0 <= bound < 20.0  # the time since the last wake-up was due: ~1 ms, a busy test machine allowing


async def test_overlapping_runs_share_one_watch_and_keep_their_own_lags() -> None:
    """Runs timed on one loop at once (serve) add one watch between them, not one each; each run's lags are the
    wake-ups between its own start and stop, and the watch ends with the last run."""
    first, second = LoopLag(watch=True), LoopLag(watch=True)
    first.start()
    await asyncio.sleep(0.02)
    second.start()
    watches = [t for t in asyncio.all_tasks() if t.get_coro().__qualname__ == "_Watch._watch"]  # type: ignore[union-attr]
    assert len(watches) == 1
    await asyncio.sleep(0.02)
    await first.stop()
    kept = len(first.lags_ms)
    await asyncio.sleep(0.02)
    assert len(first.lags_ms) == kept  # stopped: its own wake-ups only
    assert len(second.lags_ms) > 0
    await second.stop()
    assert watches[0].done()


async def test_where_the_kernel_stamps_reads_their_lateness_is_the_lag_and_nothing_runs_between() -> None:
    lag = LoopLag(watch=False)
    lag.start()
    for late_ms in (0.1, 0.2, 30.0):
        lag.read(time.perf_counter_ns(), round(late_ms * 1e6))
    await asyncio.sleep(0.01)
    await lag.stop()
    assert sorted(lag.lags_ms) == [0.1, 0.2, 30.0]  # the reads' own: no wake-up of a watch among them
    assert lag.max_ms == 30.0
    t = time.perf_counter_ns()
    assert lag.bound({t: 4_000_000})(t) == 4.0 and lag.bound({})(t) == 0.0  # a read's spread, else exact


async def test_where_the_kernel_stamps_reads_a_late_read_of_one_packet_does_not_make_the_run_client_bound() -> None:
    """Reads 30 ms late that each brought one packet kept their kernel stamps exact: the wait shows as loop lag,
    and moves no figure. A run is client-bound once more than 1 % of its reads had a bound over the limit."""
    lag = LoopLag(watch=False)
    over = round(2 * CLIENT_BOUND_P99_MS * 1e6)
    for _ in range(1000):
        lag.read(0, 30_000_000)
    assert lag.p(99) == 30.0 and not lag.client_bound
    for _ in range(10):  # 1 % of the reads: not more than 1 %
        lag.read(0, over, over)
    assert not lag.client_bound
    lag.read(0, over, over)
    assert lag.client_bound


async def test_read_lags_are_kept_in_a_bounded_uniform_sample() -> None:
    lag = LoopLag(watch=False)
    for i in range(3 * READ_LAGS_KEPT):
        lag.read(0, 50_000 if i % 100 == 0 else 1_000)  # 1 % of reads 0.05 ms late, the rest 0.001 ms
    assert len(lag.lags_ms) == READ_LAGS_KEPT
    assert 0.005 < sum(x > 0.01 for x in lag.lags_ms) / READ_LAGS_KEPT < 0.02  # still about 1 % of the sample


async def test_the_read_lag_sample_is_uniform_over_the_whole_run() -> None:
    """Reads early, in the middle and late in a run are kept alike: a third each of a run in three equal parts."""
    lag = LoopLag(watch=False)
    for part in (1, 2, 3):
        for _ in range(2 * READ_LAGS_KEPT):
            lag.read(0, part * 1_000_000)
    kept = list(lag.lags_ms)
    assert len(kept) == READ_LAGS_KEPT and lag.max_ms == 3.0
    for ms in (1.0, 2.0, 3.0):
        assert 0.31 < kept.count(ms) / READ_LAGS_KEPT < 0.355, ms


def _waited_ns() -> int:
    """The calling thread's run-queue wait so far (Linux schedstat), ns."""
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1])


@pytest.mark.skipif(not os.path.exists("/proc/thread-self/schedstat"), reason="Linux schedstat")
def test_a_thread_sharing_the_interpreter_adds_its_run_queue_wait_to_the_loops_busy_time() -> None:
    """A decoder preempted while it holds the interpreter keeps the loop waiting though neither is on the CPU: its
    run-queue wait counts, and still counts once it has ended. Two threads pinned to one core, both spinning, each
    wait for the other."""
    core = {min(os.sched_getaffinity(0))}
    busy = Busy()
    before, waited = busy._now(), [0]
    stop = time.perf_counter() + 0.3
    spun, go = threading.Event(), threading.Event()

    def decoder() -> None:
        os.sched_setaffinity(0, core)  # this thread only (Linux: a thread's own affinity)
        busy.share()
        start = _waited_ns()
        while time.perf_counter() < stop:
            pass
        waited[0] = _waited_ns() - start
        spun.set()
        go.wait(5)  # alive while the loop samples, as it does every millisecond

    was = os.sched_getaffinity(0)
    os.sched_setaffinity(0, core)
    try:
        cpu0, mine0 = time.process_time_ns(), _waited_ns()
        thread = threading.Thread(target=decoder)
        thread.start()
        while time.perf_counter() < stop:
            pass
        spun.wait(5)
        busy._now()  # the last reading of the decoder's wait
        go.set()
        thread.join()
        grew, cpu, mine = busy._now() - before, time.process_time_ns() - cpu0, _waited_ns() - mine0
    finally:
        os.sched_setaffinity(0, was)
        busy.close()
    assert waited[0] > 10_000_000  # the decoder did wait for the core behind this thread
    assert grew >= cpu + mine + waited[0] - 5_000_000  # all three counted (a few ms of slack: samples are not atomic)
