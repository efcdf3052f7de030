"""How late the client's own event loop runs: how long bytes may have waited before the client read them.

Where the kernel stamps reads (clients/stamps.py, Linux), arrival times are the kernel's, which no busy loop
moves, and each read says how late the loop got to it (read time - its last packet's arrival): the loop's lag is
measured on the reads themselves, with nothing running between them. A read that brought several packets (the
kernel counts them) has the last one's stamp, and its first bytes may have come earlier: no earlier than the
connection's previous read, nor earlier than the loop could have been kept from reading, which is at most what
this process spent on the CPU and waited for it since (:class:`Busy`: its CPU time and its loop and decoder
threads' waits in the run queue, sampled at most every millisecond as reads come). The lesser is the read's
bound, kept with the recording; a read of one packet is exact.

Where reads carry no stamp, a timestamp is taken when the loop gets round to the bytes, late by however long the
loop was busy (or the process was not scheduled) before it. A watch then sleeps :data:`WATCH_INTERVAL_S` at a
time and keeps when each wake-up was due and how late it came; :meth:`LoopLag.lag_at` bounds one timestamp's
lateness from them. Either way measure/verdict.py judges each figure of a sample by the timestamps it is made of.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import math
import os
import random
import time
from array import array
from collections.abc import Callable

from tokenpace.clients import stamps
from tokenpace.measure.metrics import percentile

# A run whose timestamps' bounds pass this at p99 could have had figures distorted: it is flagged (a load test's level
# says "client-bound"); each sample is judged on its own timestamps all the same (measure/verdict.py). Where the
# kernel stamps reads, a read's bound is its doubt (0 for one packet, however late it was read); else the watch's lag.
CLIENT_BOUND_P99_MS = 5.0
_BOUND_NS = round(CLIENT_BOUND_P99_MS * 1e6)
# The watch's resolution: a timestamp's bound is at least the time since the last wake-up was due, so this
# is kept well under the smallest tolerance a figure has (measure/verdict.py, 2 ms). Up to 1,000 wake-ups a second
# cost the loop 3-4 % of a core (measured on the 2-core development machine) and 16 bytes each.
WATCH_INTERVAL_S = 0.001
READ_LAGS_KEPT = 1 << 16  # read lags kept per run (a uniform sample past this): p99 to well under a percent
BUSY_EVERY_NS = 1_000_000  # how often the process's CPU and wait are sampled, at most: a read's bound's resolution
BUSY_KEPT = 1 << 14  # samples kept: the last 16 s or more; a read whose connection was quiet longer is bounded by that


class _Watch:
    """The one watch of an event loop (at one interval), shared by every run timed on it: overlapping runs under
    serve would each add a thousand wake-ups a second to the loop they time, and make it the bottleneck."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        # when each wake-up came (perf_counter_ns, ascending) and how late (ms), replaced whole when trimmed so
        # that a reader on another thread holding the pair keeps a consistent one
        self.series: tuple[array[int], array[float]] = (array("q"), array("d"))
        self.started_ns = time.perf_counter_ns()
        self.views: list[LoopLag] = []
        self.task = asyncio.get_running_loop().create_task(self._watch())

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

    def trim(self) -> None:
        """Forget the wake-ups before the earliest run still watching: memory in proportion to the runs open."""
        woke, lags = self.series
        k = bisect.bisect_left(woke, min(v.since_ns for v in self.views))
        if k > len(woke) // 2:  # copied at most as often as the series doubles
            self.series = (woke[k:], lags[k:])


_watches: dict[tuple[asyncio.AbstractEventLoop, float], _Watch] = {}


def _waited(fd: int) -> int:
    """A thread's run-queue wait so far, ns: the second field of its schedstat."""
    return int(os.pread(fd, 64, 0).split()[1])


def _schedstat() -> int | None:
    """The calling thread's ``/proc/thread-self/schedstat``, open; None where there is none."""
    try:
        return os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    except OSError:
        return None


class Busy:
    """How long this process could have kept its loop from reading, sampled as reads come: its CPU time (all its
    threads: one holding the interpreter keeps the loop waiting too) plus the run-queue wait of the loop's thread and
    of every thread that shares the interpreter with it (:meth:`share`: a decoder thread preempted while it holds
    the interpreter keeps the loop waiting though neither is on the CPU: 58 ms unseen with a core burned), each
    from its ``/proc/thread-self/schedstat``, at most every BUSY_EVERY_NS."""

    def __init__(self) -> None:
        self._schedstat = _schedstat()
        # The other threads': [their schedstat file, opened on each (share), their wait as last read].
        self._sharing: list[list[int]] = []
        self._when, self._spent = array("q"), array("q")

    def share(self) -> None:
        """On a thread that runs Python beside the loop (a decoder): its run-queue wait counts too."""
        if self._schedstat is not None and (fd := _schedstat()) is not None:
            self._sharing.append([fd, 0])  # appended whole under the interpreter lock: the loop sees it or not

    def _now(self) -> int:
        if self._schedstat is None:
            return time.process_time_ns()
        waited = _waited(self._schedstat)
        for other in self._sharing:
            with contextlib.suppress(OSError):  # a thread that has ended waits no more: its last reading stands
                other[1] = _waited(other[0])
            waited += other[1]
        return time.process_time_ns() + waited

    def sample(self, now_ns: int) -> None:
        if self._schedstat is None or (self._when and now_ns - self._when[-1] < BUSY_EVERY_NS):
            return
        if len(self._when) >= BUSY_KEPT:
            self._when, self._spent = self._when[BUSY_KEPT // 2 :], self._spent[BUSY_KEPT // 2 :]
        self._when.append(now_ns)
        self._spent.append(self._now())

    def since(self, since_ns: int) -> int | None:
        """At most how long the loop was kept busy since ``since_ns``, ns; None where no sample is that old."""
        k = bisect.bisect_right(self._when, since_ns) - 1
        return None if k < 0 or self._schedstat is None else self._now() - self._spent[k]

    def close(self) -> None:
        if self._schedstat is not None:
            for fd in (self._schedstat, *(fd for fd, _ in self._sharing)):
                os.close(fd)
            self._schedstat, self._sharing = None, []


class LoopLag:
    """One run's loop lag: how late its reads were read where the kernel stamps them (``read``), else its view of
    the loop's watch (``watching``), which sleeps ``interval`` at a time in the background, keeping when each
    wake-up came and how late: the wake-ups between the run's start and stop are its own."""

    def __init__(self, interval: float = WATCH_INTERVAL_S, watch: bool | None = None) -> None:
        self.interval = interval
        self.watching = stamps.SO_TIMESTAMPNS is None if watch is None else watch
        self.since_ns = 0
        self._until_ns: int | None = None
        self._watch: _Watch | None = None
        self._busy: Busy | None = None
        self._kept = array("d")  # the watch's lags once the run stops; the reads' sample as they come
        self._reads = 0
        self._next_kept = 1  # the count of reads at which the next one is kept
        self._w = 1.0  # Algorithm L's running weight, once the sample is full
        self._max = 0.0
        self._doubtful = 0  # reads whose timestamp's bound passed CLIENT_BOUND_P99_MS

    def read(self, now_ns: int, late_ns: int, doubt_ns: int = 0) -> None:
        """A read at ``now_ns`` that waited ``late_ns``, its timestamp exact to ``doubt_ns``: the wait kept in a uniform
        sample of READ_LAGS_KEPT (Li's Algorithm L, which draws random numbers only for the reads it keeps: a few per
        thousand once the sample is full), the doubt counted where it passes CLIENT_BOUND_P99_MS."""
        if self._busy is not None:
            self._busy.sample(now_ns)
        self._reads += 1
        if doubt_ns > _BOUND_NS:
            self._doubtful += 1
        ms = late_ns / 1e6
        if ms > self._max:
            self._max = ms
        if self._reads < self._next_kept:
            return
        if len(self._kept) < READ_LAGS_KEPT:
            self._kept.append(ms)
            self._next_kept += 1
            if len(self._kept) == READ_LAGS_KEPT:
                self._w = math.exp(math.log(1.0 - random.random()) / READ_LAGS_KEPT)
                self._skip()
            return
        self._kept[random.randrange(READ_LAGS_KEPT)] = ms
        self._w *= math.exp(math.log(1.0 - random.random()) / READ_LAGS_KEPT)
        self._skip()

    def _skip(self) -> None:
        """The next read Algorithm L keeps: floor(log(u) / log(1 - w)) reads after this one, u uniform in (0, 1]."""
        self._next_kept = self._reads + math.floor(math.log(1.0 - random.random()) / math.log(1.0 - self._w)) + 1

    def share(self) -> None:
        """On a thread that runs Python beside the loop, as it starts (the decoders): its run-queue wait counts as the
        loop's (Busy.share); nothing before :meth:`start` or without stamps."""
        if self._busy is not None:
            self._busy.share()

    def busy(self, since_ns: int) -> int | None:
        """At most how long the loop could have been kept from reading since ``since_ns`` (see Busy), ns."""
        return None if self._busy is None else self._busy.since(since_ns)

    def bound(self, doubt: dict[int, int]) -> Callable[[int], float]:
        """A recording's bound on each timestamp's error, ms: where the kernel stamped its reads, the bound of the read
        that gave it (``doubt``: stamp -> ns; 0 for a read of one packet); else the watch's (lag_at)."""
        if self.watching:
            return self.lag_at
        return lambda t_ns: doubt.get(t_ns, 0) / 1e6

    @property
    def max_ms(self) -> float | None:
        lags = self.lags_ms
        return None if not lags else max(self._max, max(lags))

    def start(self) -> None:
        self.since_ns = time.perf_counter_ns()
        if not self.watching:
            self._busy = Busy()
            self._busy.sample(self.since_ns)
            return
        key = (asyncio.get_running_loop(), self.interval)
        self._watch = _watches.get(key) or _watches.setdefault(key, _Watch(self.interval))
        self._watch.views.append(self)

    async def stop(self) -> None:
        if self._busy is not None:
            self._busy.close()
            self._busy = None
        watch = self._watch
        if watch is None or self._until_ns is not None:
            return
        self._kept = self.lags_ms
        self._until_ns = time.perf_counter_ns()
        watch.views.remove(self)
        if watch.views:
            watch.trim()
            return
        del _watches[(watch.task.get_loop(), self.interval)]
        watch.task.cancel()
        await asyncio.gather(watch.task, return_exceptions=True)

    @property
    def lags_ms(self) -> array[float]:
        """How late each read was read (a sample of them), or without stamps how late each wake-up since the run's
        start came, ms (until its stop, once stopped)."""
        if self._watch is None or self._until_ns is not None:
            return self._kept
        woke, lags = self._watch.series
        lo = bisect.bisect_left(woke, self.since_ns, 0, len(woke))
        return lags[lo : len(woke)]

    def p(self, q: float) -> float | None:
        return percentile(self.lags_ms, q)

    @property
    def client_bound(self) -> bool:
        """Where the kernel stamps reads: more than 1 % of them had a timestamp's bound over CLIENT_BOUND_P99_MS (a read
        of one packet is exact however late the loop got to it: its wait moves no figure); else the watch's lag p99
        passed it."""
        if not self.watching:
            return self._doubtful * 100 > self._reads
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
            return 0.0
        woke, lags = self._watch.series  # one pair: the loop may replace it meanwhile (trim), or append to it
        n = len(woke)  # a snapshot: the loop keeps appending meanwhile, lags first
        k = bisect.bisect_right(woke, t_ns, 0, n) - 1
        due_ns = woke[k] - lags[k] * 1e6 if k >= 0 else min(t_ns, self._watch.started_ns)
        return max(0.0, (t_ns - due_ns) / 1e6)
