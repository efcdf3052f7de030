"""Figures no measurement can produce (issue 29, item 6): refused by the database, mended on upgrade, skipped by
every reader that still finds one, and the rollups rebuilt after a sample is deleted; SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
import logging
import math
import sqlite3
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from tests.store.test_database import columns, raw
from tests.store.test_rollup import assert_rollup_right, migrate_to
from tests.store.test_windows import GROQ, NOW, stream
from tokenpace.cli import main
from tokenpace.config.endpoints import Config
from tokenpace.config.windows import WINDOWS
from tokenpace.measure import bounds
from tokenpace.measure.sample import Sample, make_sample
from tokenpace.store import guards, migrations, rollup
from tokenpace.store.columns import SAMPLE_COLUMNS, sample_values
from tokenpace.store.database import epoch, open_store
from tokenpace.store.windows import endpoint_rows
from tokenpace.web import create_app

IMPOSSIBLE = (1e300, math.inf, math.nan, -1.0)
PAGES = ("/", "/leaderboard.json", "/endpoint/groq/free/llama", "/model/llama", "/leaderboard.csv")


def good(minutes: float) -> Sample:
    """A published sample of groq/llama ``minutes`` before NOW, hours inside the 72 h window."""
    return make_sample("run", GROQ, "1k", NOW - timedelta(hours=5, minutes=minutes), stream(100, 10))


def insert_raw(url: str, s: Sample, **figures: float) -> None:
    """Insert a sample with SQL of the test's own, as an agent's role can: the store's own checks skipped."""
    values = sample_values(s) | {"started_at": epoch(s.started_at)} | figures
    have = [c for c in SAMPLE_COLUMNS if c in columns(url, "samples")]  # an older schema lacks the later columns
    insert = f"INSERT INTO samples ({', '.join(have)}) VALUES ({', '.join('?' * len(have))})"  # noqa: S608
    raw(url, insert, tuple(int(v) if isinstance(v, bool) else v for v in (values[c] for c in have)))


def refused(url: str, s: Sample, **figures: float) -> bool:
    try:
        insert_raw(url, s, **figures)
    except Exception:  # sqlite3.IntegrityError, psycopg.errors.CheckViolation
        return True
    return False


def pages_answer(url: str) -> dict[str, int]:
    with open_store(url) as store, TestClient(create_app(store, Config(endpoints=(GROQ,)), now=lambda: NOW)) as c:
        return {page: c.get(page).status_code for page in PAGES}


def test_the_bounds_of_migration_14_are_todays() -> None:
    """Frozen in the migration, stated with their reasons in measure/bounds.py: a new bound needs a new migration."""
    assert {column: bounds.BOUNDS[column] for column in guards.FOURTEENTH} == guards.FOURTEENTH
    later = {"client_lag_ms", "retry_after_s", "copy_ratio"}  # migrations 15, 16 and 17
    assert set(bounds.BOUNDS) - set(guards.FOURTEENTH) == later


def test_the_database_refuses_a_figure_no_measurement_can_produce(url: str) -> None:
    with open_store(url) as store:
        store.add_sample(good(0))
    for value in IMPOSSIBLE:
        for column in ("output_speed", "ttft_ms", "e2e_ms", "net_rtt_ms", "idle_s"):
            s = good(1)
            if not refused(url, s, **{column: value}):  # SQLite stores NaN as NULL: no figure, taken as none
                assert math.isnan(value) and not url.startswith("postgresql://"), (column, value)
                assert raw(url, f"SELECT {column} FROM samples WHERE id = ?", (s.id,)) == [(None,)]  # noqa: S608
                raw(url, "DELETE FROM samples WHERE id = ?", (s.id,))
    for start in (1e300, math.inf, -1.0):  # a start no clock shows (the endpoint page's list of samples failed)
        assert refused(url, good(1), started_at=start, published=0), start
    assert refused(url, good(1), ttft_ms=bounds.MAX_MS * 1.01)
    assert refused(url, good(1), output_speed=bounds.MAX_OUTPUT_SPEED * 1.01)
    tables = ("sample_hours", "sample_quarters", "sample_days") if url.startswith("postgresql://") else ()
    for table in tables:  # a row no samples make (more values than ok): refused where agents' roles write
        for text in ("output_speed", "e2e500_ms"):
            more = f"UPDATE {table} SET {text} = {text} || '{rollup.encode(5.0)}'"  # noqa: S608
            with pytest.raises(Exception, match=r"(?i)check|no measurement"):
                raw(url, more)
    insert_raw(url, good(2), output_speed=bounds.MAX_OUTPUT_SPEED, ttft_ms=0.0)  # the bounds themselves are taken
    assert raw(url, "SELECT COUNT(*) FROM samples") == [(2,)]


def test_the_writer_stores_such_a_figure_as_null_and_keeps_the_sample(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    s = good(0)
    s = dataclasses.replace(s, metrics=dataclasses.replace(s.metrics, output_speed=1e300, ttft_ms=-5.0))
    with open_store(url) as store:
        store.add_sample(s)
        store.flush()
        (kept,) = store.samples()
    assert kept.metrics.output_speed is None and kept.metrics.ttft_ms is None and kept.metrics.e2e_ms is not None
    assert kept.timeline == s.timeline  # what was measured, whole
    assert "ttft_ms, output_speed stored sanitised" in caplog.text
    assert_rollup_right(url, 1)


def _connected(url: str) -> Any:
    return psycopg.connect(url) if url.startswith("postgresql://") else sqlite3.connect(url, isolation_level=None)


def poisoned(url: str) -> int:
    """A database as an older tokenpace left it (version 13), after an agent's role inserted a sample of output
    speed 1e300, one of Infinity and an unpublished one started at 1e300, and a sample was deleted whose value
    1e300 the rollups kept; returns how many published samples it holds."""
    migrate_to(url, 13)
    return poison(url, migrations.SHAPE_13)


def unguarded(url: str) -> None:
    """Today's database without migration 14's guards: what readers must survive (a database before it held such
    values, and a role past the guards could write them)."""
    with open_store(url):
        pass
    if not url.startswith("postgresql://"):
        for event in ("insert", "update"):
            raw(url, f"DROP TRIGGER samples_bounded_{event}")
        return
    raw(url, "ALTER TABLE samples DROP CONSTRAINT samples_bounded")
    for level in rollup.LEVELS:
        raw(url, f"ALTER TABLE {level.table} DROP CONSTRAINT {level.table}_whole")


def poison(url: str, shape: rollup.Shape = rollup.CURRENT) -> int:
    """poisoned's samples and rollup values, in a database whose rollups are of ``shape``."""
    postgres = url.startswith("postgresql://")
    if postgres:  # counted below as the older trigger counted them, every value as given
        raw(url, "ALTER TABLE samples DISABLE TRIGGER tokenpace_count_sample")
    for i in range(4):
        insert_raw(url, good(i))
    insert_raw(url, good(5), output_speed=1e300)
    insert_raw(url, good(6), output_speed=math.inf, ttft_ms=math.inf)
    insert_raw(url, good(7), started_at=1e300, published=0)  # unpublished: no rollup counts it, a page lists it
    if postgres:
        raw(url, "ALTER TABLE samples ENABLE TRIGGER tokenpace_count_sample")
    conn = _connected(url)
    try:
        # today's rebuild skips them: put back below, as the old one kept
        rollup.rebuild(conn, "%s" if postgres else "?", shape=shape)
        for level in rollup.LEVELS:
            bad = "".join(rollup.encode(v) for v in (1e300, math.inf, 1e300))
            conn.execute(f"UPDATE {level.table} SET output_speed = output_speed || '{bad}'")  # noqa: S608
        conn.execute(f"UPDATE sample_hours SET ttft_ms = ttft_ms || '{rollup.encode(math.inf)}'")  # noqa: S608
        conn.commit()
    finally:
        conn.close()
    return 6


def test_a_poisoned_database_still_answers(url: str, caplog: pytest.LogCaptureFixture) -> None:
    """Without migration 14's guards, every reader skips what it finds (logged)."""
    unguarded(url)
    poison(url)
    assert pages_answer(url) == dict.fromkeys(PAGES, 200)
    with open_store(url) as store:
        (row,) = endpoint_rows(store, WINDOWS["72h"], NOW)
    board = CliRunner().invoke(main, ["leaderboard", "--db", url])
    assert board.exit_code == 0, board.output
    assert row.output_speed.n == 4 and row.output_speed.mean is not None and row.output_speed.mean < 1e6
    assert "values outside what a measurement can be skipped" in caplog.text
    assert "started at 1e+300, no real time: not drawn" in caplog.text


def test_the_upgrade_of_a_poisoned_database_mends_it(url: str, caplog: pytest.LogCaptureFixture) -> None:
    """Migration 14 sets the figures to NULL, rebuilds the rollups without them (the deleted sample's value too),
    and the samples stay; the later migrations rebuild from what it left."""
    published = poisoned(url)
    with caplog.at_level(logging.WARNING), open_store(url) as store:
        samples = store.samples()
    assert "migration 14: 3 figures no measurement can produce set to NULL" in caplog.text
    assert "migration 14: 1 samples started at no real time deleted" in caplog.text
    assert len(samples) == published and sum(s.metrics.output_speed is None for s in samples) == 2
    assert_rollup_right(url, published)  # rebuilt: equal to a recompute, no value of a deleted sample
    values = [v for (text,) in raw(url, "SELECT output_speed FROM sample_days") for v in rollup.decode(text)]
    assert len(values) == 4 and all(bounds.within("output_speed", v) for v in values)
    caplog.clear()
    assert pages_answer(url) == dict.fromkeys(PAGES, 200)
    assert "skipped" not in caplog.text


def test_the_rollups_are_rebuilt_after_samples_are_deleted(url: str) -> None:
    """The rollups keep what they counted; ``tokenpace db rebuild-rollups`` recomputes them from the samples."""
    with open_store(url) as store:
        for i in range(3):
            store.add_sample(good(i))
    raw(url, "DELETE FROM samples WHERE started_at = ?", (epoch(good(1).started_at),))
    assert raw(url, "SELECT SUM(samples) FROM sample_days") == [(3,)]
    result = CliRunner().invoke(main, ["db", "rebuild-rollups", "--db", url])
    assert result.exit_code == 0, result.output
    assert "2 published samples counted" in result.output
    assert_rollup_right(url, 2)
