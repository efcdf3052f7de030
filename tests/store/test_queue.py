"""The region queues on the machine's PostgreSQL: orders bounded, one waiting per lock, states, cancelling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tokenpace.errors import ConfigError, StoreError
from tokenpace.store.queue import Queue, RunOrder, queue_name

ORDER = {"endpoint": "groq/llama", "workload": "1k", "region": "eu-west", "requests": 2, "deadline": 1e9}


def test_only_postgresql_carries_queues(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^regions need a PostgreSQL store: give --db postgresql://"):
        Queue(str(tmp_path / "t.db"))


@pytest.mark.parametrize(
    "change",
    [{"requests": 0}, {"requests": 10_001}, {"requests": "many"}, {"deadline": "soon"}, {"endpoint": "x" * 1001},
     {"workload": "w" * 201}, {"idle_s": -1}, {"idle_s": float("nan")}, {"idle_s": float("inf")},
     {"idle_s": "long"}],
)  # fmt: skip
def test_an_order_out_of_bounds_is_refused(change: dict[str, Any]) -> None:
    assert RunOrder.from_kwargs(ORDER) == RunOrder("groq/llama", "1k", "eu-west", 2, 1e9)
    with pytest.raises(ValueError, match="not a tokenpace order"):
        RunOrder.from_kwargs(ORDER | change)
    with pytest.raises(ValueError, match="not a tokenpace order: KeyError"):
        RunOrder.from_kwargs({k: v for k, v in ORDER.items() if k != "region"})
    assert RunOrder.from_kwargs(ORDER | {"idle_s": 3600}).idle_s == 3600.0  # a wake order's (schedule/wake.py)


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
    await queue.close()
