"""Regret on simulators whose speeds swap: a fast and a slow simulator measured for real by tokenpace's own client
into SQLite, their samples then placed on a scripted clock as two endpoints of one model, the fast one changing
every few hours. The feed reads the last hour, so it is wrong only in the first hour after each swap; the policy
that reads the last 24 h is no better than a coin (over any 24 h each endpoint was fast for half of it)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.serve.test_alerts import SMALL
from tests.webkit import Steady
from tokenpace import sim
from tokenpace.board.policies import policies
from tokenpace.board.regret import Score, score
from tokenpace.config.endpoints import Endpoint
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.store.database import open_store
from tokenpace.store.series import Placed, SamplePoint, placed_series

T0 = datetime(2026, 11, 2, tzinfo=UTC)
FAST = sim.Scenario(ttft_ms=2, tokens_per_s=2000, output_tokens=40)
SLOW = sim.Scenario(ttft_ms=80, tokens_per_s=200, output_tokens=40)  # a 0.2 s stream: 10x slower, however loaded
EACH = 8  # samples measured from each simulator; alpha places the even ones, beta the odd ones
PER_HOUR = 48  # a sample every 75 s: the feed's last hour holds the 44 a P90 needs (sufficiency.samples_needed)
HISTORY_H, SCORED_H = 24, 48


def measure(path: Path) -> tuple[list[SamplePoint], list[SamplePoint]]:
    """EACH samples of the fast simulator and of the slow one, measured by tokenpace's client into SQLite."""

    async def both() -> list[Placed]:
        async with sim.serve(sim.Simulator(FAST)) as fast, sim.serve(sim.Simulator(SLOW)) as slow:
            with open_store(str(path)) as store:
                for name, url in (("fast", fast), ("slow", slow)):
                    endpoint = Endpoint(name, "m", url, simulated=True)
                    options = RunOptions(EACH, 1, source="scheduled", publish=True, command="tokenpace serve")
                    await run_workload([endpoint], SMALL, options, Steady(store))
                store.flush()
                return placed_series(store, since=datetime(2000, 1, 1, tzinfo=UTC))

    measured = asyncio.run(both())
    points = {name: [s.point for s in measured if s.provider == name and s.point.ok] for name in ("fast", "slow")}
    assert len(points["fast"]) == len(points["slow"]) == EACH
    return points["fast"], points["slow"]


def placed(fast: Sequence[SamplePoint], slow: Sequence[SamplePoint], period_h: int) -> list[Placed]:
    """Alpha and beta, PER_HOUR samples an hour each over HISTORY_H + SCORED_H hours: alpha fast in the first
    ``period_h`` hours, beta in the next, and so on. Each takes its own half of each simulator's samples in turn."""
    found = []
    for hour in range(HISTORY_H + SCORED_H):
        alpha_fast = (hour // period_h) % 2 == 0
        for k in range(PER_HOUR):
            for offset, name in enumerate(("alpha", "beta")):
                pool = fast if alpha_fast == (name == "alpha") else slow
                point = pool[(2 * (hour * PER_HOUR + k) + offset) % len(pool)]
                at = T0 + timedelta(hours=hour, seconds=(k + offset / 2) * 3600 / PER_HOUR)
                found.append(
                    Placed(f"{name}{hour}-{k}", name, "free", "m", "", dataclasses.replace(point, started_at=at))
                )
    return found


def scores(samples: list[Placed]) -> dict[tuple[str, str], Score]:
    start = T0 + timedelta(hours=HISTORY_H)
    found = score(samples, policies({}), start, start + timedelta(hours=SCORED_H))
    return {(s.key, s.policy): s for s in found}


@pytest.fixture(scope="module")
def pools(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[SamplePoint], list[SamplePoint]]:
    return measure(tmp_path_factory.mktemp("swaps") / "swaps.db")


def test_the_feed_beats_the_last_24_hours_when_the_fast_endpoint_changes_every_6_hours(
    pools: tuple[list[SamplePoint], list[SamplePoint]],
) -> None:
    fast, slow = pools
    assert min(p.output_speed or 0 for p in fast) > 3 * max(p.output_speed or 0 for p in slow)
    found = scores(placed(fast, slow, period_h=6))
    for key in ("output_speed", "ttft_ms"):
        feed, day = found[(key, "the feed at P50")], found[(key, "fastest over the last 24 h")]
        assert feed.hours == day.hours == SCORED_H and feed.no_pick == day.no_pick == 0
        assert feed.mean is not None and day.mean is not None and feed.mean < day.mean, key
        assert found[(key, "cheapest first")].no_pick == SCORED_H  # no price known: it never picks
    feed, day = found[("output_speed", "the feed at P50")], found[("output_speed", "fastest over the last 24 h")]
    assert feed.hi is not None and day.lo is not None and feed.hi < day.lo  # apart, intervals and all
    # (Not so for TTFT: the fast one's few ms vary by half on a loaded machine, and every ratio with them.)
    # Speed, 10x apart: the feed is wrong exactly at the 8 swaps of 48 hours (its last hour was the other
    # endpoint's); the day's medians hold 12 fast hours of each, never change their order, and keep one endpoint:
    # right in half the hours.
    for name in ("the feed at P50", "the feed at P90"):
        assert found[("output_speed", name)].best_share == pytest.approx(40 / 48), name
    assert found[("output_speed", "fastest over the last 24 h")].best_share == 0.5


def test_a_swap_every_hour_makes_the_last_hour_the_wrong_guide(
    pools: tuple[list[SamplePoint], list[SamplePoint]],
) -> None:
    """Why the swaps above are 6 hours apart: swapping every hour, the hour before is always the other endpoint's
    fast one, so the feed is wrong every hour and its regret is the whole ratio, above the coin's."""
    found = scores(placed(*pools, period_h=1))
    feed, day = found[("output_speed", "the feed at P50")], found[("output_speed", "fastest over the last 24 h")]
    assert feed.best_share == 0.0 and day.best_share == 0.5
    assert feed.mean is not None and day.mean is not None and feed.mean > day.mean
