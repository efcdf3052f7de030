"""Reads apart from the writer (issue 10, item 2), against a real SQLite file and a real PostgreSQL server.

A read in progress is held open on purpose (a SQLite function that waits, a PostgreSQL advisory lock), so the
tests say what happens while it lasts without timing anything.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from tests.store.test_database import T0, ok_sample, raw
from tokenpace.schedule.sampler import usage
from tokenpace.store.database import Store, open_store
from tokenpace.store.dialects import Connection

LOCK = 7031990418  # an advisory lock of the tests' own


@contextmanager
def read_held_open(store: Store, url: str) -> Iterator[Future[Any]]:
    """A read of the samples table that is in progress (its statement started) until the block ends."""
    release = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        if url.startswith("postgresql://"):
            with psycopg.connect(url, autocommit=True) as holder:
                holder.execute("SELECT pg_advisory_lock(%s)", (LOCK,))
                sql = "SELECT COUNT(*) FROM samples, (SELECT pg_advisory_xact_lock_shared(?)) AS held"
                reading = pool.submit(store.query, sql, (LOCK,))
                waiting = "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                _until(lambda: raw(url, waiting)[0][0] > 0)
                try:
                    yield reading
                finally:
                    holder.execute("SELECT pg_advisory_unlock(%s)", (LOCK,))
        else:
            started = threading.Event()

            def held() -> int:
                started.set()
                release.wait(30)
                return 1

            def read(conn: Connection) -> Any:
                conn.create_function("held", 0, held)  # type: ignore[attr-defined]  # sqlite3's own
                return conn.execute("SELECT COUNT(*) FROM samples WHERE held() = 1").fetchall()

            reading = pool.submit(store._readers.run, read)
            _until(started.is_set)
            try:
                yield reading
            finally:
                release.set()
        reading.result(30)


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "the read never started"
        time.sleep(0.01)


def test_a_write_completes_while_a_read_is_in_progress(url: str) -> None:
    with open_store(url) as store:
        store.add_sample(ok_sample("before"))
        store.flush()
        with read_held_open(store, url) as reading:
            store.add_sample(ok_sample("after", T0 + timedelta(seconds=1)))
            store.flush()  # the writer is not the reader's: it does not wait for the read
            assert raw(url, "SELECT COUNT(*) FROM samples") == [(2,)]
            assert not reading.done()
            # Another read is not queued behind the long one either, and sees the write just made.
            assert store.query("SELECT COUNT(*) FROM samples") == [(2,)]
            assert not reading.done()


def test_a_budget_counts_queued_samples_while_a_read_is_in_progress(url: str) -> None:
    with open_store(url) as store:
        store.add_sample(ok_sample("before"))
        store.flush()
        with read_held_open(store, url) as reading:
            for i in range(3):  # queued, not flushed: taken all the same
                store.add_sample(ok_sample(f"queued-{i}", T0 + timedelta(seconds=i + 1)))
            used = usage(store, "groq", "free", (T0 - timedelta(seconds=1)).timestamp())
            assert used.requests == 4
            assert not reading.done()


def test_a_read_sees_every_write_queued_before_it(url: str) -> None:
    release = threading.Event()
    with open_store(url) as store:
        store._pool.submit(release.wait, 30)  # the writer is busy: the sample below waits in its queue
        store.add_sample(ok_sample())
        with ThreadPoolExecutor(1) as pool:
            reading = pool.submit(store.query, "SELECT COUNT(*) FROM samples")
            time.sleep(0.2)  # not a timing check: a read that did not wait would be done by now, with 0
            assert not reading.done()
            release.set()
            assert reading.result(30) == [(1,)]


def test_readers_are_closed_with_the_store(url: str) -> None:
    store = open_store(url)
    store.add_sample(ok_sample())
    assert store.query("SELECT COUNT(*) FROM samples") == [(1,)]
    store.close()
    with pytest.raises(Exception, match="closed"):
        store.query("SELECT COUNT(*) FROM samples")
    raw(url, "DROP TABLE samples")  # no reader left holding the table
