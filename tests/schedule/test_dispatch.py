"""The dispatcher: a region's run is an order that an agent finishes, or one dropped at its deadline."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from pathlib import Path

from tests.agentkit import write_config
from tokenpace import sim
from tokenpace.agent.worker import Agent
from tokenpace.config.endpoints import read_config
from tokenpace.schedule import cadence
from tokenpace.schedule.dispatch import START_WITHIN_MAX_S, START_WITHIN_MIN_S, Dispatcher, start_within
from tokenpace.store.database import open_store
from tokenpace.store.queue import Queue


def _job(tmp_path: Path, every: str = "1h") -> cadence.Job:
    cfg = read_config(
        write_config(tmp_path / "c.toml", "simulate = { ttft_ms = 5, tokens_per_s = 500 }", ["eu"], every)
    )
    (job,) = cadence.jobs(cfg, cfg.endpoints)
    return job


def test_an_order_may_wait_half_an_interval_within_bounds(tmp_path: Path) -> None:
    job = _job(tmp_path)
    assert start_within(replace(job, every_s=600)) == 300
    assert start_within(replace(job, every_s=10)) == START_WITHIN_MIN_S
    assert start_within(replace(job, every_s=86_400)) == START_WITHIN_MAX_S


async def test_an_order_no_agent_takes_is_dropped_at_its_deadline(pg_url: str, tmp_path: Path) -> None:
    job = _job(tmp_path)
    now = [1_000_000.0]
    queue = Queue(pg_url)
    await queue.open()
    await queue.install()
    told: list[None] = []
    dispatcher = Dispatcher(queue, poll_s=0.05, clock=lambda: now[0], finished=lambda: told.append(None))
    try:
        run = asyncio.create_task(dispatcher(job))
        await asyncio.sleep(0.3)
        assert not run.done()  # waiting for an agent
        now[0] += start_within(job) + 1
        assert await asyncio.wait_for(run, 10) == "dropped"
        assert dispatcher.counts == {"queued": 1, "dropped": 1} and told == []  # nothing was stored
        ((_, state),) = (await queue.states(range(1, 10))).items()
        assert state.status == "cancelled"
    finally:
        await dispatcher.close()
        await queue.close()


async def test_an_agent_finishes_the_order_and_its_samples_say_where(pg_url: str, tmp_path: Path) -> None:
    job = _job(tmp_path)
    cfg = read_config(tmp_path / "c.toml")
    queue = Queue(pg_url)
    await queue.open()
    await queue.install()
    told: list[None] = []
    dispatcher = Dispatcher(queue, poll_s=0.05, finished=lambda: told.append(None))
    async with contextlib.AsyncExitStack() as stack:
        endpoints = await sim.started_for(cfg.endpoints, sim.scenarios(cfg), stack)
        with open_store(pg_url) as store:
            agent = Agent(cfg, endpoints, store, queue, "eu", name="here", heartbeat_s=0.5)
            working = asyncio.create_task(agent.run(grace_s=1))
            try:
                assert await asyncio.wait_for(dispatcher(job), 30) == "succeeded"
            finally:
                working.cancel()
                await asyncio.gather(working, return_exceptions=True)
                await dispatcher.close()
                await queue.close()
            (sample,) = store.samples()
    assert (sample.region, sample.agent, sample.job_seq, sample.ok) == ("eu", "here", 0, True)
    assert sample.network is not None and sample.network.rtt_ms is not None
    assert dispatcher.counts == {"queued": 1, "finished": 1} and agent.counts.done == 1
    assert told == [None]  # the board's caches are told the agent wrote
