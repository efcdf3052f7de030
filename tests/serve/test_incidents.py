"""Incident alerts end to end: samples stored in SQLite on an injected clock, the incident watcher and the alerts'
Sender as serve wires them, and a real webhook receiver on a free port hearing each open and close exactly once;
and an outage the simulator scripts, measured by tokenpace's own client."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.serve.test_alerts import SMALL, Receiver, until
from tests.store.test_windows import stream
from tests.webkit import Steady
from tokenpace import sim
from tokenpace.board.incidents import Incident
from tokenpace.config.alerts import Alerts
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.sample import make_sample
from tokenpace.serve.alerts import Sender
from tokenpace.serve.incidents import IncidentWatcher
from tokenpace.store import alerted
from tokenpace.store.database import Store, open_store
from tokenpace.store.series import Placed, placed_series

T0 = datetime(2026, 11, 20, tzinfo=UTC)
STEP = timedelta(minutes=10)
GROQ = Endpoint("groq", "llama", "http://groq.invalid/v1", plan="free")


class Clock:
    """The injected clock: the time of the last sample written, and a minute."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> datetime:
        return T0 + self.n * STEP + timedelta(minutes=1)


def write(store: Store, clock: Clock, oks: Sequence[bool]) -> None:
    for ok in oks:
        clock.n += 1
        failure = None if ok else Failure(ErrorKind.HTTP_ERROR, "down", 503)
        store.add_sample(make_sample("run", GROQ, "1k", T0 + clock.n * STEP, stream(100, 10, failure=failure)))
    store.flush()


def test_an_incident_is_sent_once_when_it_opens_and_once_when_it_closes(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = Clock()
        config = Config(endpoints=(GROQ,), alerts=Alerts(board_url="https://speed.example.com"))
        with open_store(str(tmp_path / "alerts.db")) as store:
            write(store, clock, [True] * 10)
            async with Receiver().running() as hook:
                sender = Sender([hook.url], backoff_s=0.01)
                watcher = IncidentWatcher(store, config, sender.put, every_s=0.05, now=clock)
                delivering = asyncio.ensure_future(sender.run())
                try:
                    assert await watcher.check() == []
                    write(store, clock, [False] * 5)  # the fifth failure in a row opens an outage
                    (opened,) = await watcher.check()
                    assert await watcher.check() == []  # nothing new stored
                    write(store, clock, [False, True, True])
                    assert await watcher.check() == []  # still the same incident, not yet closed
                    write(store, clock, [True])  # the third success in a row closes it
                    (closed,) = await watcher.check()
                    write(store, clock, [False] * 5 + [True] * 3)  # opened and closed between two looks
                    again = await watcher.check()
                    await until(lambda: len(hook.bodies) == 4, 5, "four messages")
                finally:
                    delivering.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await delivering
            ids = [s.id for s in placed_series(store, since=T0)]
            restarted = IncidentWatcher(store, config, lambda _: None, now=clock)
            assert await restarted.check() == []  # both closed before it started: history, not news
        assert [e for e, _ in (opened, closed, *again)] == ["opened", "closed", "opened", "closed"]
        assert opened[1].opened_by == tuple(ids[10:15]) and closed[1].closed_by == ids[18]
        first, last = hook.bodies[0], hook.bodies[1]
        assert (first["event"], last["event"]) == ("incident_opened", "incident_closed")
        assert first["text"].startswith("tokenpace: incident opened: critical outage on groq:free/llama, ")
        assert "seen by tokenpace from this server" in first["text"] and "status page" not in first["text"]
        assert first["board_url"] == "https://speed.example.com/status/groq"
        assert (first["closed_by"], last["closed_by"], last["opened_by"][-1]) == (None, ids[18], ids[14])
        assert [b["event"] for b in hook.bodies[2:]] == ["incident_opened", "incident_closed"]

    asyncio.run(scenario())


def test_an_outage_the_simulator_scripts_opens_and_closes_where_the_rule_says(tmp_path: Path) -> None:
    """The simulator answers, then fails every request with a 500, then answers again; tokenpace's own client
    measures it into SQLite, and the incident opens at the fifth failed sample and closes at the third good one."""
    healthy = sim.Scenario(ttft_ms=2, tokens_per_s=2000, output_tokens=20)

    async def scenario() -> list[tuple[str, Incident]]:
        simulator = sim.Simulator(healthy)
        async with sim.serve(simulator) as url:
            with open_store(str(tmp_path / "sim.db")) as store:
                endpoint = Endpoint("simco", "sim", url, simulated=True)
                watcher = IncidentWatcher(store, Config(endpoints=(endpoint,)), lambda _: None)
                for scripted, n in ((healthy, 10), (dataclasses.replace(healthy, error="500"), 6), (healthy, 4)):
                    simulator.default = scripted
                    options = RunOptions(n, 1, source="scheduled", publish=True, command="tokenpace serve")
                    await run_workload([endpoint], SMALL, options, Steady(store))
                    store.flush()
                events = await watcher.check()
                samples.extend(placed_series(store, since=T0))
        return events

    samples: list[Placed] = []
    events = asyncio.run(scenario())
    assert [s.point.ok for s in samples] == [True] * 10 + [False] * 6 + [True] * 4
    assert [e for e, _ in events] == ["opened", "closed"]  # both since the watcher started
    c = events[0][1]
    assert (c.rule, c.severity, c.region) == ("outage", "critical", "")
    assert c.opened_by == tuple(s.id for s in samples[10:15]) and c.closed_by == samples[18].id
    assert (c.opened_at, c.closed_at) == (samples[14].point.started_at, samples[18].point.started_at)


def test_a_restart_announces_no_incident_again_and_closes_the_one_announced_before(tmp_path: Path) -> None:
    """Serve stopped and started again five times over the same SQLite file, each start a new store and watcher
    (what a new process has), one real webhook receiver hearing it all: each open and close once."""
    path = str(tmp_path / "restarts.db")
    clock = Clock()
    config = Config(endpoints=(GROQ,))

    async def scenario(hook: Receiver) -> list[list[str]]:
        sender = Sender([hook.url], backoff_s=0.01)
        delivering = asyncio.ensure_future(sender.run())
        looks: list[list[str]] = []

        async def serve(*writes: Sequence[bool]) -> None:
            """One process: a look at the start, then one after each batch of samples stored."""
            with open_store(path) as store:
                watcher = IncidentWatcher(store, config, sender.put, now=clock)
                looks.append([e for e, _ in await watcher.check()])
                for oks in writes:
                    write(store, clock, oks)
                    looks.append([e for e, _ in await watcher.check()])

        def down(oks: Sequence[bool]) -> None:
            """Samples stored while serve is down (as an agent stores them)."""
            with open_store(path) as store:
                write(store, clock, oks)

        try:
            await serve([True] * 10, [False] * 5)  # the outage opens
            await serve([False] * 2)  # started again while it is open: nothing
            down([True] * 3)  # it closes while serve is down
            await serve([False] * 5)  # the close is sent at the start; a new outage opens
            down([True] * 163 + [False] * 5)  # it closes, more than a day passes, and a third opens
            await serve()  # the second's close is too old to send (forgotten); the third is announced
            await serve()  # and not again
            await until(lambda: len(hook.bodies) == 4, 5, "four messages")
        finally:
            delivering.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await delivering
        return looks

    async def heard() -> tuple[list[list[str]], Receiver]:
        async with Receiver().running() as hook:
            return await scenario(hook), hook

    looks, hook = asyncio.run(heard())
    assert looks == [[], [], ["opened"], [], [], ["closed"], ["opened"], ["opened"], []]
    events = [(b["event"], b["opened_by"][-1]) for b in hook.bodies]
    assert [e for e, _ in events] == ["incident_opened", "incident_closed", "incident_opened", "incident_opened"]
    assert events[0][1] == events[1][1] != events[2][1] != events[3][1]  # each outage its own opening sample
    with open_store(path) as store:  # the third, announced and open: the second's row gave way to it
        assert [opened_by for opened_by, _ in alerted.announced(store).values()] == [events[3][1]]
