"""The agents table: an agent's row written and read back whole, its state from its heartbeat, the clock offset."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tokenpace.store import agents
from tokenpace.store.agents import AgentRow
from tokenpace.store.database import open_store
from tokenpace.store.queue import Queue, RunOrder

T0 = datetime(2026, 12, 1, 12, tzinfo=UTC)


def test_an_agents_row_round_trips_and_updates(url: str) -> None:
    first = AgentRow("fra-1", "eu-west", "fra-host", "0.1.0", T0, T0, 10)
    later = AgentRow("fra-1", "eu-west", "fra-host", "0.1.0", T0, T0 + timedelta(seconds=10), 10, None, 3, 1, 2, 0.5)
    other = AgentRow("iad-1", "us-east", "iad-host", "0.1.0", T0, T0, 2, T0 + timedelta(minutes=1))
    with open_store(url) as store:
        agents.beat(store, first)
        agents.beat(store, other)
        agents.beat(store, later)
        assert agents.read_all(store) == [later, other]


def test_state_from_heartbeat_and_stop() -> None:
    agent = AgentRow("a", "eu-west", "h", "v", T0, T0, 10)
    assert agent.state(T0 + timedelta(seconds=agents.MISSED * 10)) == "up"
    assert agent.state(T0 + timedelta(seconds=agents.MISSED * 10 + 1)) == "down"
    stopped = AgentRow("a", "eu-west", "h", "v", T0, T0, 10, T0)
    assert stopped.state(T0 + timedelta(days=1)) == "stopped"


def test_clock_offset_is_small_against_a_database_on_this_machine(url: str) -> None:
    with open_store(url) as store:
        assert abs(agents.clock_offset_ms(store)) < 50  # the same machine's clock, read twice


async def test_jobs_per_region_and_status_come_from_the_queues(url: str) -> None:
    with open_store(url) as store:
        assert agents.queues(store) == {}  # no region queues yet (and never on SQLite)
        if store.dialect != "postgresql":
            return
        queue = Queue(url)
        await queue.open()
        try:
            await queue.install()
            waiting = await queue.defer(RunOrder("a/m", "1k", "eu-west", 1, 1e9))
            await queue.defer(RunOrder("b/m", "1k", "eu-west", 1, 1e9))
            await queue.defer(RunOrder("a/m", "1k", "us-east", 1, 1e9))
            assert await queue.cancel(waiting)
        finally:
            await queue.close()
        found = agents.queues(store)
    assert {r: {k: v for k, v in n.items() if v} for r, n in found.items()} == {
        "eu-west": {"todo": 1, "cancelled": 1}, "us-east": {"todo": 1},
    }  # fmt: skip
