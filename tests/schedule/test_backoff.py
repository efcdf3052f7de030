"""A 429 holds its plan: no job of it starts before its Retry-After has passed, those due meanwhile are skipped
(not run later), and afterwards each job keeps its own cadence; on a virtual clock, and against the simulator."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.schedule.test_sampler import SMALL, T0, FakeClock, fake_sample, job, run_for
from tokenpace import sim
from tokenpace.config.endpoints import Endpoint
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.sample import Sample
from tokenpace.schedule.backoff import DEFAULT_HOLD_S, held_until, read_holds
from tokenpace.schedule.cadence import Job, JobKey
from tokenpace.schedule.sampler import Sampler
from tokenpace.store.database import Store, open_store

E2E_S = 0.005  # fake_sample's timeline ends 5 ms after it was sent


def limited(j: Job, at: float, retry_after_s: float | None, region: str = "") -> Sample:
    """A 429 of the job started at ``at``, with the Retry-After it said (None: none)."""
    s = fake_sample(j, at)
    failure = Failure(ErrorKind.RATE_LIMITED, "HTTP 429: slow down", 429, retry_after_s)
    return dataclasses.replace(s, timeline=dataclasses.replace(s.timeline, failure=failure), region=region)


class Scripted:
    """A run_job storing one sample as it starts: a 429 for the scripted (job, run number)s, else a success."""

    def __init__(self, store: Store, clock: FakeClock, script: dict[tuple[str, int], float | None]) -> None:
        self.store, self.clock, self.script = store, clock, script
        self.started: dict[JobKey, list[float]] = defaultdict(list)

    async def __call__(self, j: Job) -> None:
        now, runs = self.clock.now(), self.started[j.key]
        runs.append(now)
        key = (j.endpoint.model, len(runs))
        self.store.add_sample(limited(j, now, self.script[key]) if key in self.script else fake_sample(j, now))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(str(tmp_path / "samples.db")) as s:
        yield s


def test_held_until_is_the_429s_arrival_plus_its_retry_after() -> None:
    assert held_until(T0, 250.0, 120.0) == T0 + 0.25 + 120
    assert held_until(T0, None, None) == T0 + DEFAULT_HOLD_S  # no Retry-After: the default
    assert held_until(T0, 5.0, 1e9) == T0 + 0.005 + 86_400  # a hostile row: a day at most
    assert held_until(T0, 1e300, -5.0) == T0  # an impossible end-to-end time counts as none


def test_read_holds_takes_each_plans_latest_429_of_any_model_and_region(store: Store) -> None:
    a, b, other = job("a"), job("b"), job("a", plan="other")
    store.add_sample(limited(a, T0, 120.0))
    store.add_sample(limited(b, T0 + 10, 30.0, region="eu"))  # ends sooner than a's: a's holds
    store.add_sample(limited(other, T0, None))
    failed = fake_sample(a, T0 + 20)
    store.add_sample(dataclasses.replace(failed, timeline=dataclasses.replace(failed.timeline, failure=Failure(
        ErrorKind.HTTP_ERROR, "HTTP 500", 500, 999.0))))  # fmt: skip
    store.flush()
    assert read_holds(store, T0) == {("p", "default"): T0 + E2E_S + 120, ("p", "other"): T0 + E2E_S + 60}
    assert read_holds(store, T0, ("p", "other")) == {("p", "other"): T0 + E2E_S + 60}
    assert read_holds(store, T0 + 11) == {}  # only 429s since the time asked


async def test_a_429_with_retry_after_120_stops_the_plan_for_120_s_and_skips_not_bursts(store: Store) -> None:
    clock = FakeClock()
    held = [job("a", 300, jitter=0.0), job("b", 300, jitter=0.0), job("c", 50, jitter=0.0)]
    free = job("d", 30, jitter=0.0, plan="other")  # another plan: another quota
    runs = Scripted(store, clock, {("a", 2): 120.0})
    sampler = Sampler([*held, free], store, clock=clock, run_job=runs, inline_reads=True)
    await run_for(sampler, clock, 3600)

    limited_at = runs.started[held[0].key][1]
    end = limited_at + E2E_S + 120
    for j in held:  # nothing of the plan started while it was held
        assert not [t for t in runs.started[j.key] if limited_at < t < end], j.name
    assert [t for t in runs.started[free.key] if limited_at < t < end]  # the other plan went on
    # Skipped, not run later: each job's starts stay on its own grid (jitter 0: every one interval after a start
    # or a skip), so the ones held resume at their own next due time, not together when the hold ends.
    gaps = {j.endpoint.model: [b - a for a, b in itertools.pairwise(runs.started[j.key])] for j in held}
    for j in held:
        assert all(round(g, 6) % j.every_s == 0 for g in gaps[j.endpoint.model]), j.name
    assert max(gaps["c"]) in (150, 200)  # c, every 50 s, missed two or three runs in 120 s, and only those
    (hold,) = sampler.status().holds
    assert (hold.provider, hold.plan) == ("p", "default")
    assert hold.until == datetime.fromtimestamp(end, UTC)
    assert hold.skipped == sum(round(g / j.every_s) - 1 for j in held for g in gaps[j.endpoint.model]) > 2
    assert hold.last_skip is not None and limited_at < hold.last_skip.timestamp() < end


async def test_a_429_without_retry_after_holds_the_default(store: Store) -> None:
    clock = FakeClock()
    a, c = job("a", 300, jitter=0.0), job("c", 20, jitter=0.0)
    runs = Scripted(store, clock, {("a", 1): None})
    await run_for(Sampler([a, c], store, clock=clock, run_job=runs, inline_reads=True), clock, 900)
    limited_at = runs.started[a.key][0]
    after = [t for t in runs.started[c.key] if t > limited_at]
    assert after and after[0] >= limited_at + E2E_S + DEFAULT_HOLD_S  # held a minute, then on its grid again
    assert after[0] < limited_at + DEFAULT_HOLD_S + c.every_s


async def test_a_restart_keeps_a_hold_an_agent_stored(store: Store) -> None:
    """A 429 stored before the start (an agent's, of another model and region of the plan) still holds it."""
    clock = FakeClock()
    a, free = job("a", 30, jitter=0.0), job("a", 30, jitter=0.0, plan="other")
    store.add_sample(limited(job("z"), T0 - 30, 120.0, region="eu"))
    runs = Scripted(store, clock, {})
    await run_for(Sampler([a, free], store, clock=clock, run_job=runs, inline_reads=True), clock, 300)
    assert min(runs.started[a.key]) >= T0 - 30 + E2E_S + 120
    assert min(runs.started[free.key]) < T0 + 30


async def test_a_simulators_429_with_retry_after_120_holds_the_plan(store: Store) -> None:
    """The real client and sampler on the real clock: the simulator's 429 is stored with its Retry-After, and
    the plan's next job, due a moment later, is skipped while another plan's runs."""
    simulator = sim.Simulator(
        sim.Scenario(ttft_ms=5, tokens_per_s=2000, output_tokens=20),
        models={"limited": sim.Scenario(error="429", retry_after="120")},
    )
    async with sim.serve(simulator) as url:
        a, b = (Job(Endpoint("sim", m, url, simulated=True), SMALL, 600, 0.0, 1) for m in ("limited", "b"))
        c = Job(Endpoint("sim", "b", url, plan="other", simulated=True), SMALL, 600, 0.0, 1)
        now = time.time()
        for j, due_in in ((a, 0.2), (b, 0.8), (c, 0.8)):  # each last sampled 600 s ago, less a moment
            store.add_sample(fake_sample(j, now - 600 + due_in))
        sampler = Sampler([a, b, c], store, grace_s=5)
        task = asyncio.ensure_future(sampler.run())
        for _ in range(400):
            await asyncio.sleep(0.025)
            if sampler.status().holds and sampler.status().holds[0].skipped and len(store.samples()) == 5:
                break
        sampler.stop()
        await asyncio.wait_for(task, 10)
    measured = {s.endpoint.plan + "/" + s.endpoint.model: s for s in store.samples() if s.run_id != "run"}
    assert set(measured) == {"default/limited", "other/b"}  # default/b was due while its plan was held
    s = measured["default/limited"]
    assert s.error_kind is ErrorKind.RATE_LIMITED and s.retry_after_s == 120.0
    (hold,) = sampler.status().holds
    assert (hold.provider, hold.plan, hold.skipped) == ("sim", "default", 1)
    arrived = s.started_at.timestamp() + (s.metrics.e2e_ms or 0) / 1000
    assert hold.until.timestamp() == pytest.approx(arrived + 120, abs=1e-3)
    (b_status,) = [j for j in sampler.status().jobs if j.job.key == b.key]
    assert b_status.next_due is not None and b_status.next_due.timestamp() > hold.until.timestamp()
