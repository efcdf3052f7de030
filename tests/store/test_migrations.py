"""Migrations: applied once, concurrently safe, numbered from one, a newer schema refused, each one's rollup shape
its own."""

from __future__ import annotations

import ast
import inspect
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.store.test_database import ok_sample, raw
from tokenpace.errors import StoreError
from tokenpace.store import migrations, rollup
from tokenpace.store.database import open_store
from tokenpace.store.migrations import BOOTSTRAP, MIGRATIONS
from tokenpace.store.rollup import Shape


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


def test_each_migration_names_the_shape_it_builds_never_the_codes() -> None:
    """Migration 13 built the code's current rollup shape (rollup.CURRENT, a default argument), so the next figure
    the rollups keep would have rebuilt it in the new shape (issue 31): every step that makes, rebuilds or counts
    rollup rows is given a shape spelt out in migrations.py, and migrations.py reads none of the code's figures."""
    for version, steps in MIGRATIONS:
        for step in filter(callable, steps):
            given = getattr(step, "keywords", {})  # a partial's arguments
            params = inspect.signature(step).parameters.values()
            defaults = [p.name for p in params if isinstance(p.default, Shape) and p.name not in given]
            assert defaults == [], f"migration {version}: {step} would build the code's shape, not its own"
            shapes = [v for v in given.values() if isinstance(v, Shape)]
            assert all(shape is not rollup.CURRENT for shape in shapes), f"migration {version}: the code's shape"
    tree = ast.parse(Path(migrations.__file__).read_text())
    read = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and getattr(n.value, "id", "") == "rollup"}
    assert read & {"CURRENT", "METRICS", "STORED", "DERIVED", "TAGS", "CHECKS", "RAW", "COUNTS"} == set()


# sample_hours as the migrations that reshaped it left it, spelt out: no change of the code may rewrite this.
_COUNTS = ["samples", "ok", "one_shot", "first_at", "last_at", "protocol", "simulated", "failures"]
HOURS_AFTER = {
    6: ["provider", "plan", "model", "workload", "hour", "client_bound", *_COUNTS, "output_speed", "ttft_ms", "e2e_ms"],
    10: [
        "provider", "plan", "model", "workload", "region", "hour", "client_bound", *_COUNTS,
        "output_speed", "ttft_ms", "e2e_ms", "ttft_net_ms",
    ],
    13: [
        "provider", "plan", "model", "workload", "region", "hour", "client_bound", "cached", "cold", *_COUNTS,
        "canary_checked", "canary_passed", "output_speed", "ttft_ms", "e2e_ms", "ttft_net_ms",
    ],
    18: [
        "provider", "plan", "model", "workload", "region", "hour", "client_bound", "cached", "cold", *_COUNTS,
        "canary_checked", "canary_passed", "output_speed", "ttft_ms", "e2e_ms", "ttft_net_ms", "e2e500_ms",
    ],
}  # fmt: skip


def test_the_history_applied_in_order_leaves_each_migrations_own_shape(url: str) -> None:
    """From an empty database, after each migration every rollup has the columns of the shape the latest migration
    so far named (spelt out above for sample_hours); after the last, the shape the code reads and writes."""
    postgres = url.startswith("postgresql://")
    conn: Any = psycopg.connect(url) if postgres else sqlite3.connect(url)
    ph = "%s" if postgres else "?"
    tables = (
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        if postgres
        else "SELECT name FROM sqlite_master WHERE type = 'table'"
    )
    built: Shape | None = None
    hours: dict[int, list[str]] = {}
    try:
        conn.execute(BOOTSTRAP)
        for version, steps in MIGRATIONS:
            for step in steps:
                step(conn, ph) if callable(step) else conn.execute(step)
            named = [v for step in steps for v in getattr(step, "keywords", {}).values() if isinstance(v, Shape)]
            built = named[-1] if named else built
            present = {name for (name,) in conn.execute(tables).fetchall()}
            for level in (lv for lv in rollup.LEVELS if lv.table in present):
                description = conn.execute(f"SELECT * FROM {level.table} LIMIT 0").description  # noqa: S608
                found = [c.name if postgres else c[0] for c in description]
                assert built is not None and found == list(level.columns_of(built)), (version, level.table)
                if level is rollup.HOURS:
                    hours[version] = found
    finally:
        conn.close()
    assert {v: hours[v] for v in HOURS_AFTER} == HOURS_AFTER
    assert hours[5 + 1] == hours[9] and hours[10] == hours[12] and hours[13] == hours[17]
    assert hours[len(MIGRATIONS)] == list(rollup.HOURS.columns)  # the code reads what the history built
