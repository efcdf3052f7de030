"""Alerts end to end: a simulator slows down mid-run, the sampler samples it, webhooks hear of it exactly once.

Real parts throughout: the simulator, the sampler measuring it into SQLite, the watcher and the sender as serve
wires them, and aiohttp receivers on free ports (one that answers, one that fails twice first, one that hangs).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.webkit import Steady
from tokenpace import sim
from tokenpace.board.changepoint import MIN_AFTER, MIN_BEFORE, MIN_RATIO
from tokenpace.board.changes import Change
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.workloads import Workload
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.schedule.cadence import Job
from tokenpace.schedule.sampler import Sampler
from tokenpace.serve.alerts import MAX_FIELD, Sender, Watcher, alerting, body, slack_text
from tokenpace.store.database import Store, open_store

SMALL = Workload("small", 60, input_tokens=300)
BEFORE = sim.Scenario(ttft_ms=2, tokens_per_s=500, output_tokens=50)  # 0.1 s streams: lag of a few ms is small
AFTER = dataclasses.replace(BEFORE, tokens_per_s=125)
SECRET_PATH = "/hook/T000/sekrit-token-123"  # noqa: S105 (a made-up one)


class Receiver:
    """A webhook on a free port: records each POST's JSON; ``fail_first`` answers 500 first, ``hang`` never."""

    def __init__(self, fail_first: int = 0, hang: bool = False) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.attempts = 0
        self.fail_first, self.hang = fail_first, hang
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.attempts += 1
        if self.hang:
            await asyncio.sleep(3600)
        if self.attempts <= self.fail_first:
            return web.Response(status=500)
        self.bodies.append(await request.json())
        return web.Response(text="ok")

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Receiver]:
        app = web.Application()
        app.router.add_post(SECRET_PATH, self.handle)
        runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{runner.addresses[0][1]}{SECRET_PATH}"
        try:
            yield self
        finally:
            await runner.cleanup()


async def until(done: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not done():
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"{what}: not within {timeout_s:g} s")
        await asyncio.sleep(0.05)


def measure_steadily(store: Store) -> Callable[[Job], Awaitable[object]]:
    """The sampler's own measurement (Sampler._measure), its samples written as not client-bound: on a busy
    test machine many would be, and the detector rightly ignores those (tests/board/test_changes.py)."""

    async def run_job(job: Job) -> object:
        options = RunOptions(job.requests, 1, source="scheduled", publish=True, command="tokenpace serve")
        return await run_workload([job.endpoint], job.workload, options, Steady(store))

    return run_job


def ok_samples(store: Store) -> int:
    return sum(s.ok for s in store.samples())


async def test_a_slowdown_reaches_every_webhook_once_while_the_sampler_keeps_sampling(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tokenpace.serve.alerts")
    simulator = sim.Simulator(BEFORE)
    good, flaky, hanging = Receiver(), Receiver(fail_first=2), Receiver(hang=True)
    async with (
        sim.serve(simulator) as url,
        good.running(),
        flaky.running(),
        hanging.running(),
    ):
        with open_store(str(tmp_path / "serve.db")) as store:
            job = Job(Endpoint("simco", "sim", url, simulated=True), SMALL, every_s=1.0, jitter=0.0, requests=5)
            sampler = Sampler([job], store, run_job=measure_steadily(store), grace_s=1)
            sender = Sender([good.url, flaky.url, hanging.url], timeout_s=1.0, attempts=4, backoff_s=0.05)
            watcher = Watcher(store, [job.key], lambda c: sender.put(body(c, "https://board.example")), every_s=0.2)
            sampling = asyncio.ensure_future(sampler.run())
            alerts = asyncio.ensure_future(alerting(watcher, sender))
            try:
                await until(lambda: ok_samples(store) >= MIN_BEFORE + 6, 60, "the baseline")
                assert good.bodies == []  # a steady simulator: no alarm
                simulator.default = AFTER  # the simulator slows down mid-run
                await until(lambda: len(good.bodies) == 1, 60, "the good webhook's message")
                await until(lambda: len(flaky.bodies) == 1, 10, "the flaky webhook's message, retried")
                # The hanging webhook holds its own queue; the sampler went on sampling meanwhile.
                assert hanging.attempts >= 1
                during = ok_samples(store)
                await until(lambda: ok_samples(store) >= during + MIN_AFTER, 30, "more samples during the hang")
                await until(lambda: sender.counts[2].failed == 1, 30, "the hanging webhook's timeouts")
                assert watcher.failures == 0 and sampler.status().failures == 0
            finally:
                sampler.stop(grace_s=0)
                await asyncio.wait_for(sampling, 10)
                alerts.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await alerts
    (message,) = good.bodies
    assert flaky.bodies == [message] and flaky.attempts == 3  # two 500s, then delivered
    assert (message["metric"], message["direction"], message["endpoint"]) == ("output_speed", "slower", "simco/sim")
    # 500 -> 125 tok/s: the first alert may come while the split sits a few samples early, its after side's
    # median then between the two (303 tok/s under the suite's workers), still past the detector's 20 %.
    assert message["before"] > 450 and message["after"] * (1 + MIN_RATIO) < message["before"]
    assert message["text"].startswith("tokenpace: simco/sim output speed fell ")
    assert message["board_url"] == "https://board.example/endpoint/simco/default/sim"
    assert (sender.counts[0].sent, sender.counts[1].sent, sender.counts[2].attempts) == (1, 1, 4)
    assert "sekrit" not in caplog.text and "127.0.0.1" in caplog.text  # the host only, never the path


def change(**kw: Any) -> Change:
    fields: dict[str, Any] = {
        "metric": "output_speed", "provider": "groq", "plan": "default", "model": "llama", "workload": "1k",
        "at": datetime(2026, 12, 3, 12, 3, tzinfo=UTC), "before": 312.4, "after": 151.0, "direction": "slower",
    }  # fmt: skip
    return Change(**{**fields, **kw})


def test_the_message_is_slack_compatible_and_bounded() -> None:
    c = change()
    assert slack_text(c) == "tokenpace: groq/llama output speed fell 312 -> 151 tok/s (1k, since 2026-12-03 12:03 UTC)"
    doc = json.loads(body(c, None))
    assert doc["text"] == slack_text(c) and doc["board_url"] is None and doc["at"] == "2026-12-03T12:03:00+00:00"
    huge = json.loads(body(change(model="m" * 100_000, workload="w" * 100_000), "https://b.example"))
    assert len(json.dumps(huge)) < 4 * 1024
    assert len(huge["model"]) == MAX_FIELD and len(huge["board_url"]) == MAX_FIELD


def test_each_change_is_new_once(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "t.db")) as store:
        watcher = Watcher(store, [], lambda c: None)
    t = datetime(2026, 12, 3, 13, 0, tzinfo=UTC)
    first = change()
    assert watcher.new([first], t) == [first]
    moved = change(at=first.at + timedelta(minutes=10))  # a later sample moved the estimate: the same change
    assert watcher.new([moved], t + timedelta(minutes=1)) == []
    back = change(at=t + timedelta(minutes=30), before=151.0, after=300.0, direction="faster")
    assert watcher.new([back], t + timedelta(hours=1)) == [back]  # the other way: news
    again = change(at=t + timedelta(hours=2))  # slower again, after the last message: news
    assert watcher.new([again], t + timedelta(hours=3)) == [again]
    ttft = change(metric="ttft_ms", direction="slower")  # another metric of the same endpoint
    assert watcher.new([ttft], t + timedelta(hours=3)) == [ttft]


async def test_a_full_queue_drops_its_oldest_message_counted(caplog: pytest.LogCaptureFixture) -> None:
    sender = Sender([f"http://127.0.0.1:9{SECRET_PATH}"], queue_max=2)
    for i in range(5):
        sender.put(str(i).encode())
    assert sender.counts[0].dropped == 3
    assert "queue full" in caplog.text and "sekrit" not in caplog.text


async def test_a_refused_message_is_not_retried() -> None:
    class Gone(Receiver):
        async def handle(self, request: web.Request) -> web.Response:
            self.attempts += 1
            return web.Response(status=404)

    async with Gone().running() as gone:
        sender = Sender([gone.url], attempts=5, backoff_s=0.01)
        sender.put(b"{}")
        task = asyncio.ensure_future(sender.run())
        await until(lambda: sender.counts[0].failed == 1, 10, "giving up")
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert gone.attempts == 1
