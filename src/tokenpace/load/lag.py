"""How late the client's own event loop runs: how long bytes may have waited before the client read them.

Where the kernel stamps each read (clients/stamps.py, Linux), arrival times are the kernel's, which no busy loop
moves, and each read says how late the loop got to it (read time - kernel stamp): the loop's lag is measured on
the reads themselves, with nothing running between them. One stamp is exact for a read that brought one
packet; a read that brought several (the loop was busy while they came) has the stamp of the last, and its
first bytes may have come as early as the connection's previous read. Only then does a watch run: it sleeps
:data:`WATCH_INTERVAL_S` at a time while reads keep coming in batches (QUIET_S after the last), keeping when each
wake-up was due and how late it came, and :meth:`LoopLag.bound` takes the tighter of the two bounds.

Where reads carry no stamp, every timestamp is the loop's own, late by however long the loop was busy (or the
process was not scheduled) before it, and the watch runs throughout: :meth:`LoopLag.lag_at` bounds each
timestamp's lateness from it. Either way measure/verdict.py judges each figure of a sample by its timestamps.
"""

from __future__ import annotations

import asyncio
import bisect
import random
import time
from array import array
from collections.abc import Callable

from tokenpace.clients import stamps
from tokenpace.measure.metrics import percentile

# p99 lag above this means a run's timestamps were taken late enough to distort figures: the run is flagged
# (a load test's level says "client-bound"); each sample is judged on its own timestamps (lag_at).
CLIENT_BOUND_P99_MS = 5.0
# The watch's resolution: a timestamp's bound is at least the time since the last wake-up was due, so this
# is kept well under the smallest tolerance a figure has (measure/verdict.py, 2 ms). Up to 1,000 wake-ups a second
# cost the loop 3-4 % of a core (measured on the 2-core development machine) and 16 bytes each.
WATCH_INTERVAL_S = 0.001
READ_LAGS_KEPT = 1 << 16  # read lags kept per run (a uniform sample past this): p99 to well under a percent
QUIET_NS = 100_000_000  # the watch stops this long after the last read that brought several packets


class _Watch:
    """The one watch of an event loop (at one interval), shared by every run timed on it: overlapping runs under
    serve would each add a thousand wake-ups a second to the loop they time, and make it the bottleneck."""

    def __init__(self, interval: float, always: bool) -> None:
        self.interval = interval
        # when each wake-up came (perf_counter_ns, ascending) and how late (ms), replaced whole when trimmed so
        # that a reader on another thread holding the pair keeps a consistent one
        self.series: tuple[array[int], array[float]] = (array("q"), array("d"))
        self.started_ns = time.perf_counter_ns()
        self.views: list[LoopLag] = []
        self.loop = asyncio.get_running_loop()
        self.until_ns = 1 << 62 if always else 0  # it sleeps and wakes until then
        self.task: asyncio.Task[None] | None = None
        if always:
            self.task = self.loop.create_task(self._watch())

    def poke(self, now_ns: int) -> None:
        """Reads come in batches: watch for the next QUIET_NS."""
        self.until_ns = now_ns + QUIET_NS
        if self.task is None or self.task.done():
            self.task = self.loop.create_task(self._watch())

    async def _watch(self) -> None:
        clock, interval_ns = time.perf_counter_ns, round(self.interval * 1e9)
        while True:
            t0 = clock()
            await asyncio.sleep(self.interval)
            t1 = clock()
            woke, lags = self.series
            # Appended in this order, and read by other threads only up to len(woke): the pairs stay aligned.
            lags.append(max(0, t1 - t0 - interval_ns) / 1e6)
            woke.append(t1)
            if t1 > self.until_ns:
                return

    def trim(self) -> None:
        """Forget the wake-ups before the earliest run still watching: memory in proportion to the runs open."""
        woke, lags = self.series
        k = bisect.bisect_left(woke, min(v.since_ns for v in self.views))
        if k > len(woke) // 2:  # copied at most as often as the series doubles
            self.series = (woke[k:], lags[k:])


_watches: dict[tuple[asyncio.AbstractEventLoop, float, bool], _Watch] = {}


class LoopLag:
    """One run's loop lag: its reads' lateness where the kernel stamps reads, else its view of the loop's watch
    (``watch``), which sleeps ``interval`` at a time in the background, keeping when each wake-up came and how
    late: the wake-ups between the run's start and stop are its own."""

    def __init__(self, interval: float = WATCH_INTERVAL_S, watch: bool | None = None) -> None:
        self.interval = interval
        self.watching = stamps.SO_TIMESTAMPNS is None if watch is None else watch
        self.since_ns = 0
        self._until_ns: int | None = None
        self._watch: _Watch | None = None
        self._kept = array("d")  # the run's own lags, kept when it stops; the reads' sample, as they come
        self._reads = 0
        self._max = 0.0

    def bound(self, doubt: dict[int, tuple[int, int]]) -> Callable[[int], float]:
        """A recording's bound on each timestamp's error, ms: its watch's where timestamps are the loop's; else 0
        for a read of one packet, and for a read of several (``doubt``: stamp -> (stamp - the connection's
        previous read, read time)) the least of that and what the watch says of the loop at the read."""
        if self.watching:
            return self.lag_at

        def at(t_ns: int) -> float:
            if (seen := doubt.get(t_ns)) is None:
                return 0.0
            earliest_ns, read_ns = seen
            return min(earliest_ns / 1e6, max(0.0, self.lag_at(read_ns) - (read_ns - t_ns) / 1e6))

        return at

    def read(self, now_ns: int, late_ns: int, earlier_ns: int = 0) -> None:
        """A read at ``now_ns``, ``late_ns`` after its last packet came; ``earlier_ns`` > 0: it brought several, the
        first up to that much earlier, and is as late as that or as the watch saw the loop, whichever is less (the
        watch then runs a while). Kept in a uniform sample of READ_LAGS_KEPT (Algorithm R)."""
        self._reads += 1
        if earlier_ns and self._watch is not None:
            late_ns = min(late_ns + earlier_ns, round(self.lag_at(now_ns) * 1e6))
            self._watch.poke(now_ns)
        ms = late_ns / 1e6
        self._max = max(self._max, ms)
        if len(self._kept) < READ_LAGS_KEPT:
            self._kept.append(ms)
        elif (k := random.randrange(self._reads)) < READ_LAGS_KEPT:
            self._kept[k] = ms

    @property
    def max_ms(self) -> float | None:
        lags = self.lags_ms
        return None if not lags else max(self._max, max(lags))

    def start(self) -> None:
        key = (asyncio.get_running_loop(), self.interval, self.watching)
        self._watch = _watches.get(key) or _watches.setdefault(key, _Watch(self.interval, self.watching))
        self.since_ns = time.perf_counter_ns()
        self._watch.views.append(self)

    async def stop(self) -> None:
        watch = self._watch
        if watch is None or self._until_ns is not None:
            return
        if self.watching:
            self._kept = self.lags_ms
        self._until_ns = time.perf_counter_ns()
        watch.views.remove(self)
        if watch.views:
            watch.trim()
            return
        del _watches[(watch.loop, self.interval, self.watching)]
        if watch.task is not None:
            watch.task.cancel()
            await asyncio.gather(watch.task, return_exceptions=True)

    @property
    def lags_ms(self) -> array[float]:
        """How late each read came (a sample of them), or with no stamps how late each wake-up since the run's start
        came, ms (until its stop, once stopped)."""
        if not self.watching or self._watch is None or self._until_ns is not None:
            return self._kept
        woke, lags = self._watch.series
        lo = bisect.bisect_left(woke, self.since_ns, 0, len(woke))
        return lags[lo : len(woke)]

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
        if self._watch is None:
            return 0.0 if self.watching else float("inf")  # a run not started; reads never watched say nothing
        woke, lags = self._watch.series  # one pair: the loop may replace it meanwhile (trim), or append to it
        n = len(woke)  # a snapshot: the loop keeps appending meanwhile, lags first
        k = bisect.bisect_right(woke, t_ns, 0, n) - 1
        due_ns = woke[k] - lags[k] * 1e6 if k >= 0 else min(t_ns, self._watch.started_ns)
        return max(0.0, (t_ns - due_ns) / 1e6)
