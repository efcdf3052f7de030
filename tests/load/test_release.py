"""Releases without a server: which chains go together, with which idle time, and when the budget ends them."""

from __future__ import annotations

import asyncio
import itertools

from tokenpace.config.traffic import Load
from tokenpace.load import release
from tokenpace.load.release import Release, ReleaseBudget


def released(load: Load, chain_s: float = 0.02) -> tuple[list[tuple[float, Release]], list[float]]:
    """(loop time, release) of each chain a release let go, each chain taking ``chain_s``; the idle times asked."""
    out: list[tuple[float, Release]] = []
    asked: list[float] = []
    idle = itertools.count(1.0)

    def idle_now() -> float:
        asked.append(next(idle))
        return asked[-1]

    async def run_chain(r: Release) -> None:
        out.append((asyncio.get_running_loop().time(), r))
        await asyncio.sleep(chain_s)

    async def go() -> None:
        await release.release(load, 0, ReleaseBudget(load), run_chain, idle_now)

    asyncio.run(go())
    return out, asked


def test_a_burst_release_lets_each_group_go_together_and_the_next_when_all_have_ended() -> None:
    out, asked = released(Load(concurrency=4, requests=10, burst=True))
    groups = [[r for _, r in out if r.burst == g] for g in range(3)]
    assert [len(g) for g in groups] == [4, 4, 2] and len(out) == 10  # the last group is what the budget left
    assert [r.chain for _, r in out] == list(range(10))
    assert [{r.idle_s for r in g} for g in groups] == [{1.0}, {2.0}, {3.0}]  # one idle time per release
    for g in range(2):
        starts = [t for t, r in out if r.burst == g]
        later = [t for t, r in out if r.burst == g + 1]
        assert max(starts) - min(starts) < 0.01 and min(later) >= min(starts) + 0.02  # waited for the group
    assert len(asked) == 4  # the one after the last group found the budget spent


def test_a_closed_loops_first_round_shares_the_idle_time_found_before_it() -> None:
    out, asked = released(Load(concurrency=3, requests=7))
    first = [r for _, r in out if r.chain < 3]
    assert {r.idle_s for r in first} == {1.0} and all(r.burst is None for _, r in out)
    later = [r.idle_s or 0.0 for _, r in out if r.chain >= 3]
    assert sorted(later) == [2.0, 3.0, 4.0, 5.0] == asked[1:]  # each measured at its own release
