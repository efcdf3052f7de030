"""Migrations: applied once, concurrently safe, numbered from one, a newer schema refused."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.store.test_database import ok_sample, raw
from tokenpace.errors import StoreError
from tokenpace.store.database import open_store
from tokenpace.store.migrations import MIGRATIONS


def test_migrations_apply_once(url: str) -> None:
    open_store(url).close()
    first = raw(url, "SELECT version, applied_at FROM schema_migrations")
    assert [v for v, _ in first] == [v for v, _ in MIGRATIONS]
    with open_store(url) as store:  # reopening changes nothing and keeps the data
        store.add_sample(ok_sample())
    with open_store(url) as store:
        assert len(store.samples()) == 1
    assert raw(url, "SELECT version, applied_at FROM schema_migrations") == first


def test_concurrent_opens_migrate_once(url: str) -> None:
    """Several processes may start on a fresh database at once; exactly one of them migrates it."""
    start = threading.Barrier(6)

    def open_one() -> None:
        start.wait()
        open_store(url).close()

    with ThreadPoolExecutor(6) as pool:
        for opened in [pool.submit(open_one) for _ in range(6)]:
            opened.result()
    assert raw(url, "SELECT count(*) FROM schema_migrations") == [(len(MIGRATIONS),)]


def test_newer_schema_is_refused(url: str) -> None:
    open_store(url).close()
    raw(url, "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", (999, 0.0))
    with pytest.raises(StoreError, match="schema version 999 is newer"):
        open_store(url)


def test_migration_versions_count_up_from_one() -> None:
    assert [v for v, _ in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
