"""How late the client's own event loop runs: the error a busy client adds to every timestamp.

A timestamp is taken when the loop gets round to the bytes that arrived, so it is late by however long the
loop was busy (or the process was not scheduled) before it. A watch sleeps :data:`WATCH_INTERVAL_S` at a time
and keeps when each wake-up was due and how late it came; :meth:`LoopLag.lag_at` bounds one timestamp's
lateness from them, and measure/verdict.py judges each figure of a sample by the timestamps it is made of.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from array import array

from tokenpace.measure.metrics import percentile

# p99 lag above this means a run's timestamps were taken late enough to distort figures: the run is flagged
# (a load test's level says "client-bound"); each sample is judged on its own timestamps (lag_at).
CLIENT_BOUND_P99_MS = 5.0
# The watch's resolution: a timestamp's bound is at least the time since the last wake-up was due, so this
# is kept well under the smallest tolerance a figure has (measure/verdict.py, 2 ms). Up to 1,000 wake-ups a second
# cost the loop 3-4 % of a core (measured on the 2-core development machine) and 16 bytes each.
WATCH_INTERVAL_S = 0.001


class LoopLag:
    """Sleeps ``interval`` at a time in the background, keeping when each wake-up came and how late."""

    def __init__(self, interval: float = WATCH_INTERVAL_S) -> None:
        self.interval = interval
        self.lags_ms = array("d")  # how late each wake-up came, ms
        self.woke_ns = array("q")  # perf_counter_ns() of each wake-up, ascending, beside its lag
        self.started_ns: int | None = None
        self._task: asyncio.Task[None] | None = None

    async def _watch(self) -> None:
        clock, interval_ns = time.perf_counter_ns, round(self.interval * 1e9)
        while True:
            t0 = clock()
            await asyncio.sleep(self.interval)
            t1 = clock()
            # Appended in this order, and read by other threads only up to len(woke_ns): the pairs stay aligned.
            self.lags_ms.append(max(0, t1 - t0 - interval_ns) / 1e6)
            self.woke_ns.append(t1)

    def start(self) -> None:
        self.started_ns = time.perf_counter_ns()
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

    def lag_at(self, t_ns: int) -> float:
        """How late a timestamp taken on the loop at ``t_ns`` may be, in ms: t - the moment the latest wake-up
        at or before it was due (wake-up time - its lag), or t - the watch's start before the first wake-up.

        The loop took the timestamp no earlier than the bytes came; since that wake-up was due it was either
        idle, and would have taken them at once, or busy, and the wake-up's lag and the time since say how
        long. A stall shorter than the interval that ended before a wake-up was due goes unseen: the bound's
        resolution is the interval. Safe to call from another thread (the decoder) while the watch runs.
        """
        n = len(self.woke_ns)  # a snapshot: the loop keeps appending meanwhile, lags first
        k = bisect.bisect_right(self.woke_ns, t_ns, 0, n) - 1
        if k >= 0:
            due_ns = self.woke_ns[k] - self.lags_ms[k] * 1e6
        else:
            due_ns = t_ns if self.started_ns is None else min(t_ns, self.started_ns)
        return max(0.0, (t_ns - due_ns) / 1e6)
