"""What the database itself refuses: figures no measurement can produce, and rollup rows no samples can make.

A region agent's role inserts samples with SQL of its own (store/grants.py), so the code's checks alone cannot keep
an output speed of Infinity off the board (issue 29). Migration 14 makes the database refuse it: on PostgreSQL a
CHECK constraint on ``samples`` and on each rollup (``ALTER TABLE ... ADD CONSTRAINT``: no table rebuilt), on
SQLite ``BEFORE INSERT`` and ``BEFORE UPDATE`` triggers on ``samples`` that abort (SQLite adds no constraint to a
table it does not rebuild). The counting trigger (counting.py) refuses such a sample too.

A rollup row keeps every value as hex text (rollup.encode), which a constraint cannot read value by value without
decoding the whole text on every upsert; what it checks is the row's shape: counts within their totals, whole
16-digit values, no more values than successful samples. Values come only from bounded samples, through the
trigger or the writer; a reader that finds one out of bounds all the same skips it (tally.py, stats.py).

Existing rows are mended before the constraints apply: a figure out of bounds becomes NULL (the sample, its
outcome and its timeline stay, as ``refusals.storable`` stores such a figure from now on), a sample that started
at no real time (NaN, 1e300) is deleted, for nothing can place it, and the rollups are
rebuilt from the samples, so a value whose sample was deleted goes too. A migration that recreates the rollups
must call :func:`guard_rollups` again.
"""

from __future__ import annotations

import logging
from typing import Any

from tokenpace.store import rollup

log = logging.getLogger(__name__)

# Migration 14's bounds, spelt out: a migration records what a database was given, so it must not follow later
# changes of measure/bounds.py (the tests check that the two agree today; a new bound needs a new migration).
MS_14 = 86_400_000.0  # the longest request allowed, a day, in ms
FOURTEENTH: dict[str, tuple[float, float]] = {
    "started_at": (0.0, 32_503_680_000.0),  # 1970 to 3000-01-01 UTC
    **{
        c: (0.0, MS_14)
        for c in ("ttft_ms", "ttfb_ms", "connect_ms", "ttfat_ms", "e2e_ms", "gap_p50_ms", "gap_p95_ms", "gap_max_ms")
    },
    **{c: (0.0, MS_14) for c in ("net_connect_ms", "net_tls_ms", "net_rtt_ms")},
    "t100_ms": (0.0, 101 * MS_14),
    "output_speed": (0.0, 1_000_000.0),
    "idle_s": (0.0, 10 * 365 * 86400.0),
}
REFUSED = "a figure no measurement can produce (tokenpace measure/bounds.py)"


def _bounded(row: str = "") -> str:
    """True when every bounded column of a sample is NULL or within its bounds (NaN and Infinity are not)."""
    return " AND ".join(
        f"({row}{c} IS NULL OR {row}{c} BETWEEN {lo!r} AND {hi!r})" for c, (lo, hi) in FOURTEENTH.items()
    )


def _whole(row: str, size: str, shape: rollup.Shape) -> str:
    """True when a rollup row's counts are within their totals and its texts whole values, no more than its ok;
    ``size`` gives a text's length in bytes (``{}`` the text), read without scanning it: a day's row holds
    megabytes, and the check runs at every upsert."""
    counts = (
        f"{row}samples >= 1 AND {row}ok >= 0 AND {row}ok <= {row}samples AND {row}one_shot >= 0"
        f" AND {row}one_shot <= {row}samples AND {row}first_at <= {row}last_at AND {row}canary_passed >= 0"
        f" AND {row}canary_passed <= {row}canary_checked AND {row}canary_checked <= {row}samples"
    )
    texts = (f"{size.format(row + m)} % 16 = 0 AND {size.format(row + m)} <= 16 * {row}ok" for m in shape.metrics)
    return " AND ".join((counts, *texts))


def _refuse(conn: Any, ph: str, table: str, name: str, new_ok: str, ok: str) -> None:
    """A table refuses a row that fails a condition: ``new_ok`` over ``NEW.`` in two SQLite triggers, ``ok`` in a
    PostgreSQL CHECK constraint."""
    if ph == "?":  # SQLite
        for event in ("INSERT", "UPDATE"):
            trigger = f"{name}_{event.lower()}"
            conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            conn.execute(
                f"CREATE TRIGGER {trigger} BEFORE {event} ON {table} WHEN NOT ({new_ok})"
                f" BEGIN SELECT RAISE(ABORT, '{table}: {REFUSED}'); END"
            )
        return
    conn.execute(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {name}")
    conn.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} CHECK ({ok})")


def guard_rollups(conn: Any, ph: str, *, shape: rollup.Shape) -> None:
    """On PostgreSQL each rollup, of the shape a migration made, refuses a row no samples can make (migration 14;
    again after a migration recreates them). Not on SQLite: its one writer is tokenpace's own (rollup.add, of
    bounded samples), and the triggers cost a third of its writes' speed (3,000 samples: ~250/s against ~400/s
    without), reading back each row's texts."""
    if ph == "?":
        return
    for level in rollup.LEVELS:
        sqlite, postgres = _whole("NEW.", "length(CAST({} AS BLOB))", shape), _whole("", "octet_length({})", shape)
        _refuse(conn, ph, level.table, f"{level.table}_whole", sqlite, postgres)


def mend_samples(conn: Any, ph: str) -> None:
    """Migration 14's first step: each figure out of bounds set to NULL (said in the log), then the samples
    refuse one (and the rollups are rebuilt, then guarded: the migration's next steps)."""
    mended = 0
    for column, (lo, hi) in FOURTEENTH.items():
        # NOT (x BETWEEN ...) holds for NaN, Infinity and, in SQLite, text; NULL stays NULL.
        outside = f"WHERE NOT ({column} BETWEEN {lo!r} AND {hi!r})"
        if column == "started_at":  # no time to place it at: no measurement, and no NULL to give it
            dropped = max(0, conn.execute(f"DELETE FROM samples {outside}").rowcount)  # noqa: S608
            if dropped:
                log.warning("migration 14: %d samples started at no real time deleted (%s)", dropped, REFUSED)
            continue
        mended += max(0, conn.execute(f"UPDATE samples SET {column} = NULL {outside}").rowcount)  # noqa: S608
    if mended:
        log.warning("migration 14: %d figures no measurement can produce set to NULL (%s)", mended, REFUSED)
    _refuse(conn, ph, "samples", "samples_bounded", _bounded("NEW."), _bounded())


def rebuild_rollups(conn: Any, ph: str) -> int:
    """Every rollup recomputed from the samples, the samples held still meanwhile (PostgreSQL: no agent's insert
    is counted twice or missed; SQLite's write lock does the same): the mend after samples are deleted, whose
    values the rollups kept (``tokenpace db rebuild-rollups``). Returns the published samples counted."""
    if ph != "?":
        conn.execute("LOCK TABLE samples IN SHARE MODE")
    rollup.rebuild(conn, ph)
    ((counted,),) = conn.execute(f"SELECT COALESCE(SUM(samples), 0) FROM {rollup.HOURS.table}").fetchall()  # noqa: S608
    return int(counted)
