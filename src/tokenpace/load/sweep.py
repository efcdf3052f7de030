"""Sweeps: one load test per level, over given concurrencies or rates, or an automatic search for saturation.

Every point sends fresh prompts (the dataset's chains go on from where the last point stopped), so a server's
prefix cache cannot make a later point look faster. The automatic sweep (``--sweep auto``) names a bracket, not
a guess:

1. a closed loop at concurrency 1 gives the unloaded request rate r1 and TTFT;
2. open loops at 2 r1, 4 r1, ... while the server keeps up (:func:`kept_up`);
3. bisection: the geometric mean of the highest rate kept up with (r1 if none was) and the lowest one not, again
   and again, until the second is within BRACKET_WIDTH of the first; the answer is that bracket ("saturation
   between 21.4 and 22.8 req/s"). At most MAX_AUTO_LEVELS levels run in all: a sweep that reaches the limit
   says so, with the bracket it had (and one that never saturated says the highest rate it kept up with).

A level whose dispatch delay P99 passes the bound (load/figures.py's :func:`dispatch_problem`) is invalid:
the client did not release the load asked for, so the level says nothing of the server, and the auto sweep
stops there and says why (bisecting on it would bracket the client, not the server). ``repeat`` runs each given
level that many times back to back, a level each; ``workers`` shares each level out to that many processes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tokenpace.config.endpoints import Endpoint
from tokenpace.config.traffic import Load, Slo, Sweep
from tokenpace.load.engine import RunOptions, RunResult, SampleSink, run_load
from tokenpace.load.figures import DISPATCH_P99_MS, Done, Figures, dispatch_problem
from tokenpace.load.results import Bracket
from tokenpace.load.running import RunningFigures, release_rate
from tokenpace.load.send import Refusals
from tokenpace.load.workers import run_shared
from tokenpace.prompts.chains import Dataset

KEEP_UP = 0.9  # completed requests/s over offered requests/s
MAX_ERRORS = 0.05  # share of failed requests
TTFT_GROWTH = 3.0  # TTFT p50 over the unloaded TTFT p50
BRACKET_WIDTH = 1.05  # the auto sweep stops once its rate not kept up with is within 5 % of the one kept up with
# The unloaded level, doublings up to 2^10 r1, four or five bisections of a doubling (2 -> 1.05 needs 4).
MAX_AUTO_LEVELS = 16


@dataclass(frozen=True, slots=True)
class SweepLevel:
    """One point of a sweep: what the engine returned (its load included) and its figures."""

    result: RunResult
    figures: Figures
    repeat: int = 0  # 1..N of a repeated level, 0 when it ran once
    invalid: str = ""  # dispatch_problem's reason, "" valid


def levels(base: Load, sweep: Sweep) -> list[Load]:
    """The loads of a given sweep: the base load with each concurrency (closed) or rate (open) in turn."""
    if sweep.over == "concurrency":
        return [dataclasses.replace(base, concurrency=int(v), rate=None) for v in sweep.values]
    return [dataclasses.replace(base, concurrency=None, rate=v) for v in sweep.values]


def released_rate(done: Sequence[Done]) -> float | None:
    """Rate the schedule really released = (measured requests - 1) / (last release - first release), req/s
    (load/running.py's release_rate; RunningFigures.released_rate keeps it as the requests end).

    A Poisson schedule of 100 arrivals at rate R releases them at R +- 10 %: the server is judged against what it
    was offered, not against the nominal rate.
    """
    asked = [d.asked_ns for d in done if not d.warmup]
    return release_rate(len(asked), min(asked), max(asked)) if asked else None


def kept_up(f: Figures, offered: float, unloaded_ttft_ms: float | None) -> bool:
    """Kept up = completed >= KEEP_UP x offered req/s, errors <= MAX_ERRORS, TTFT p50 <= TTFT_GROWTH x unloaded.

    ``offered`` is the rate the level's schedule really released (:func:`released_rate`). A server past its
    capacity falls behind the schedule, fails requests, or queues them (TTFT grows first): any one is enough.
    Its resolution: a level over capacity by a share e queues its median request about n e / (2 x capacity)
    seconds (n requests), and passes until that reaches (TTFT_GROWTH - 1) x the unloaded TTFT; a larger n
    sharpens it.
    """
    if f.requests == 0 or f.request_rate < KEEP_UP * offered or (f.requests - f.ok) > MAX_ERRORS * f.requests:
        return False
    return unloaded_ttft_ms is None or f.ttft.p50 is None or f.ttft.p50 <= TTFT_GROWTH * unloaded_ttft_ms


def bisected(low: float, high: float) -> float | None:
    """The next rate to try between ``low`` (kept up with) and ``high`` (not) = sqrt(low x high), three
    significant figures; None once high <= BRACKET_WIDTH x low, or when rounding leaves no rate strictly between."""
    if high <= BRACKET_WIDTH * low:
        return None
    mid = _rounded(math.sqrt(low * high))
    return mid if low < mid < high else None


class Sweeper:
    """Runs the points of a sweep against one endpoint, keeping every finished level (also if interrupted)."""

    def __init__(
        self,
        endpoint: Endpoint,
        dataset: Dataset,
        options: RunOptions,
        slo: Slo | None = None,
        sink: SampleSink | None = None,
        on_done: Callable[[Done], None] | None = None,
        on_level: Callable[[Load], None] | None = None,
        max_dispatch_p99_ms: float | None = DISPATCH_P99_MS,
        repeat: int = 1,
        workers: int = 1,
    ) -> None:
        self.endpoint, self.dataset, self.options, self.slo = endpoint, dataset, options, slo
        self.sink, self.on_done, self.on_level = sink, on_done, on_level
        self.max_dispatch_p99_ms, self.repeat = max_dispatch_p99_ms, repeat
        self.workers = workers  # processes each level is shared by (load/workers.py); 1: this one
        self.running_repeat = 0  # the repeat of the level in progress: an interrupted one is written with it
        self.running_load: Load | None = None  # the level in progress, and its figures so far
        self.running: RunningFigures | None = None
        self.levels: list[SweepLevel] = []
        self.bracket: Bracket | None = None  # what the auto sweep found
        self.refusals = Refusals()  # learnt once for the whole sweep
        self._next_chain = options.first_chain

    async def point(self, load: Load, repeat: int = 0) -> SweepLevel:
        """One load test at ``load``, its prompts after every earlier point's (``repeat``: which run of it)."""
        self.running_repeat, self.running_load, self.running = repeat, load, RunningFigures(self.slo)
        if self.on_level is not None:
            self.on_level(load)
        options = dataclasses.replace(self.options, first_chain=self._next_chain)
        args = (self.endpoint, self.dataset, load, options, self.sink, self.on_done, self.refusals, self.running)
        result = await (run_load(*args) if self.workers == 1 else run_shared(*args, workers=self.workers))
        if (end := result.summary.chains_end) is not None:
            self._next_chain = end
        f = result.summary.figures(load.rate)
        level = SweepLevel(result, f, repeat, dispatch_problem(f, self.max_dispatch_p99_ms))
        self.levels.append(level)
        return level

    async def given(self, base: Load, sweep: Sweep | None = None) -> list[SweepLevel]:
        """Each level of the sweep (or the base load alone), ``repeat`` times back to back."""
        for load in levels(base, sweep) if sweep is not None and sweep.values else [base]:
            for r in range(self.repeat):
                await self.point(load, r + 1 if self.repeat > 1 else 0)
        return self.levels

    async def auto(self, base: Load) -> list[SweepLevel]:
        """Concurrency 1, then doubling rates until the server no longer keeps up, then bisection to a bracket."""
        unloaded = await self.point(dataclasses.replace(base, concurrency=1, rate=None, max_concurrency=None))
        r1, ttft1 = unloaded.figures.request_rate, unloaded.figures.ttft.p50
        if r1 <= 0:
            self.bracket = Bracket(None, None, "nothing succeeded at concurrency 1: no rate to start from")
            return self.levels
        low, high, rate = _rounded(r1), None, _rounded(2 * r1)
        stopped = f"the limit of {MAX_AUTO_LEVELS} levels"
        while len(self.levels) < MAX_AUTO_LEVELS:
            level = await self.point(dataclasses.replace(base, concurrency=None, rate=rate))
            if level.invalid:
                stopped = f"the client could not send {rate:g} req/s (an invalid level): it says nothing of the server"
                break
            if kept_up(level.figures, level.result.summary.released_rate() or rate, ttft1):
                low = rate
            else:
                high = rate
            following = _rounded(2 * rate) if high is None else bisected(low, high)
            if following is None:
                stopped = f"the bracket is within {BRACKET_WIDTH - 1:.0%}"
                break
            rate = following
        self.bracket = Bracket(low, high, stopped)
        return self.levels


def _rounded(rate: float) -> float:
    """A rate to three significant figures: what the table and the report show is what was offered."""
    return float(f"{rate:.3g}")
