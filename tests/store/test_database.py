"""The store, against real SQLite files and a real PostgreSQL server, each test in a fresh database."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import platformdirs
import psycopg
import pytest

from tokenpace.config.endpoints import Endpoint
from tokenpace.errors import StoreError
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.metrics import Metrics, compute
from tokenpace.measure.sample import Network, Origin, RunRecord, Sample, make_sample
from tokenpace.measure.timing import Event, EventKind, Timeline, Usage
from tokenpace.store.columns import SAMPLE_COLUMNS, sample_values
from tokenpace.store.database import Store, default_db_path, open_store

PG = os.environ.get("TOKENPACE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
MS = 1_000_000
T0 = datetime(2025, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
ENDPOINT = Endpoint(
    provider="groq", model="llama-3.1-8b-instant", base_url="https://api.groq.com/openai/v1",
    plan="free", api_key_env="GROQ_API_KEY",
)  # fmt: skip


def raw(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run SQL on a connection of the test's own, behind the store's back; returns any rows."""
    if url.startswith("postgresql://"):
        with psycopg.connect(url, autocommit=True) as pg:
            pg.execute("SET lock_timeout = '5s'")  # a lock the store forgot to release fails, not hangs
            cur = pg.execute(sql.replace("?", "%s"), params)
            return cur.fetchall() if cur.description else []
    with sqlite3.connect(url, isolation_level=None) as lite:
        return lite.execute(sql, params).fetchall()


def columns(url: str, table: str) -> list[str]:
    sql = f"SELECT * FROM {table} LIMIT 0"  # noqa: S608
    if url.startswith("postgresql://"):
        with psycopg.connect(url) as pg:
            return [c.name for c in pg.execute(sql).description or ()]
    with sqlite3.connect(url) as lite:
        return [c[0] for c in lite.execute(sql).description]


def ok_sample(run_id: str = "run-1", started_at: datetime = T0, endpoint: Endpoint = ENDPOINT) -> Sample:
    """A streamed answer with reasoning first; whole-microsecond times so the JSON timeline is lossless."""
    events = (
        Event(250 * MS, EventKind.OTHER),
        Event(300 * MS, EventKind.REASONING, "Let me think."),
        Event(340 * MS, EventKind.CONTENT, "Hello"),
        Event(361 * MS, EventKind.CONTENT, " there, how are you?"),
        Event(402 * MS, EventKind.FINISH, "stop"),
        Event(403 * MS, EventKind.USAGE),
        Event(404 * MS, EventKind.DONE),
    )
    timeline = Timeline(
        t_sent_ns=0, t_headers_ns=120 * MS, t_end_ns=405 * MS, events=events, connect_ns=31 * MS,
        usage=Usage(12, 9, 3), response_id="chatcmpl-1", server_timings={"queue_ms": 4.5},
    )  # fmt: skip
    return make_sample(run_id, endpoint, "short", started_at, timeline)


def failed_sample(run_id: str = "run-1", started_at: datetime = T0) -> Sample:
    failure = Failure(ErrorKind.RATE_LIMITED, "429 Too Many Requests: slow down", 429)
    timeline = Timeline(t_sent_ns=0, t_headers_ns=80 * MS, t_end_ns=81 * MS, events=(), failure=failure)
    return make_sample(run_id, ENDPOINT, "short", started_at, timeline)


def run_record(run_id: str = "run-1", completed: int = 3) -> RunRecord:
    return RunRecord(
        id=run_id, started_at=T0, finished_at=T0 + timedelta(seconds=42.5), command="tokenpace run groq",
        concurrency=2, requested=3, completed=completed, loop_lag_p50_ms=0.2, loop_lag_p99_ms=1.7,
        loop_lag_max_ms=None, cpu_us_per_event=11.25, client_bound=False,
    )  # fmt: skip


def test_successful_sample_round_trips(url: str) -> None:
    sample = ok_sample()
    assert sample.metrics.output_speed is not None and sample.metrics.reasoning_tokens > 0  # a real stream
    with open_store(url) as store:
        store.add_sample(sample)
        store.flush()
        (back,) = store.samples()
    assert back == sample
    assert compute(back.timeline) == back.metrics  # the stored timeline still yields the stored figures


def test_failed_sample_keeps_its_error(url: str) -> None:
    with open_store(url) as store:
        store.add_sample(failed_sample())
        store.flush()
        (back,) = store.samples()
    assert not back.ok
    assert (back.error_kind, back.error_message, back.http_status) == (
        ErrorKind.RATE_LIMITED, "429 Too Many Requests: slow down", 429,
    )  # fmt: skip
    assert back.metrics == Metrics(ttfb_ms=80.0, e2e_ms=81.0)  # None wherever the stream gave nothing
    assert raw(url, "SELECT ok, error_kind, ttft_ms FROM samples") == [(0, "rate_limited", None)]


def test_samples_are_ordered_filtered_and_limited(url: str) -> None:
    early, middle = failed_sample(), ok_sample("run-2", started_at=T0 + timedelta(minutes=1))
    late = ok_sample(started_at=T0 + timedelta(minutes=5))
    with open_store(url) as store:
        for sample in (late, early, middle):
            store.add_sample(sample)
        assert store.samples() == [early, middle, late]
        assert store.samples(limit=2) == [early, middle]
        assert store.samples(run_id="run-1") == [early, late]
        assert store.samples(run_id="run-1", limit=1) == [early]
        assert store.samples(run_id="nope") == []


@pytest.fixture
def local_time_not_utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Make the process's local time zone UTC-5, so code that reads naive times as local time shows it."""
    monkeypatch.setenv("TZ", "EST+5")  # POSIX form: needs no tz database
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("local_time_not_utc")
def test_endpoint_flags_and_naive_times_round_trip(url: str) -> None:
    sample = ok_sample(endpoint=dataclasses.replace(ENDPOINT, simulated=True, api_key_env=None))
    naive = dataclasses.replace(sample, started_at=T0.replace(tzinfo=None))  # naive means UTC
    with open_store(url) as store:
        store.add_sample(naive)
        (back,) = store.samples()
    assert back.endpoint.simulated is True and back.endpoint.api_key_env is None
    assert back.started_at == T0 and back.started_at.tzinfo is UTC


def test_reads_leave_no_transaction_open(url: str) -> None:
    with open_store(url) as store:
        store.add_sample(ok_sample())
        assert len(store.samples()) == 1 and store.runs() == []
        raw(url, "DROP TABLE runs")  # needs every other session's locks on the table released
        raw(url, "DROP TABLE samples")


def test_headers_are_never_stored(url: str) -> None:
    token = "Bearer sk-very-secret"  # noqa: S105 (a fake, to look for)
    endpoint = dataclasses.replace(ENDPOINT, headers=(("Authorization", token),))
    with open_store(url) as store:
        store.add_sample(ok_sample(endpoint=endpoint))
        (back,) = store.samples()
    assert back.endpoint == dataclasses.replace(endpoint, headers=())
    assert back.endpoint.api_key_env == "GROQ_API_KEY"  # the variable's name is fine to keep
    assert all(token not in str(row) for row in raw(url, "SELECT * FROM samples"))


def test_runs_round_trip_and_last_write_wins(url: str) -> None:
    first, second = run_record("run-1", completed=0), run_record("run-2")
    with open_store(url) as store:
        store.add_run(first)
        store.add_run(second)
        store.add_run(dataclasses.replace(first, completed=3, client_bound=True))
        assert store.runs() == [dataclasses.replace(first, completed=3, client_bound=True), second]


def test_add_sample_only_queues_and_flush_commits(url: str) -> None:
    release = threading.Event()
    with open_store(url) as store:
        store._pool.submit(release.wait, 30)  # hold the writer thread busy
        store.add_sample(ok_sample())  # would wait for the writer (30 s) if it wrote inline
        assert raw(url, "SELECT count(*) FROM samples") == [(0,)]
        release.set()
        store.flush()
        assert raw(url, "SELECT count(*) FROM samples") == [(1,)]


def test_failed_write_is_reported_at_flush_and_kept(url: str) -> None:
    saved, lost = ok_sample(), failed_sample()
    store = open_store(url)
    store.add_sample(saved)
    store.flush()
    raw(url, "DROP TABLE samples")
    store.add_sample(lost)
    with pytest.raises(StoreError) as err:
        store.flush()
    assert "samples" in str(err.value) and "Store.unsaved" in str(err.value) and "\n" not in str(err.value)
    assert store.unsaved == [lost]
    store.flush()  # reported once; the sample stays in unsaved for the caller to deal with
    assert store.unsaved == [lost]
    store.close()


def test_refused_writes_go_in_with_the_next_write_that_succeeds(url: str) -> None:
    first, second, third = (ok_sample(f"run-{i}", T0 + timedelta(seconds=i)) for i in range(3))
    with open_store(url) as store:
        store.add_sample(first)
        store.flush()
        raw(url, "ALTER TABLE samples RENAME TO samples_away")  # the database refuses: no such table
        store.add_sample(second)
        with pytest.raises(StoreError):
            store.flush()
        assert store.unsaved == [second]
        raw(url, "ALTER TABLE samples_away RENAME TO samples")
        store.add_sample(third)
        store.flush()
        assert store.unsaved == []
        assert [s.run_id for s in store.samples()] == ["run-0", "run-1", "run-2"]


def test_a_lost_postgresql_connection_is_opened_again(pg_url: str) -> None:
    with open_store(pg_url) as store:
        store.add_sample(ok_sample("before"))
        ((pid,),) = store.query("SELECT pg_backend_pid()", fresh=True)  # the writer's
        raw(pg_url, "SELECT pg_terminate_backend(?)", (pid,))  # a server restart, as the store sees it
        store.add_sample(ok_sample("after", T0 + timedelta(seconds=1)))
        store.flush()
        assert [s.run_id for s in store.samples()] == ["before", "after"] and store.unsaved == []
        raw(pg_url, "SELECT pg_terminate_backend(?)", store.query("SELECT pg_backend_pid()")[0])
        assert store.query("SELECT COUNT(*) FROM samples") == [(2,)]  # reads reconnect too


def test_every_field_has_a_column(url: str) -> None:
    """Fails when a Metrics or RunRecord field is added without a migration that adds its column."""
    open_store(url).close()
    sample_columns = set(columns(url, "samples"))
    assert {f.name for f in dataclasses.fields(Metrics)} <= sample_columns
    stored = {f.name for f in dataclasses.fields(Sample)} - {"endpoint", "metrics", "network"}
    assert stored <= sample_columns
    assert {f"net_{f.name}" for f in dataclasses.fields(Network)} <= sample_columns
    assert {"headers"}.isdisjoint(sample_columns)
    # The one column list (store.columns) is the schema's, in its order, and every value has its column.
    assert columns(url, "samples") == list(SAMPLE_COLUMNS) == list(sample_values(ok_sample()))
    # runs.role: the PostgreSQL role that wrote the run (an agent's policy reads it, grants.py), no field.
    assert columns(url, "runs") == [*(f.name for f in dataclasses.fields(RunRecord)), "role"]


def test_default_path_honours_env_and_creates_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOKENPACE_DB", raising=False)
    assert default_db_path() == str(Path(platformdirs.user_data_dir("tokenpace")) / "tokenpace.db")
    target = tmp_path / "a" / "b" / "mine.db"
    monkeypatch.setenv("TOKENPACE_DB", str(target))
    assert default_db_path() == str(target)
    with open_store() as store:
        store.add_sample(ok_sample())
    assert raw(str(target), "SELECT count(*) FROM samples") == [(1,)]


def test_unwritable_path_is_one_store_error(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(StoreError) as err:
        open_store(str(tmp_path / "a-file" / "t.db"))
    assert str(tmp_path / "a-file" / "t.db") in str(err.value) and "\n" not in str(err.value)


def test_default_folder_that_cannot_be_made_is_a_store_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    monkeypatch.setenv("TOKENPACE_DB", str(tmp_path / "a-file" / "sub" / "t.db"))
    with pytest.raises(StoreError, match="cannot create the folder"):
        open_store()


def test_closed_store_refuses_work(tmp_path: Path) -> None:
    store: Store = open_store(str(tmp_path / "t.db"))
    store.close()
    store.close()  # closing twice is harmless
    with pytest.raises(StoreError, match="closed"):
        store.add_sample(ok_sample())
    with pytest.raises(StoreError, match="closed"):
        store.samples()


def test_a_jobs_request_is_stored_once_whoever_retries_it(url: str) -> None:
    """A retried job stores its requests again under fresh sample ids: the database keeps the first of each."""
    origin = Origin("eu-west", "eu-1", "job-7")
    timeline = ok_sample().timeline
    with open_store(url) as store:
        for attempt in range(2):
            for seq in range(3):
                store.add_sample(make_sample(f"run-{attempt}", ENDPOINT, "1k", T0, timeline, origin=origin, seq=seq))
        store.add_sample(
            make_sample("run-x", ENDPOINT, "1k", T0, timeline, origin=Origin("eu-west", "eu-1", "job-8"), seq=0)
        )
        store.flush()
        kept = store.samples()
        ((counted,),) = store.query("SELECT SUM(samples) FROM sample_hours")
    assert sorted((s.job_id, s.job_seq, s.run_id) for s in kept) == [
        ("job-7", 0, "run-0"), ("job-7", 1, "run-0"), ("job-7", 2, "run-0"), ("job-8", 0, "run-x"),
    ]  # fmt: skip
    assert counted == 4  # the rollups count each request once too
