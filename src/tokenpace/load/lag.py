"""How late the client's own event loop runs: the error a busy client adds to every timestamp."""

from __future__ import annotations

import asyncio
import bisect
import time

from tokenpace.measure.metrics import percentile

# p99 lag above this means timestamps were taken late enough to distort figures: the run is flagged.
CLIENT_BOUND_P99_MS = 5.0
VERDICT_WAIT_S = 1.0  # the longest a request's verdict waits for the loop's wake-up after its stream


class LoopLag:
    """Sleeps ``interval`` at a time in the background, keeping how late each wake-up was."""

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.lags_ms: list[float] = []
        self.woke_ns: list[int] = []  # perf_counter_ns() of each wake-up, ascending, beside its lag
        self._task: asyncio.Task[None] | None = None

    async def _watch(self) -> None:
        clock = time.perf_counter_ns
        while True:
            t0 = clock()
            await asyncio.sleep(self.interval)
            t1 = clock()
            # Appended in this order, and read by other threads only up to len(woke_ns): the pairs stay aligned.
            self.lags_ms.append(max(0.0, (t1 - t0) / 1e6 - self.interval * 1000))
            self.woke_ns.append(t1)

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

    def bound_during(self, start_ns: int, end_ns: int, wait_s: float = VERDICT_WAIT_S) -> bool:
        """Whether the p99 lag of the wake-ups between two moments (and the one just after) exceeds the bound.

        One request's own verdict: under serve, runs overlap and a page flood can slow the loop for seconds, so
        a run's overall p99 can hide the requests that were timed while the client was the bottleneck.

        Called from another thread (the decoder), it waits up to ``wait_s`` for the wake-up after ``end_ns``:
        after a stall the loop reads the late stream before its late wake-up is counted, and a request decoded
        meanwhile would be judged on the wake-ups before the stall. None within ``wait_s`` while the watch runs
        means the loop is still that late: client-bound.
        """
        deadline = time.perf_counter_ns() + round(wait_s * 1e9)
        while not (self.woke_ns and self.woke_ns[-1] > end_ns) and self._task is not None and not self._task.done():
            if time.perf_counter_ns() >= deadline:
                return True
            time.sleep(0.001)
        woke = self.woke_ns[: len(self.woke_ns)]  # a snapshot: the loop keeps appending meanwhile
        lo = bisect.bisect_left(woke, start_ns)
        hi = bisect.bisect_right(woke, end_ns) + 1  # the wake-up after the end saw any lag at the end
        p99 = percentile(self.lags_ms[lo : min(hi, len(woke))], 99)
        return p99 is not None and p99 > CLIENT_BOUND_P99_MS
