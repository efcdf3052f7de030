"""`tokenpace bench`'s live progress: a line per level with requests done, the recent request rate and TTFT p50."""

from __future__ import annotations

import statistics
import time
from collections import deque

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from tokenpace.cli.stderr import stderr
from tokenpace.config.traffic import Load
from tokenpace.load.figures import Done
from tokenpace.measure.catalogue import metric

LIVE_WINDOW_S = 10.0  # the live request rate is over the last this many seconds
LIVE_TTFTS = 200  # the live TTFT p50 is over the last this many successful requests


class Live:
    """The live line of each level: requests done, the request rate of the last seconds, the running TTFT p50."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.task: TaskID | None = None
        self.load: Load | None = None
        self._ends: deque[float] = deque()
        self._ttfts: deque[float] = deque(maxlen=LIVE_TTFTS)
        self._since = time.monotonic()

    def level(self, load: Load) -> None:
        self.load, self._since = load, time.monotonic()
        self._ends.clear()
        self._ttfts.clear()
        total = load.warmup + load.requests if load.requests is not None else None
        self.task = self.progress.add_task(load.describe(), total=total, live="")

    def done(self, d: Done) -> None:
        now = time.monotonic()
        self._ends.append(now)
        while self._ends[0] < now - LIVE_WINDOW_S:
            self._ends.popleft()
        if d.sample.ok and d.sample.metrics.ttft_ms is not None and not d.warmup:
            self._ttfts.append(d.sample.metrics.ttft_ms)
        rate = len(self._ends) / max(min(LIVE_WINDOW_S, now - self._since), 1e-3)
        name = metric("ttft_ms").label
        ttft = f"{name} p50 {statistics.median(self._ttfts):.0f} ms" if self._ttfts else f"{name} p50 -"
        live = f"{rate:.1f} req/s  {ttft}" + ("  (warm-up)" if d.warmup else "")
        if self.task is not None:
            self.progress.update(self.task, advance=1, live=live)


def progress(quiet: bool) -> Progress:
    # Two refreshes a second: the refresh thread takes the interpreter's lock from the timing loop while it draws.
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[live]}"),
        TimeElapsedColumn(), console=stderr(), disable=quiet, refresh_per_second=2,
    )  # fmt: skip
