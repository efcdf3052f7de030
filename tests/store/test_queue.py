"""The region queues on the machine's PostgreSQL: orders bounded, one waiting per lock, states, cancelling."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.store.test_windows import GROQ, stream
from tokenpace.errors import ConfigError, StoreError
from tokenpace.measure.sample import Origin, make_sample
from tokenpace.store import agents
from tokenpace.store.database import open_store
from tokenpace.store.queue import Queue, RunOrder, queue_name

ORDER = {"endpoint": "groq/llama", "workload": "1k", "region": "eu-west", "requests": 2, "deadline": 1e9}


def test_only_postgresql_carries_queues(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^regions need a PostgreSQL store: give --db postgresql://"):
        Queue(str(tmp_path / "t.db"))


@pytest.mark.parametrize(
    "change",
    [{"requests": 0}, {"requests": 10_001}, {"requests": "many"}, {"deadline": "soon"}, {"endpoint": "x" * 1001},
     {"workload": "w" * 201}, {"idle_s": -1}, {"idle_s": float("nan")}, {"idle_s": float("inf")},
     {"idle_s": "long"}, {"round_seed": -1}, {"round_seed": 1 << 31}, {"round_seed": 1.5}, {"round_seed": "7"},
     {"round_seed": True}],
)  # fmt: skip
def test_an_order_out_of_bounds_is_refused(change: dict[str, Any]) -> None:
    assert RunOrder.from_kwargs(ORDER) == RunOrder("groq/llama", "1k", "eu-west", 2, 1e9)
    with pytest.raises(ValueError, match="not a tokenpace order"):
        RunOrder.from_kwargs(ORDER | change)
    with pytest.raises(ValueError, match="not a tokenpace order: KeyError"):
        RunOrder.from_kwargs({k: v for k, v in ORDER.items() if k != "region"})
    assert RunOrder.from_kwargs(ORDER | {"idle_s": 3600}).idle_s == 3600.0  # a wake order's (schedule/wake.py)
    assert RunOrder.from_kwargs(ORDER | {"round_seed": (1 << 31) - 1}).round_seed == (1 << 31) - 1  # schedule/rounds.py


async def test_one_waiting_order_per_lock_and_cancelling_one(pg_url: str) -> None:
    queue = Queue(pg_url)
    await queue.open()
    try:
        assert not await queue.installed()
        assert await queue.install() is True
        assert await queue.install() is False
        order = RunOrder.from_kwargs(ORDER)
        first = await queue.defer(order)
        assert await queue.defer(order) == first  # it waits already: no second behind it
        other = await queue.defer(RunOrder.from_kwargs(ORDER | {"region": "us-east"}))
        assert other != first and queue_name("us-east") == "tokenpace-us-east"
        states = await queue.states([first, other, 999_999])
        assert {i: (s.status, s.attempts) for i, s in states.items()} == {first: ("todo", 0), other: ("todo", 0)}
        assert await queue.cancel(first) is True
        assert (await queue.states([first]))[first].status == "cancelled"
        assert await queue.defer(order) != first  # the lock is free again
        assert await queue.recover(30.0) == []  # nothing running, nothing stalled
    finally:
        await queue.close()


async def test_errors_are_one_line_without_the_password() -> None:
    queue = Queue("postgresql://someone:s3cret-pw@127.0.0.1:1/none?connect_timeout=1")
    with pytest.raises(StoreError) as caught:
        await queue.open()
        await queue.installed()
    assert "s3cret-pw" not in str(caught.value) and "\n" not in str(caught.value)
    assert "Connection refused" in str(caught.value)  # the server's reason, not the pool's 30 s timeout
    await queue.close()


async def test_a_stalled_job_ends_as_its_stored_samples_say(pg_url: str) -> None:
    """Issue 29: a job whose queue worker stopped beating was recorded failed though both its samples were stored,
    and one still being measured by a live agent was retried (and run twice). Each on its last attempt here."""
    now = datetime.now(UTC)
    open_store(pg_url).close()  # the schema: samples and agents
    queue = Queue(pg_url)
    await queue.open()
    try:
        await queue.install()
        jobs = {w: await queue.defer(RunOrder.from_kwargs(ORDER | {"workload": w})) for w in ("1k", "10k", "100k")}
        with psycopg.connect(pg_url, autocommit=True) as conn:  # taken by a worker that stopped beating
            sql = "INSERT INTO procrastinate_workers (last_heartbeat) VALUES (now() - interval '1 hour') RETURNING id"
            (worker,) = conn.execute(sql).fetchone() or ()
            conn.execute("UPDATE procrastinate_jobs SET status = 'doing', worker_id = %s, attempts = 1", (worker,))
        with open_store(pg_url) as store:
            old = now - timedelta(hours=1)
            agents.beat(store, agents.AgentRow("gone", "eu-west", "h", "1", old, old, 10.0))  # down for an hour
            agents.beat(store, agents.AgentRow("busy", "eu-west", "h", "1", now, now, 10.0))  # beating now
            stored = {("1k", 0, "gone"), ("1k", 1, "gone"), ("10k", 0, "gone"), ("100k", 0, "busy")}
            for workload, seq, agent in stored:
                origin = Origin("eu-west", agent, str(jobs[workload]))
                store.add_sample(make_sample("r", GROQ, workload, now, stream(50, 5), origin=origin, seq=seq))
        recovered = dict(await queue.recover(30.0))
        states = await queue.states(jobs.values())
    finally:
        await queue.close()
    assert recovered == {jobs["1k"]: "stored", jobs["10k"]: "failed"}  # 100k: its agent still measures it
    assert {w: states[j].status for w, j in jobs.items()} == {"1k": "succeeded", "10k": "failed", "100k": "doing"}
