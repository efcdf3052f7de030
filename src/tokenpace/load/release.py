"""When each chain is released: a closed loop, bursts, or an open loop's arrivals, and how many may still go.

- closed loop: ``concurrency`` workers, each releasing its next chain when its last one has ended, the k-th
  starting k * CLOSED_LOOP_STAGGER_S after the first;
- bursts (``Load.burst``, the parallel workload): ``concurrency`` chains released at once, the next group
  when every one of the group has ended;
- open loop: a chain released at every arrival of the schedule (load/arrivals.py), however many are still in
  flight (up to ``max_concurrency`` if set).

Each release says when the schedule meant it (``asked_ns``) and the endpoint's idle time just before it:
chains released together share it (they all met the same endpoint, load/coldstart.py), so a closed loop's
first round shares the idle time measured before its first release.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from tokenpace.config.traffic import Load
from tokenpace.load.arrivals import intervals

# A closed loop's streams start this far apart: released all at once, equal streams end together, and every
# round boundary the client writes them all back to back, each waiting on the ones before (docs/accuracy.md).
# Read at each release, so bench/fidelity.py's --stagger-ms sets it for every closed loop.
CLOSED_LOOP_STAGGER_S = 0.0005


@dataclass(frozen=True, slots=True)
class Release:
    """One chain let go: which, when the schedule meant it, whether it is warm-up, the idle time it met."""

    chain: int  # the release's count of chains: 0 for the first chain released
    asked_ns: int  # perf_counter_ns when the schedule released it (open loop: its arrival time)
    warmup: bool
    idle_s: float | None  # the endpoint's idle time just before the release; None unknown or not watched
    burst: int | None = None  # which group of a burst release it belongs to


ChainRunner = Callable[[Release], Coroutine[Any, Any, None]]
Idle = Callable[[], float | None]  # the endpoint's idle time now


class ReleaseBudget:
    """How many requests may still be released, and whether the next one is warm-up or measured."""

    def __init__(self, load: Load) -> None:
        self.load = load
        self.released = 0
        self.measuring_since: float | None = None  # loop time of the first measured release

    def take(self, now: float) -> bool | None:
        """True for a warm-up request, False for a measured one, None once the test is over."""
        load = self.load
        if load.requests is not None and self.released >= load.warmup + load.requests:
            return None
        since = self.measuring_since
        if since is not None and load.duration_s is not None and now - since >= load.duration_s:
            return None
        warmup = self.released < load.warmup
        if not warmup and self.measuring_since is None:
            self.measuring_since = now
        self.released += 1
        return warmup


async def release(load: Load, seed: int, budget: ReleaseBudget, run_chain: ChainRunner, idle: Idle) -> None:
    """Release chains under ``load`` until the budget is spent; ``seed``: an open loop's arrival schedule's."""
    if load.rate is not None:
        await _open(load, seed, budget, run_chain, idle)
    elif load.burst:
        await _burst_release(load, budget, run_chain, idle)
    else:
        await _closed(load, budget, run_chain, idle)


async def _closed(load: Load, budget: ReleaseBudget, run_chain: ChainRunner, idle: Idle) -> None:
    loop = asyncio.get_running_loop()
    chain_ids = iter(range(1 << 62))
    workers = load.concurrency or 1
    first = idle()  # the first round is one release: its chains all met the endpoint as the run found it

    async def worker(k: int) -> None:
        await asyncio.sleep(k * CLOSED_LOOP_STAGGER_S)  # its place in the schedule: not the client's wait
        while (warmup := budget.take(loop.time())) is not None:
            i = next(chain_ids)
            await run_chain(Release(i, time.perf_counter_ns(), warmup, first if i < workers else idle()))

    async with asyncio.TaskGroup() as tg:
        for k in range(workers):
            tg.create_task(worker(k))


async def _burst_release(load: Load, budget: ReleaseBudget, run_chain: ChainRunner, idle: Idle) -> None:
    loop = asyncio.get_running_loop()
    chain_ids = iter(range(1 << 62))
    for group in range(1 << 62):
        idle_s, released = idle(), 0
        async with asyncio.TaskGroup() as tg:
            while released < (load.concurrency or 1) and (warmup := budget.take(loop.time())) is not None:
                released += 1
                tg.create_task(run_chain(Release(next(chain_ids), time.perf_counter_ns(), warmup, idle_s, group)))
        if not released:
            return


async def _open(load: Load, seed: int, budget: ReleaseBudget, run_chain: ChainRunner, idle: Idle) -> None:
    """Arrivals due while a cap holds them wait (and show it)."""
    assert load.rate is not None
    loop = asyncio.get_running_loop()
    cap = asyncio.Semaphore(load.max_concurrency) if load.max_concurrency else None
    t0_ns, t0 = time.perf_counter_ns(), loop.time()
    at = 0.0

    async def capped(r: Release) -> None:
        assert cap is not None
        async with cap:
            await run_chain(r)

    async with asyncio.TaskGroup() as tg:
        for i, gap in enumerate(intervals(load.rate, load.arrival, load.burstiness, seed)):
            at += gap
            asked = t0_ns + round(at * 1e9)
            # The loop's timers are as coarse as a millisecond (uvloop) and may fire early: sleep again for any
            # rest, so a request is never sent before its arrival time and its wait is never negative.
            while (rest := asked - time.perf_counter_ns()) > 0:  # noqa: ASYNC110 - a deadline, not an event
                await asyncio.sleep(rest / 1e9)
            # The duration is counted on the schedule: an arrival due inside it is released however late the
            # loop got there (a stalled loop must not shorten the test), and none due after it is.
            if (warmup := budget.take(t0 + at)) is None:
                break
            r = Release(i, asked, warmup, idle())
            tg.create_task(capped(r) if cap else run_chain(r))
