"""The client watches its own event loop and flags a run it could not time honestly."""

from __future__ import annotations

import asyncio
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
