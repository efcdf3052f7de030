"""The sampler: cadence, jitter, restarts, budgets, concurrency and a clean stop, days of it on a virtual clock."""

from __future__ import annotations

import asyncio
import dataclasses
import heapq
import itertools
import logging
import math
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tokenpace import sim
from tokenpace.config.endpoints import Config, Endpoint, read_config
from tokenpace.config.settings import Budget, Spend
from tokenpace.config.workloads import BUILTIN, Workload
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.sample import Sample, make_sample
from tokenpace.measure.timing import Event, EventKind, Timeline
from tokenpace.measure.timing import Usage as Reported
from tokenpace.schedule import sampler as sampling
from tokenpace.schedule.cadence import STAGGER_S, Job, JobKey, jobs, next_due
from tokenpace.schedule.sampler import Sampler, job_last_started, usage
from tokenpace.store.database import Store, open_store
from tokenpace.store.usage import spent_since

T0 = 1_750_000_000.0
DAY = 86_400.0
SMALL = Workload("small", 50, input_tokens=300)
BURST = Workload("burst", 50, input_tokens=300, concurrency=3)


class FakeClock:
    """Virtual time: it moves only when every task waits on it, straight to the earliest wake-up."""

    def __init__(self, t: float = T0) -> None:
        self.t = t
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.t + max(0.0, seconds), next(self._order), woken))
        await woken

    async def advance(self, until: float = math.inf, done: Callable[[], bool] = lambda: False) -> None:
        """Wake sleepers in time order up to ``until`` (or until ``done()``), letting everything settle between."""
        for _ in range(200_000):
            for _ in range(30):  # every task runs until it waits again (the sampler reads inline: no threads)
                await asyncio.sleep(0)
            while self._sleepers and self._sleepers[0][2].done():  # cancelled sleeps
                heapq.heappop(self._sleepers)
            if done():
                return
            if self._sleepers and self._sleepers[0][0] <= until:
                when, _, woken = heapq.heappop(self._sleepers)
                self.t = max(self.t, when)
                woken.set_result(None)
            elif until < math.inf:
                self.t = max(self.t, until)
                return
        raise AssertionError("the virtual clock never settled")


def fake_sample(job: Job, at: float, input_tokens: int = 300, output_tokens: int = 40) -> Sample:
    """A sample as a provider reports it: its own token counts, a few o200k tokens of text."""
    events = tuple(Event((i + 1) * 1_000_000, EventKind.CONTENT, " the") for i in range(3))
    timeline = Timeline(0, 500_000, 5_000_000, events, usage=Reported(input_tokens, output_tokens))
    return make_sample("run", job.endpoint, job.workload.name, datetime.fromtimestamp(at, UTC), timeline)


class Runs:
    """A run_job that takes ``duration`` seconds on the clock, storing ``job.requests`` samples as it starts
    (or, ``late``, as it ends, as a real run does: each sample when its request has finished)."""

    def __init__(
        self, store: Store, clock: FakeClock, duration: float = 0.0, late: bool = False, output_tokens: int = 40
    ) -> None:
        self.store, self.clock, self.duration, self.late = store, clock, duration, late
        self.output_tokens = output_tokens
        self.started: dict[JobKey, list[float]] = defaultdict(list)
        self.in_flight: Counter[str] = Counter()
        self.most: Counter[str] = Counter()
        self.most_at_once = 0  # requests, every provider together
        self.cancelled: list[JobKey] = []
        self.fail: set[JobKey] = set()

    async def __call__(self, job: Job) -> None:
        provider, started = job.endpoint.provider, self.clock.now()
        self.started[job.key].append(started)
        self.in_flight[provider] += job.width
        self.most[provider] = max(self.most[provider], self.in_flight[provider])
        self.most_at_once = max(self.most_at_once, self.in_flight.total())
        try:
            if job.key in self.fail:
                self.fail.discard(job.key)
                raise RuntimeError("the endpoint said no\nand said it twice")
            if self.late:
                await self.clock.sleep(self.duration)
            for _ in range(job.requests):
                sample = fake_sample(job, started, output_tokens=self.output_tokens)
                self.store.add_sample(dataclasses.replace(sample, region=job.region))
            if not self.late:
                await self.clock.sleep(self.duration)
        except asyncio.CancelledError:
            self.cancelled.append(job.key)
            raise
        finally:
            self.in_flight[provider] -= job.width


def job(model: str, every_s: float = 600, jitter: float = 0.1, workload: Workload = SMALL, **kw: object) -> Job:
    provider = str(kw.pop("provider", "p"))
    endpoint = Endpoint(provider, model, "http://127.0.0.1:9/v1", plan=str(kw.pop("plan", "default")))
    return Job(endpoint, workload, every_s, jitter, workload.concurrency or 1, **kw)  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(str(tmp_path / "samples.db")) as s:
        yield s


async def run_for(sampler: Sampler, clock: FakeClock, seconds: float) -> None:
    """Run the sampler for ``seconds`` of virtual time, then stop it and wait out its grace period."""
    task = asyncio.ensure_future(sampler.run())
    await clock.advance(clock.t + seconds)
    sampler.stop()
    await clock.advance(done=task.done)
    await task


def test_never_sampled_and_missed_jobs_start_within_seconds_staggered() -> None:
    first = [next_due(job(f"m{i}"), None, T0) - T0 for i in range(50)]
    assert all(0 <= d < STAGGER_S for d in first) and len(set(first)) == 50
    missed = [next_due(job(f"m{i}"), T0 - 3 * DAY, T0) - T0 for i in range(50)]
    assert all(0 <= d < STAGGER_S for d in missed) and len(set(missed)) == 50


async def test_days_of_cadence_run_each_job_on_time(store: Store) -> None:
    clock = FakeClock()
    runs = Runs(store, clock)
    daily = job("m", every_s=DAY, jitter=0.5, workload=BUILTIN["parallel"])
    plan = [job("m", 600), job("m", 3 * 3600, workload=BUILTIN["10k"]), daily]
    await run_for(Sampler(plan, store, clock=clock, run_job=runs, inline_reads=True), clock, 3 * DAY)
    for j in plan:
        times = runs.started[j.key]
        assert times[0] < T0 + STAGGER_S  # never sampled: starts at once
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert all(j.every_s * (1 - j.jitter) - 1e-3 <= g <= j.every_s * (1 + j.jitter) + 1e-3 for g in gaps)
        assert 3 * DAY / (j.every_s * (1 + j.jitter)) <= len(times) <= 3 * DAY / (j.every_s * (1 - j.jitter)) + 1
    assert 420 <= len(runs.started[plan[0].key]) <= 445  # 432 expected at a mean interval of 600 s
    assert len(store.samples()) == sum(len(t) * j.requests for j in plan for t in [runs.started[j.key]])


async def test_a_restart_takes_due_times_from_the_database(tmp_path: Path) -> None:
    plan = [job("a", 600), job("b", 3600, jitter=0.3)]
    clock = FakeClock()
    with open_store(str(tmp_path / "s.db")) as store:
        first = Sampler(plan, store, clock=clock, run_job=Runs(store, clock), inline_reads=True)
        await run_for(first, clock, DAY)
        due_then = {s.job.key: s.next_due for s in first.status().jobs}
    clock.t += 1  # a quick restart: a new process, a new sampler, the same file
    with open_store(str(tmp_path / "s.db")) as store:
        again = Sampler(plan, store, clock=clock, run_job=(runs := Runs(store, clock)), inline_reads=True)
        task = asyncio.ensure_future(again.run())
        await clock.advance(clock.t)
        due_now = {s.job.key: s.next_due for s in again.status().jobs}
        await clock.advance(clock.t + 3600)
        again.stop()
        await clock.advance(done=task.done)
    restarted = datetime.fromtimestamp(clock.t - 3600, UTC)
    kept = [key for key, due in due_then.items() if due is not None and due > restarted]
    assert kept  # (the hashes put most due times well after the restart)
    for key in kept:  # recomputed from the database, not reset: the run happens when it would have
        assert due_now[key] == due_then[key]
        assert runs.started[key][0] == pytest.approx(due_then[key].timestamp(), abs=1e-3)  # type: ignore[union-attr]
    clock.t += 2 * DAY  # a long outage: every job missed its due time
    with open_store(str(tmp_path / "s.db")) as store:
        runs = Runs(store, clock)
        back = clock.t
        await run_for(Sampler(plan, store, clock=clock, run_job=runs, inline_reads=True), clock, 2 * 3600)
        for j in plan:
            soon = [t for t in runs.started[j.key] if t < back + STAGGER_S]
            later = [t for t in runs.started[j.key] if t >= back + STAGGER_S]
            assert len(soon) == 1  # once, soon: no catch-up burst for the two days missed
            assert not later or later[0] - soon[0] >= j.every_s * (1 - j.jitter) - 1e-3


def _most_in_any_day(times_and_usage: list[tuple[float, Spend]]) -> Spend:
    """The most of each count over any 24 h window [t - 24 h, t] ending at a sample."""
    most = Spend()
    for t, _ in times_and_usage:
        window = sum((u for s, u in times_and_usage if t - DAY <= s <= t), Spend())
        most = Spend(*(max(a, b) for a, b in zip(most._counts(), window._counts(), strict=True)))  # type: ignore[arg-type]
    return most


async def test_budgets_are_never_exceeded_and_skips_are_counted(store: Store) -> None:
    clock = FakeClock()
    by_requests = [job(m, 600, plan="small", budget=Budget(requests=30)) for m in ("m", "n")]  # share the cap
    by_output = job("m", 600, plan="tight", budget=Budget(output_tokens=600, input_tokens=100_000))
    free = job("m", 600, plan="free")
    runs = Runs(store, clock, duration=120, late=True)  # while a run is in flight, its samples are not stored
    sampler = Sampler([*by_requests, by_output, free], store, clock=clock, run_job=runs, inline_reads=True)
    await run_for(sampler, clock, 3 * DAY)
    rows = store.query(
        "SELECT plan, started_at, provider_input_tokens, provider_output_tokens FROM samples ORDER BY started_at"
    )
    per_plan: dict[str, list[tuple[float, Spend]]] = defaultdict(list)
    for plan_name, at, used_in, used_out in rows:
        per_plan[plan_name].append((at, Spend(1, used_in, used_out)))
    assert 29 <= _most_in_any_day(per_plan["small"]).requests <= 30  # to the cap less a refusal's room, never over
    assert _most_in_any_day(per_plan["tight"]).output_tokens <= 600
    assert _most_in_any_day(per_plan["tight"]).output_tokens >= 600 - 2 * 50  # within one worst case of the cap
    assert len(per_plan["free"]) >= 3 * DAY / 660
    status = {(b.provider, b.plan): b for b in sampler.status().budgets}
    assert set(status) == {("p", "small"), ("p", "tight")}
    assert status["p", "small"].skipped > 0 and status["p", "small"].last_skip is not None
    assert status["p", "tight"].skipped > 0 and 0 < status["p", "tight"].used[0].output_tokens <= 600
    assert usage(store, "p", "tight", T0 - DAY) == sum((u for _, u in per_plan["tight"]), Spend())


async def test_a_plans_budget_counts_every_regions_samples_and_each_region_keeps_its_cadence(store: Store) -> None:
    clock = FakeClock()
    one = job("m", 600, plan="small", budget=Budget(requests=30))
    regional = [dataclasses.replace(one, region=r) for r in ("eu", "us")]
    runs = Runs(store, clock, duration=60, late=True)
    sampler = Sampler(regional, store, clock=clock, run_job=runs, inline_reads=True)
    await run_for(sampler, clock, 2 * DAY)
    rows = store.query("SELECT region, started_at FROM samples ORDER BY started_at")
    assert {r for r, _ in rows} == {"eu", "us"}
    assert 29 <= _most_in_any_day([(at, Spend(1)) for _, at in rows]).requests <= 30  # both regions, one cap
    # Each region's job is its own: the two are due apart, one run each per interval at most.
    assert len({(job.slot) for job in regional}) == 2 and len(sampler.status().jobs) == 2
    for region in ("eu", "us"):
        times = [at for r, at in rows if r == region]
        assert all(b - a >= 600 * 0.9 - 1 for a, b in itertools.pairwise(times))


async def test_concurrency_is_counted_in_requests_in_flight(store: Store) -> None:
    clock = FakeClock()
    runs = Runs(store, clock, duration=900)  # runs outlast the interval: they always compete
    plan = [job(f"m{i}", 600, jitter=0.0, concurrency=3) for i in range(5)]
    plan.append(job("wide", 600, jitter=0.0, workload=BURST, concurrency=3))
    plan.append(job("m0", 600, jitter=0.0, provider="q", concurrency=3))  # another provider's room is its own
    await run_for(Sampler(plan, store, clock=clock, run_job=runs, inline_reads=True), clock, DAY)
    assert runs.most["p"] == 3 and runs.most["q"] == 1
    assert all(len(runs.started[j.key]) >= 10 for j in plan)  # the wide job is not starved by narrow ones


async def test_requests_in_flight_are_bounded_however_many_providers(store: Store) -> None:
    """11,905 providers, each with room of its own, started every run at once: the loop timed its own backlog."""
    clock = FakeClock()
    runs = Runs(store, clock, duration=30)
    plan = [job("m", 600, provider=f"p{i}") for i in range(300)]  # all due within the first 10 s
    plan.append(job("wide", 600, workload=BURST, provider="w", concurrency=3))
    await run_for(Sampler(plan, store, clock=clock, run_job=runs, inline_reads=True), clock, 3 * 3600)
    assert runs.most_at_once == sampling.MEASURED_AT_ONCE
    assert all(len(runs.started[j.key]) >= 15 for j in plan)  # room enough for every cadence: none starved

    clock = FakeClock()
    runs = Runs(store, clock, duration=30)
    plan = [job("wider", 600, workload=BURST, provider="w", concurrency=3), job("narrow", 600)]  # not yet run
    await run_for(Sampler(plan, store, clock=clock, run_job=runs, inline_reads=True, max_in_flight=2), clock, 3600)
    assert runs.most_at_once == 3 and all(len(runs.started[j.key]) >= 5 for j in plan)  # wider than the bound: alone


async def test_stop_while_reading_when_thousands_of_jobs_last_ran_starts_nothing(store: Store) -> None:
    """Reading when each of 11,905 jobs last ran took seconds, and a SIGTERM meanwhile waited for all of them."""
    clock = FakeClock()
    runs = Runs(store, clock)
    sampler = Sampler([job("m", 600, provider=f"p{i}") for i in range(5000)], store, clock=clock, run_job=runs)
    reads: Counter[object] = Counter()

    async def read(fn: Callable[[], Any]) -> Any:
        if isinstance(fn, partial):
            reads[fn.func] += 1
            if reads[job_last_started] == 10:
                sampler.stop()  # a signal handled while the read waited on the store's thread
        return fn()

    sampler._read = read  # type: ignore[method-assign]
    await asyncio.wait_for(sampler.run(), 60)
    assert reads[job_last_started] == 10 and runs.started == {}


async def test_a_failing_run_is_logged_in_one_line_and_the_loop_goes_on(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    runs = Runs(store, clock)
    bad, good = job("bad", 600), job("good", 600)
    runs.fail.add(bad.key)
    with caplog.at_level(logging.WARNING, "tokenpace.schedule.sampler"):
        await run_for(Sampler([bad, good], store, clock=clock, run_job=runs, inline_reads=True), clock, 3600)
    assert [r.getMessage() for r in caplog.records if r.name == "tokenpace.schedule.sampler"] == [
        "scheduled run p/bad small failed: the endpoint said no and said it twice"
    ]
    assert len(runs.started[bad.key]) >= 5 and len(runs.started[good.key]) >= 5


async def test_a_store_that_fails_does_not_stop_the_loop(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    runs = Runs(store, clock)
    plan = [job("m", 600), job("n", 600, budget=Budget(requests=1000))]
    sampler = Sampler(plan, store, clock=clock, run_job=runs, inline_reads=True)
    task = asyncio.ensure_future(sampler.run())
    await clock.advance(T0 + 3600)
    store.close()  # every read and write fails from here on
    with caplog.at_level(logging.WARNING, "tokenpace.schedule.sampler"):
        await clock.advance(T0 + 3 * 3600)
    sampler.stop()
    await clock.advance(done=task.done)
    await task
    said = [r.getMessage() for r in caplog.records if r.name == "tokenpace.schedule.sampler"]
    assert any(m.startswith("scheduled run p/m small failed: ") and "store is closed" in m for m in said)
    assert any(m.startswith("not starting p/n small: its budget cannot be checked: ") for m in said)
    assert len([t for t in runs.started[plan[0].key] if t > T0 + 3600]) >= 10  # on cadence all the same
    assert len([t for t in runs.started[plan[1].key] if t > T0 + 3600]) == 0  # unknown use is not spent


async def test_stop_gives_runs_their_grace_then_cancels_them(store: Store) -> None:
    clock = FakeClock()
    runs = Runs(store, clock, duration=20)
    plan = [job("quick", 600), job("slow", 600, provider="s")]
    sampler = Sampler(plan, store, clock=clock, run_job=runs, grace_s=30, inline_reads=True)
    task = asyncio.ensure_future(sampler.run())
    await clock.advance(T0 + STAGGER_S)  # both running, each for 20 s
    sampler.stop()
    stopped = clock.t
    await clock.advance(done=task.done)
    assert runs.cancelled == [] and clock.t <= stopped + 20  # finished within the grace: nothing cancelled
    assert all(len(runs.started[j.key]) == 1 for j in plan)  # and nothing new started after stop()

    clock2 = FakeClock()
    runs2 = Runs(store, clock2, duration=1000)
    sampler2 = Sampler([job("slow2", 600)], store, clock=clock2, run_job=runs2, grace_s=30, inline_reads=True)
    task2 = asyncio.ensure_future(sampler2.run())
    await clock2.advance(T0 + STAGGER_S)
    sampler2.stop()
    await clock2.advance(clock2.t + 5)
    sampler2.stop(grace_s=0)  # a second Ctrl-C: no more waiting
    await clock2.advance(done=task2.done)
    assert runs2.cancelled == [job("slow2").key] and clock2.t == T0 + STAGGER_S + 5


async def test_stop_records_cancelled_requests_of_a_real_measurement(store: Store) -> None:
    """The default run_job measures for real: a stream cut by stop() is a `cancelled` sample, not lost."""
    simulator = sim.Simulator(
        sim.Scenario(ttft_ms=5, tokens_per_s=2000, output_tokens=20),
        models={"slow": sim.Scenario(ttft_ms=5, tokens_per_s=5, output_tokens=1000)},
    )
    async with sim.serve(simulator) as url:
        plan = [Job(Endpoint("sim", model, url, simulated=True), SMALL, 600, 0.0, 1) for model in ("fast", "slow")]
        for j in plan:  # each last sampled 600 s ago, less a moment: due in 0.2 s, not after the stagger
            store.add_sample(fake_sample(j, time.time() - 600 + 0.2))
        sampler = Sampler(plan, store, grace_s=0.2)
        task = asyncio.ensure_future(sampler.run())
        for _ in range(400):  # until the fast run is stored and the slow stream is sending tokens
            await asyncio.sleep(0.025)
            slow = [t for t in simulator.truth.values() if t.completion_tokens >= 2]
            if len(store.samples()) == 3 and slow:
                break
        sampler.stop()
        await asyncio.wait_for(task, 10)
    measured = [s for s in store.samples() if s.run_id != "run"]
    assert sorted((s.endpoint.model, s.ok, s.error_kind) for s in measured) == [
        ("fast", True, None), ("slow", False, "cancelled"),
    ]  # fmt: skip
    assert {r.command for r in store.runs()} == {"tokenpace serve"}
    assert not any(s.running for s in sampler.status().jobs)


async def test_a_restarted_sampler_takes_idle_times_from_the_store(store: Store) -> None:
    """A run's first request is cold when the store's last request to the endpoint (any workload, an earlier
    serve) ended longer ago than the job's cold_after; a job whose threshold is off is never tagged."""
    async with sim.serve(sim.Simulator(sim.Scenario(ttft_ms=5, tokens_per_s=2000, output_tokens=20))) as url:
        plan = [
            Job(Endpoint("sim", model, url, simulated=True), SMALL, 600, 0.0, 2, cold_after_s=after)
            for model, after in (("a", 60.0), ("b", 0.0))
        ]
        for j in plan:  # sampled by another workload 600 s ago, less a moment: due in 0.2 s, idle since
            store.add_sample(fake_sample(dataclasses.replace(j, workload=BURST), time.time() - 600 + 0.2))
        sampler = Sampler(plan, store, grace_s=5)
        task = asyncio.ensure_future(sampler.run())
        for _ in range(400):
            await asyncio.sleep(0.025)
            if len(store.samples()) == 6:
                break
        sampler.stop()
        await asyncio.wait_for(task, 10)
    measured = sorted((s for s in store.samples() if s.run_id != "run"), key=lambda s: (s.endpoint.model, s.started_at))
    assert [(s.endpoint.model, s.cold) for s in measured] == [("a", True), ("a", False), ("b", False), ("b", False)]
    assert all(s.idle_s is not None and s.idle_s > 590 for s in (measured[0], measured[2]))  # from the store
    assert all(s.idle_s is not None and s.idle_s < 60 for s in (measured[1], measured[3]))


def test_the_config_drives_the_jobs_of_a_simulated_provider(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[providers.demo]\nsimulate = { ttft_ms = 50 }\nevery = "1m"\n[schedule]\nworkloads = ["1k"]\n')
    cfg = read_config(path)
    (only,) = jobs(cfg, cfg.endpoints)
    assert (only.endpoint.simulated, only.every_s, only.requests, only.concurrency) == (True, 60, 1, 10)
    assert only.cold_after_s == 900  # the default threshold; config.cold_after_of gives each endpoint's
    assert jobs(Config(), []) == []


async def test_samples_whose_write_failed_count_against_the_budget(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A full disk must not let a plan spend past its cap unseen: unsaved samples are spent all the same."""
    db = tmp_path / "s.db"
    with open_store(str(db)) as store:
        ((pages,),) = store.query("PRAGMA page_count")
        # From here on the file may not grow, as on a full disk: every sample insert fails, reads still work.
        store.query(f"PRAGMA max_page_count = {pages}", fresh=True)  # the writer's connection
        clock = FakeClock()
        runs = Runs(store, clock)
        capped = job("m", 600, budget=Budget(requests=20))
        sampler = Sampler([capped], store, clock=clock, run_job=runs, inline_reads=True)
        with caplog.at_level(logging.WARNING, "tokenpace.schedule.sampler"):
            await run_for(sampler, clock, 2 * DAY)
        stored = store.samples()  # the few that fitted in the pages the file already had
        assert len(stored) + len(store.unsaved) == len(runs.started[capped.key]) and len(store.unsaved) > len(stored)
        per_day = [(t, Spend(1)) for t in runs.started[capped.key]]
        assert 0 < _most_in_any_day(per_day).requests <= 20  # without the unsaved ones: 144 a day
        last_day = [t for t in runs.started[capped.key] if t >= clock.t - DAY]
        assert usage(store, "p", "default", clock.t - DAY).requests == len(last_day)
        said = [r.getMessage() for r in caplog.records if r.name == "tokenpace.schedule.sampler"]
        assert said and all(m.startswith("after p/m small: write failed: ") and "disk is full" in m for m in said)
        assert all("\n" not in m for m in said) and not store.rescue_path.exists()  # a full disk refuses no data
        store.query(f"PRAGMA max_page_count = {10 * pages}", fresh=True)


async def test_recent_skips_count_only_the_last_day(store: Store) -> None:
    clock = FakeClock()
    capped = job("m", 600, budget=Budget(requests=300))
    for _ in range(299):  # the cap is nearly spent at T0: runs are skipped for a day, then fit again
        store.add_sample(fake_sample(capped, T0))
    sampler = Sampler([capped], store, clock=clock, run_job=Runs(store, clock), inline_reads=True)
    task = asyncio.ensure_future(sampler.run())
    await clock.advance(T0 + DAY / 2)
    (half,) = sampler.status().budgets
    assert half.recent_skips == half.skipped > 50
    await clock.advance(T0 + 2.5 * DAY)
    (later,) = sampler.status().budgets
    assert later.skipped > half.skipped and later.recent_skips == 0  # the cap bit, but no longer bites
    assert later.last_skip is not None and later.last_skip.timestamp() <= T0 + DAY
    sampler.stop()
    await clock.advance(done=task.done)
    await task


async def test_stop_during_a_budget_read_starts_nothing(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    runs = Runs(store, clock)
    sampler = Sampler([job("m", 600, budget=Budget(requests=100))], store, clock=clock, run_job=runs, grace_s=0)
    reads: Counter[object] = Counter()

    async def read(fn: Callable[[], Any]) -> Any:
        if isinstance(fn, partial):
            reads[fn.func] += 1
            if (
                fn.func is spent_since and reads[fn.func] == 2
            ):  # the first is at startup, the second the due job's check
                sampler.stop()  # a signal handled while the read waited on the store's thread
        return fn()

    monkeypatch.setattr(sampler, "_read", read)
    task = asyncio.ensure_future(sampler.run())
    await clock.advance(done=task.done)
    await task
    assert reads[spent_since] == 2 and runs.started == {} and runs.cancelled == []


async def test_refused_requests_of_a_first_run_count_for_24_h(store: Store) -> None:
    """Retries after a refused field are stored as no sample: the sampler counts them once they are known."""
    clock = FakeClock()
    plan = [job(m, 600, budget=Budget(requests=10, input_tokens=100_000)) for m in ("m", "n")]
    runs = Runs(store, clock)
    sent: list[tuple[float, Spend]] = []
    refusal = Failure(ErrorKind.HTTP_ERROR, "unknown field stream_options", 400)

    async def first_run_refuses(j: Job) -> None:
        if j.endpoint not in sampler.refused_fields:  # each worker's first request refuses a field, then is resent
            sampler.refused_fields.remember(j.endpoint, refusal)
            sent.append((clock.now(), Spend(j.width, math.ceil(j.width * 300 * 1.05))))
        await runs(j)

    sampler = Sampler(plan, store, clock=clock, run_job=first_run_refuses, inline_reads=True)
    task = asyncio.ensure_future(sampler.run())
    await clock.advance(T0 + 700)  # each endpoint ran twice; the last check came before the last run stored
    (status,) = sampler.status().budgets
    stored = usage(store, "p", "default", T0 - 1)
    assert stored.requests == 4 and status.used[0] + Spend(1, 300, 40) == stored + Spend(2, 2 * 315)  # 2 refused
    await clock.advance(T0 + 3 * DAY)
    sampler.stop()
    await clock.advance(done=task.done)
    await task
    sent += [(s.started_at.timestamp(), Spend(1, 300)) for s in store.samples()]
    assert len(sent) > 2 + 10 and 9 <= _most_in_any_day(sent).requests <= 10  # to the cap less a refusal, not over


async def test_a_run_that_fits_alone_waits_for_the_plans_runs_in_flight(store: Store) -> None:
    """Only the room held back for a run in flight stops it: it starts when that run ends, no skip counted."""
    clock = FakeClock()
    a, b = (job(m, 600, budget=Budget(requests=3)) for m in ("a", "b"))  # a run's worst case: 2 requests
    runs = Runs(store, clock, duration=120, late=True)
    sampler = Sampler([a, b], store, clock=clock, run_job=runs, inline_reads=True)
    task = asyncio.ensure_future(sampler.run())
    await clock.advance(T0 + 300)
    (first,), (second,) = sorted(runs.started.values())
    assert second == first + 120  # on the first run's end, not an interval later
    (status,) = sampler.status().budgets
    assert status.skipped == 0 and status.last_skip is None
    await clock.advance(T0 + 1800)  # 2 of 3 requests used: the next run could exceed the cap on its own
    (status,) = sampler.status().budgets
    assert status.skipped > 0 and sum(map(len, runs.started.values())) == 2
    sampler.stop()
    await clock.advance(done=task.done)
    await task


def test_last_started_leaves_out_samples_cancelled_at_shutdown(any_store: Store) -> None:
    store, j = any_store, job("m", workload=BUILTIN["parallel"])
    store.add_sample(fake_sample(j, T0))
    failed = Failure(ErrorKind.HTTP_ERROR, "overloaded", 529)
    cancelled = Failure(ErrorKind.CANCELLED, "cancelled at shutdown")
    for at, failure in ((T0 + 10, failed), (T0 + DAY, cancelled)):
        events = (Event(1_000_000, EventKind.CONTENT, " the"),)
        timeline = Timeline(0, 500_000, 5_000_000, events, failure=failure)
        store.add_sample(make_sample("run", j.endpoint, j.workload.name, datetime.fromtimestamp(at, UTC), timeline))
    assert [s.error_kind for s in store.samples()].count(ErrorKind.CANCELLED) == 1
    assert job_last_started(store, j) == pytest.approx(T0 + 10, abs=1e-3)  # a failure is a run; a shutdown's cut is not


async def test_an_o200k_count_above_the_models_own_stays_within_the_output_cap(store: Store) -> None:
    clock = FakeClock()
    tiny = Workload("tiny", 2, input_tokens=300)  # the model stops at its own 2 tokens; o200k counts 3 of them
    capped = job("m", 600, workload=tiny, budget=Budget(output_tokens=11))
    runs = Runs(store, clock, output_tokens=2)
    await run_for(Sampler([capped], store, clock=clock, run_job=runs, inline_reads=True), clock, DAY)
    assert usage(store, "p", "default", T0 - 1) == Spend(3, 900, 9)  # with 2 a run allowed, a fourth: 12
