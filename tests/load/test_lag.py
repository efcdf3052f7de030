"""The client watches its own event loop and flags a run it could not time honestly."""

from __future__ import annotations

import asyncio
import threading
import time

from tokenpace.load.lag import CLIENT_BOUND_P99_MS, LoopLag


async def test_a_blocked_loop_is_flagged_client_bound() -> None:
    lag = LoopLag(interval=0.002)
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


async def test_a_stream_read_late_after_a_stall_is_client_bound_before_the_late_wake_up_is_counted() -> None:
    """The decoder thread judges a request while the loop is still stalled: no wake-up after its end yet."""
    lag = LoopLag(interval=0.002)
    lag.start()
    await asyncio.sleep(0.02)
    start = time.perf_counter_ns()
    time.sleep(0.05)  # noqa: ASYNC251 - the stall: the loop reads the stream late, its watch has not woken
    end = time.perf_counter_ns()
    verdict: list[bool] = []
    decoder = threading.Thread(target=lambda: verdict.append(lag.bound_during(start, end, wait_s=0.02)))
    decoder.start()
    decoder.join()  # the loop is held meanwhile: the late wake-up is counted only after this
    await lag.stop()
    assert verdict == [True]


async def test_a_quiet_stream_waits_for_the_next_wake_up_and_is_not_client_bound() -> None:
    lag = LoopLag(interval=0.002)
    lag.start()
    start = time.perf_counter_ns()
    await asyncio.sleep(0.02)
    end = time.perf_counter_ns()
    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(None, lag.bound_during, start, end, 1.0) is False
    assert lag.woke_ns[-1] > end  # judged on the wake-up after the end, which it waited for
    await lag.stop()
