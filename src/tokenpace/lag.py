"""How late the client's own event loop runs: the error a busy client adds to every timestamp."""

from __future__ import annotations

import asyncio
import time

from tokenpace.metrics import percentile

# p99 lag above this means timestamps were taken late enough to distort figures: the run is flagged.
CLIENT_BOUND_P99_MS = 5.0


class LoopLag:
    """Sleeps ``interval`` at a time in the background, keeping how late each wake-up was."""

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.lags_ms: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _watch(self) -> None:
        clock = time.perf_counter
        while True:
            t0 = clock()
            await asyncio.sleep(self.interval)
            self.lags_ms.append(max(0.0, (clock() - t0 - self.interval) * 1000))

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._watch())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def p(self, q: float) -> float | None:
        return percentile(self.lags_ms, q)

    @property
    def client_bound(self) -> bool:
        p99 = self.p(99)
        return p99 is not None and p99 > CLIENT_BOUND_P99_MS
