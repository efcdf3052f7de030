"""Wake requests against the simulator's truth: a sparse scheduled run that finds its endpoint cold first sends
one 1k request alone (the cold start, per the simulator), and its own requests are warm; no wake otherwise."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.load.test_coldstart import AFTER_S, IDLE_S, LOAD_MS, SCALES_TO_ZERO
from tests.schedule.test_sampler import SMALL, T0, FakeClock, Runs, fake_sample, job, run_for
from tokenpace import sim
from tokenpace.agent.worker import Agent
from tokenpace.config.endpoints import Endpoint, read_config
from tokenpace.config.settings import Budget
from tokenpace.config.workloads import BUILTIN
from tokenpace.measure.sample import Sample
from tokenpace.schedule import cadence
from tokenpace.schedule.cadence import Job
from tokenpace.schedule.dispatch import Dispatcher
from tokenpace.schedule.sampler import Sampler
from tokenpace.store.database import Store, open_store
from tokenpace.store.queue import Queue

WAKE = BUILTIN["1k"]
QUEUED_AFTER_S = 2.0  # the idle threshold of a run through the queue and an agent


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(str(tmp_path / "samples.db")) as s:
        yield s


async def sample_until(
    sampler: Sampler, store: Store, done: Callable[[list[Sample]], bool], within: float = 60
) -> list[Sample]:
    """Run the sampler (real time) until ``done(measured samples)``, then stop it; the measured samples."""
    task = asyncio.ensure_future(sampler.run())
    measured: list[Sample] = []
    for _ in range(int(within / 0.025)):
        await asyncio.sleep(0.025)
        measured = [s for s in store.samples() if s.run_id != "run"]
        if done(measured):
            break
    sampler.stop()
    await asyncio.wait_for(task, 10)
    return sorted((s for s in store.samples() if s.run_id != "run"), key=lambda s: s.started_at)


def due_soon(store: Store, at: Job, base_url: str | None = None) -> None:
    """The job last ran an interval ago, less a moment (at ``base_url`` if given): due in 0.2 s."""
    e = dataclasses.replace(at.endpoint, base_url=base_url or at.endpoint.base_url)
    store.add_sample(fake_sample(dataclasses.replace(at, endpoint=e), time.time() - at.every_s + 0.2))


async def test_a_sparse_run_on_a_cold_endpoint_wakes_it_first_and_measures_warm(store: Store) -> None:
    simulator = sim.Simulator(SCALES_TO_ZERO)
    async with sim.serve(simulator) as url:
        sparse = Job(Endpoint("sim", "m", url, simulated=True), SMALL, 600, 0.0, 2, cold_after_s=AFTER_S, wake=WAKE)
        due_soon(store, sparse)  # idle for 600 s as the store says, and the simulator's model unloads meanwhile:
        await asyncio.sleep(IDLE_S)
        sampler = Sampler([sparse], store, grace_s=5)
        measured = await sample_until(sampler, store, lambda found: len(found) == 3)
    wake, *own = measured
    assert (wake.workload, wake.cold, wake.published, wake.source) == ("1k", True, True, "scheduled")
    assert wake.idle_s is not None and wake.idle_s > 590  # as the store said
    assert simulator.truth[wake.timeline.response_id or ""].cold_start_ms == LOAD_MS  # it paid the load
    assert [(s.workload, s.cold) for s in own] == [("small", False), ("small", False)]
    assert all(s.idle_s is not None and s.idle_s < AFTER_S for s in own)
    assert [simulator.truth[s.timeline.response_id or ""].cold_start_ms for s in own] == [0.0, 0.0]  # warm
    wake_ended = wake.started_at.timestamp() + (wake.metrics.e2e_ms or 0) / 1000
    assert min(s.started_at.timestamp() for s in own) >= wake_ended - 0.01  # alone: the run waited for it
    assert sampler.waker.sent == 1 and [r.command for r in store.runs()] == ["tokenpace serve"] * 2  # two runs


async def test_no_wake_below_the_threshold_with_an_unknown_idle_time_or_cold_after_off(store: Store) -> None:
    async with sim.serve(sim.Simulator(sim.Scenario(ttft_ms=5, tokens_per_s=2000, output_tokens=5))) as url:

        def make(model: str, every_s: float, after: float, wake: bool = True) -> Job:
            e = Endpoint("sim", model, url, simulated=True)
            return Job(e, SMALL, every_s, 0.0, 1, cold_after_s=after, wake=WAKE if wake else None)

        below, unknown, off, tag_only = (
            make("below", 2, 60),
            make("unknown", 600, 1),
            make("off", 600, 0),
            make("tag-only", 600, 1, wake=False),
        )
        for j in (below, off, tag_only):
            due_soon(store, j)  # idle 1.8 s (below 60 s); 600 s (off: nothing is cold; tag-only: no wake)
        due_soon(store, unknown, base_url="http://elsewhere/v1")  # the job's last run, at another address
        sampler = Sampler([below, unknown, off, tag_only], store, grace_s=5)
        measured = await sample_until(sampler, store, lambda found: len(found) >= 4)
    assert sorted((s.endpoint.model, s.workload, s.cold) for s in measured) == [
        ("below", "small", False), ("off", "small", False), ("tag-only", "small", True), ("unknown", "small", False),
    ]  # fmt: skip
    assert sampler.waker.sent == 0


async def test_a_region_run_wakes_by_the_regions_samples_once_and_within_the_providers_room(store: Store) -> None:
    """Regions: the wake is an order of its own (a 1k run of one), queued before the run's, when the store's
    latest sample from the region ended cold_after ago or more; the two runs due together send one wake."""
    clock = FakeClock()
    runs = Runs(store, clock, duration=5.0, late=True)
    e = Endpoint("p", "m", "http://127.0.0.1:9/v1")
    ten_k = dataclasses.replace(WAKE, name="10k")
    plan = [
        Job(e, w, 3600, 0.0, 1, concurrency=2, region="eu", cold_after_s=900, wake=WAKE, budget=Budget(requests=99))
        for w in (WAKE, ten_k)
    ]
    for j in plan:
        store.add_sample(dataclasses.replace(fake_sample(j, clock.t - 3600 + 1), region="eu"))
    sampler = Sampler(plan, store, clock=clock, run_job=runs, inline_reads=True)
    await run_for(sampler, clock, 3 * 3600)
    starts = sorted((t - T0, k[3]) for k, ts in runs.started.items() for t in ts)
    hours = [(h * 3605.0 + t, w) for h in range(3) for t, w in ((1.0, "1k"), (6.0, "10k"), (6.0, "1k"))]
    assert starts == hours  # the wake at 1 s (its run of one takes 5 s), then both runs at once
    assert runs.most["p"] == 2  # the wake alone, then both runs: within the provider's 2
    # Each hour: the first run due finds the endpoint idle for an hour and wakes it (a 1k run of one); the other,
    # due at the same time, waits for the wake and finds it awake.
    assert sampler.waker.sent == 3 and len(starts) == 3 * 3


async def test_a_region_agent_measures_the_wake_order_cold_and_the_runs_warm(pg_url: str, tmp_path: Path) -> None:
    """End to end through the queue: serve's sampler queues the wake (a 1k order of one) and then the run's
    order; the region's agent measures both, the wake paying the simulator's load, the run's request warm.
    The idle threshold is seconds here, not AFTER_S: between the wake's end and the run's request lie two polls
    of the queue and the agent's prompt, 0.3-0.5 s on a busy machine."""
    path = tmp_path / "c.toml"
    path.write_text(
        '[providers.far]\nbase_url = "http://127.0.0.1:9/v1"\nmodels = ["m"]\nevery = "1h"\n'
        f'cold_after = "{QUEUED_AFTER_S}s"\n'
        "[workloads.small]\ninput_tokens = 300\nmax_tokens = 50\n"
        '[schedule]\nworkloads = ["small"]\njitter = 0\n[regions.eu]\n'
    )
    cfg = read_config(path)
    simulator = sim.Simulator(dataclasses.replace(SCALES_TO_ZERO, cold_after_s=QUEUED_AFTER_S))
    queue = Queue(pg_url)
    await queue.open()
    await queue.install()
    dispatcher = Dispatcher(queue, poll_s=0.05)
    async with contextlib.AsyncExitStack() as stack:
        url = await stack.enter_async_context(sim.serve(simulator))
        endpoints = [dataclasses.replace(e, base_url=url) for e in cfg.endpoints]
        (regional,) = cadence.jobs(cfg, endpoints)
        with open_store(pg_url) as store:
            store.add_sample(dataclasses.replace(fake_sample(regional, time.time() - 3600 + 0.5), region="eu"))
            store.flush()
            agent = Agent(cfg, endpoints, store, queue, "eu", name="here", heartbeat_s=0.5)
            working = asyncio.create_task(agent.run(grace_s=1))
            await asyncio.sleep(QUEUED_AFTER_S + IDLE_S)  # the simulator's model unloads
            sampler = Sampler([regional], store, run_job=dispatcher, grace_s=5)
            try:
                measured = await sample_until(sampler, store, lambda found: len(found) == 2)
            finally:
                working.cancel()
                await asyncio.gather(working, return_exceptions=True)
                await dispatcher.close()
                await queue.close()
    wake, own = measured
    assert (wake.workload, wake.region, wake.agent, wake.cold, wake.published) == ("1k", "eu", "here", True, True)
    assert (own.workload, own.region, own.cold) == ("small", "eu", False)
    truth = [simulator.truth[s.timeline.response_id or ""].cold_start_ms for s in (wake, own)]
    assert truth == [LOAD_MS, 0.0]  # the wake paid the load; the run's request met the model loaded
    assert dispatcher.counts == {"queued": 2, "finished": 2} and sampler.waker.sent == 1


async def test_the_budget_check_counts_the_wake_request(store: Store) -> None:
    clock = FakeClock()
    runs = Runs(store, clock)
    tight = Budget(requests=3)  # one run of one request: 2 sent at worst (a refused one resent); with a wake, 4
    waking, plain = job("w", budget=tight, wake=WAKE, plan="a"), job("p", budget=tight, plan="b")
    sampler = Sampler([waking, plain], store, clock=clock, run_job=runs, inline_reads=True)
    await run_for(sampler, clock, 60)
    assert not runs.started[waking.key] and len(runs.started[plain.key]) == 1
    assert {b.plan: b.skipped for b in sampler.status().budgets} == {"a": 1, "b": 0}
