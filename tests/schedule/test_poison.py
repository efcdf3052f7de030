"""Rows no sampler may trip on (issue 9, item 8): impossible usage already in the database, and jobs that raise.

One reply with ``"prompt_tokens": 1e999`` stored Inf; the budget's SUM then raised OverflowError, the sampler
died and took the web server with it, and every restart died again on the same row. A negative count lowered
the spent budget. These tests put such rows straight into the database, as an old version or another writer
could have, and run the sampler for days on a virtual clock.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.schedule.test_sampler import DAY, T0, FakeClock, Runs, _most_in_any_day, fake_sample, job, run_for
from tests.store.test_database import raw
from tokenpace.config.settings import Budget, Spend
from tokenpace.schedule import sampler as sampling
from tokenpace.schedule.sampler import Sampler, usage
from tokenpace.store.database import Store, open_store
from tokenpace.store.usage import spent_since

# Per database, SQL literals a poisoned row can hold: SQLite takes any value in an INTEGER column (9e999 is
# Inf), PostgreSQL only 32-bit integers.
POISON = {
    "sqlite": ["9e999", "-1e12", str(2**62), "'many'"],
    "postgres": ["-2000000000", "-2000000000", "2000000000"],
}


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, Store]]:
    """(kind, url, store) for an empty database of each kind."""
    url = str(tmp_path / "s.db") if request.param == "sqlite" else str(request.getfixturevalue("pg_url"))
    with open_store(url) as store:
        yield request.param, url, store


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[Store]:
    with open_store(str(tmp_path / "samples.db")) as s:
        yield s


def poison(kind: str, url: str, store: Store, at: float) -> int:
    """Store one sample per poison of the database's kind at ``at``, then overwrite each of its counts with it."""
    for value in POISON[kind]:
        sample = fake_sample(job("m"), at)
        store.add_sample(sample)
        store.flush()
        counts = ("provider_input_tokens", "provider_output_tokens", "input_tokens", "output_tokens")
        sql = f"UPDATE samples SET {', '.join(f'{c} = {value}' for c in counts)} WHERE id = ?"  # noqa: S608
        raw(url, sql, (sample.id,))
    return len(POISON[kind])


def test_usage_counts_only_believable_provider_counts_and_never_refunds(db: tuple[str, str, Store]) -> None:
    kind, url, store = db
    n = poison(kind, url, store, T0)
    store.add_sample(fake_sample(job("m"), T0 + 1, input_tokens=1000, output_tokens=70))  # one honest row
    assert usage(store, "p", "default", T0 - DAY) == Spend(n + 1, 1000, 70)  # impossible counts count as 0


async def test_poisoned_rows_neither_stop_the_sampler_nor_refund_the_budget(
    db: tuple[str, str, Store], caplog: pytest.LogCaptureFixture
) -> None:
    kind, url, store = db
    poison(kind, url, store, T0 - 3600)  # stored in the last hour: in every budget window at first
    clock = FakeClock()
    runs = Runs(store, clock)
    capped = job("m", 600, budget=Budget(input_tokens=3000))  # 300 a run: about 10 runs a day, never 144
    free = job("n", 600, provider="q")
    with caplog.at_level(logging.WARNING, "tokenpace.schedule.sampler"):
        await run_for(Sampler([capped, free], store, clock=clock, run_job=runs, inline_reads=True), clock, 2 * DAY)
    assert len(runs.started[free.key]) >= 2 * DAY / 660  # the loop went on, on cadence
    spent = [(t, Spend(1, 300)) for t in runs.started[capped.key]]
    assert len(spent) >= 10 and _most_in_any_day(spent).input_tokens <= 3000  # the cap holds, and is used
    assert not [r for r in caplog.records if r.name == "tokenpace.schedule.sampler"]  # nothing went wrong


async def test_a_job_whose_handling_raises_is_logged_counted_and_the_rest_go_on(
    lite: Store, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever one job's budget read raises, the sampler (and the web server beside it) keeps running."""
    clock = FakeClock()
    store, runs = lite, Runs(lite, clock)
    broken, free = job("m", 600, budget=Budget(requests=100)), job("n", 600)
    other = job("x", 600, plan="ok", budget=Budget(requests=1000))

    def spent_that_overflows(s: Store, provider: str, plan: str, *rest: Any) -> tuple[Spend, ...]:
        if plan == "default":
            raise OverflowError("cannot convert float infinity to integer")
        return spent_since(s, provider, plan, *rest)

    monkeypatch.setattr("tokenpace.schedule.sampler.spent_since", spent_that_overflows)
    sampler = Sampler([broken, other, free], store, clock=clock, run_job=runs, inline_reads=True)
    with caplog.at_level(logging.WARNING, "tokenpace.schedule.sampler"):
        await run_for(sampler, clock, DAY)
    assert len(runs.started[free.key]) >= DAY / 660 and len(runs.started[other.key]) >= DAY / 660
    assert broken.key not in runs.started  # its use is unknown: it may not spend
    said = [r.getMessage() for r in caplog.records if r.name == "tokenpace.schedule.sampler"]
    assert said and all("cannot convert float infinity to integer" in m and "\n" not in m for m in said)
    assert sampler.status().failures == len(said) >= DAY / 660  # counted, once per try


async def test_a_failing_startup_read_does_not_stop_the_sampler(
    lite: Store, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    store, runs = lite, Runs(lite, clock)
    calls: list[str] = []

    def last_started_once_broken(s: Store, j: object) -> float | None:
        calls.append("x")
        if len(calls) == 1:
            raise ValueError("could not convert string to float: 'garbage'")
        return None

    monkeypatch.setattr(sampling, "job_last_started", last_started_once_broken)
    sampler = Sampler([job("m", 600), job("n", 600)], store, clock=clock, run_job=runs, inline_reads=True)
    with caplog.at_level(logging.WARNING, "tokenpace.schedule.sampler"):
        await run_for(sampler, clock, 3600)
    assert all(len(runs.started[j.key]) >= 5 for j in sampler.jobs)
    assert sampler.status().failures >= 1
