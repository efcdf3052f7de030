"""Cold starts against the simulator's truth: a request after an idle spell is tagged cold and its TTFT carries
the simulated model load; later and concurrent requests as the simulator served them; a restart keeps the idle."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path

import pytest

from tokenpace import sim
from tokenpace.clients.transport import Timeouts
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.workloads import BUILTIN
from tokenpace.load.coldstart import ColdStarts, is_cold
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.measure.sample import Sample
from tokenpace.store import recent
from tokenpace.store.database import open_store

FAST = Timeouts(connect=2, first_token=10, idle=10, total=30)
AFTER_S = 0.3  # tokenpace's threshold and the simulator's: idle longer than this unloads its model
IDLE_S = 0.7  # the idle spell the tests make, well past it (a sleep that makes idle time, timing nothing)
LOAD_MS = 300.0
SCALES_TO_ZERO = sim.Scenario(
    ttft_ms=20, tokens_per_s=2000, output_tokens=5, cold_start_ms=LOAD_MS, cold_after_s=AFTER_S
)


def cold_starts(**kwargs: object) -> ColdStarts:
    return ColdStarts(lambda _: AFTER_S, **kwargs)  # type: ignore[arg-type]


def loads(simulator: sim.Simulator, samples: list[Sample]) -> list[float]:
    """How long each sample's request waited for the simulated model to load (its truth; 0: warm)."""
    return [simulator.truth[s.timeline.response_id or ""].cold_start_ms for s in samples]


async def test_the_first_request_after_an_idle_spell_is_cold_and_the_next_ones_warm() -> None:
    simulator = sim.Simulator(SCALES_TO_ZERO)
    cold = cold_starts()
    async with sim.serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        first = await run_workload([endpoint], BUILTIN["1k"], RunOptions(1, 1, FAST), cold=cold)
        assert first.samples[0].idle_s is None and not first.samples[0].cold  # nothing known before it
        await asyncio.sleep(IDLE_S)
        later = (await run_workload([endpoint], BUILTIN["1k"], RunOptions(3, 1, FAST), cold=cold)).samples
    assert all(s.ok for s in later)
    later.sort(key=lambda s: s.started_at)
    assert [s.cold for s in later] == [True, False, False]
    assert later[0].idle_s is not None and later[0].idle_s >= IDLE_S
    assert all(s.idle_s is not None and s.idle_s < AFTER_S for s in later[1:])
    assert loads(simulator, later) == [LOAD_MS, 0.0, 0.0]  # the simulator agrees: it loaded for the first only
    warm = max(s.metrics.ttft_ms or 0 for s in later[1:])
    assert (later[0].metrics.ttft_ms or 0) - warm > LOAD_MS * 0.8  # the load shows in the cold TTFT


async def test_requests_released_together_share_the_idle_time_before_the_release() -> None:
    simulator = sim.Simulator(SCALES_TO_ZERO)
    cold = cold_starts()
    async with sim.serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        await run_workload([endpoint], BUILTIN["1k"], RunOptions(1, 1, FAST), cold=cold)
        await asyncio.sleep(IDLE_S)
        burst = (await run_workload([endpoint], BUILTIN["1k"], RunOptions(3, 3, FAST), cold=cold)).samples
        await asyncio.sleep(IDLE_S)
        groups = (await run_workload([endpoint], BUILTIN["parallel"], RunOptions(20, 1, FAST), cold=cold)).samples
    assert [s.cold for s in burst] == [True] * 3 and len({s.idle_s for s in burst}) == 1
    assert all(load > 0 for load in loads(simulator, burst))  # each met the model loading
    first_group = min(groups, key=lambda s: s.started_at).group_id
    assert {s.cold for s in groups if s.group_id == first_group} == {True}
    assert {s.cold for s in groups if s.group_id != first_group} == {False}  # the second group met it warm


async def test_no_request_is_cold_when_the_threshold_is_off() -> None:
    simulator = sim.Simulator(SCALES_TO_ZERO)
    cold = ColdStarts(lambda _: 0.0)
    async with sim.serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        await run_workload([endpoint], BUILTIN["1k"], RunOptions(1, 1, FAST), cold=cold)
        await asyncio.sleep(IDLE_S)
        (s,) = (await run_workload([endpoint], BUILTIN["1k"], RunOptions(1, 1, FAST), cold=cold)).samples
    assert s.idle_s is not None and s.idle_s >= IDLE_S and not s.cold  # the idle time is kept all the same
    assert loads(simulator, [s]) == [LOAD_MS]


async def test_a_restart_keeps_the_idle_time_the_store_knows(tmp_path: Path) -> None:
    simulator = sim.Simulator(SCALES_TO_ZERO)
    db = str(tmp_path / "s.db")
    async with sim.serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        with open_store(db) as store:
            await run_workload([endpoint], BUILTIN["10k"], RunOptions(1, 1, FAST), store, cold=cold_starts())
        await asyncio.sleep(IDLE_S)
        with open_store(db) as store:  # a new process: nothing in memory, the store asked
            again = cold_starts(recall=partial(recent.last_ended, store))
            (s,) = (await run_workload([endpoint], BUILTIN["1k"], RunOptions(1, 1, FAST), store, cold=again)).samples
            elsewhere = cold_starts(recall=partial(recent.last_ended, store, region="eu"))
            (other,) = (await run_workload([endpoint], BUILTIN["1k"], RunOptions(1, 1, FAST), cold=elsewhere)).samples
            store.flush()
            stored = {x.id: x for x in store.samples()}
    assert s.cold and s.idle_s is not None and s.idle_s >= IDLE_S  # from the 10k sample's end, another workload
    assert loads(simulator, [s]) == [LOAD_MS]
    assert other.idle_s is None and not other.cold  # another region's agent knows only its own region's samples
    assert (stored[s.id].idle_s, stored[s.id].cold) == (s.idle_s, True)  # stored as taken


def test_idle_is_zero_while_a_request_is_in_flight_and_none_before_any() -> None:
    now = [1000.0]
    cold = ColdStarts(lambda _: 60.0, clock=lambda: now[0])
    e, same_place = Endpoint("a", "m", "http://x/v1"), Endpoint("b", "m", "http://x/v1", plan="p")
    assert cold.idle(e) is None
    cold.sent(e)
    now[0] += 5
    assert cold.idle(same_place) == 0.0  # one deployment: base URL and model, whoever names it
    cold.ended(e)
    now[0] += 90
    assert cold.idle(same_place) == 90.0 and cold.tag(e, 90.0) and not cold.tag(e, 59.9)


@pytest.mark.parametrize(("idle", "after", "expected"), [(None, 1, False), (5, 0, False), (5, 5, True), (4, 5, False)])
def test_is_cold(idle: float | None, after: float, expected: bool) -> None:
    assert is_cold(idle, after) is expected
