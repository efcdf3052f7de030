"""The database schema as an append-only history (append a migration, never edit or reorder one), and applying it.

A database records the versions it has in ``schema_migrations``; the store applies the missing ones, in order
and in one transaction, when it opens. The SQL is the subset SQLite and PostgreSQL both run unchanged (TEXT,
INTEGER, DOUBLE PRECISION; booleans as 0/1; times as UTC epoch seconds), so one history serves both.

Columns are written out here rather than derived from the dataclasses: a migration records what a database
*was* given, so it must not change when the code does. A new ``Metrics`` field needs a new migration
(``ALTER TABLE samples ADD COLUMN ...``); the store's tests fail until it exists.

A step is SQL text or a function of the connection and its placeholder, for what SQL cannot say alike on both
databases (rebuilding the hourly and daily rollups, ``rollup.py``, whose values must round-trip exactly). A
migration that changes published samples' counted columns (``rollup.RAW``) must end with ``rollup.rebuild``, so
that both rollups still equal a recompute from ``samples``; one that changes the rollups' shape must end with
``counting.install`` too, so that PostgreSQL's counting trigger writes the new shape, and ``guards.guard_rollups``
after it, so that recreated rollups still refuse rows no samples can make.

The rollups' shapes are spelt out here too (:data:`SHAPE_6`, :data:`SHAPE_10`, :data:`SHAPE_13`,
:data:`SHAPE_18`), and every step that builds, rebuilds or counts rollup rows is given the one its migration
made: the code's own shape (``rollup.CURRENT``) grows with each figure the rollups keep, and a step reading it
would rebuild an old migration's tables in the new shape (migration 13 once did). A new shape is a new constant
and a new migration.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from tokenpace.errors import StoreError
from tokenpace.store import counting, guards, rollup
from tokenpace.store.dialects import Connection, Dialect

Step = str | Callable[[Any, str], None]  # SQL, or f(connection, placeholder)

# The rollups' shapes as migrations made them (rollup.Shape: key columns, figures kept, key tags, canary counts).
SHAPE_6 = rollup.Shape(("provider", "plan", "model", "workload"), ("output_speed", "ttft_ms", "e2e_ms"))  # 6 to 8
SHAPE_10 = rollup.Shape(  # 10 and 11: by region, and TTFT less the network round trip kept
    ("provider", "plan", "model", "workload", "region"), ("output_speed", "ttft_ms", "e2e_ms", "ttft_net_ms")
)
SHAPE_13 = rollup.Shape(  # 13 and 14: keyed by the prompt cache and the cold start, counting the canary's verdicts
    ("provider", "plan", "model", "workload", "region"),
    ("output_speed", "ttft_ms", "e2e_ms", "ttft_net_ms"),
    ("cached", "cold"),
    ("canary_checked", "canary_passed"),
)
SHAPE_18 = rollup.Shape(  # 18: end-to-end for 500 answer tokens kept too (rollup.DERIVED)
    SHAPE_13.ident, (*SHAPE_13.metrics, "e2e500_ms"), SHAPE_13.tags, SHAPE_13.checks
)

# Outside the history because it is how the history is read.
BOOTSTRAP = (
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
)

MIGRATIONS: tuple[tuple[int, tuple[Step, ...]], ...] = (
    (
        1,
        (
            # Endpoint headers are deliberately absent: they can hold secrets.
            """CREATE TABLE samples (
                id TEXT PRIMARY KEY,
                run_id TEXT NOT NULL,
                provider TEXT NOT NULL,
                plan TEXT NOT NULL,
                model TEXT NOT NULL,
                base_url TEXT NOT NULL,
                protocol TEXT NOT NULL,
                api_key_env TEXT,
                simulated INTEGER NOT NULL,
                workload TEXT NOT NULL,
                started_at DOUBLE PRECISION NOT NULL,
                ok INTEGER NOT NULL,
                error_kind TEXT,
                error_message TEXT,
                http_status INTEGER,
                ttft_ms DOUBLE PRECISION,
                ttfb_ms DOUBLE PRECISION,
                connect_ms DOUBLE PRECISION,
                ttfat_ms DOUBLE PRECISION,
                output_speed DOUBLE PRECISION,
                e2e_ms DOUBLE PRECISION,
                t100_ms DOUBLE PRECISION,
                gap_p50_ms DOUBLE PRECISION,
                gap_p95_ms DOUBLE PRECISION,
                gap_max_ms DOUBLE PRECISION,
                chunk_count INTEGER NOT NULL,
                output_tokens INTEGER NOT NULL,
                reasoning_tokens INTEGER NOT NULL,
                first_chunk_tokens INTEGER NOT NULL,
                provider_input_tokens INTEGER,
                provider_output_tokens INTEGER,
                token_diff INTEGER,
                timeline TEXT NOT NULL,
                tool_version TEXT NOT NULL
            )""",
            "CREATE INDEX samples_endpoint_time ON samples (provider, model, workload, started_at)",
            "CREATE INDEX samples_run ON samples (run_id)",
            """CREATE TABLE runs (
                id TEXT PRIMARY KEY,
                started_at DOUBLE PRECISION NOT NULL,
                finished_at DOUBLE PRECISION NOT NULL,
                command TEXT NOT NULL,
                concurrency INTEGER NOT NULL,
                requested INTEGER NOT NULL,
                completed INTEGER NOT NULL,
                loop_lag_p50_ms DOUBLE PRECISION,
                loop_lag_p99_ms DOUBLE PRECISION,
                loop_lag_max_ms DOUBLE PRECISION,
                cpu_us_per_event DOUBLE PRECISION,
                client_bound INTEGER NOT NULL,
                tool_version TEXT NOT NULL
            )""",
        ),
    ),
    (
        2,
        (
            # Workloads: what was asked, identified without storing the prompt itself.
            "ALTER TABLE samples ADD COLUMN input_tokens INTEGER",
            "ALTER TABLE samples ADD COLUMN prompt_fingerprint TEXT",
            "ALTER TABLE samples ADD COLUMN image_bytes INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE samples ADD COLUMN image_pixels INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE samples ADD COLUMN group_id TEXT",
            "ALTER TABLE samples ADD COLUMN prompt_text TEXT",  # only when asked to keep prompts
            "ALTER TABLE runs ADD COLUMN seed INTEGER",  # so --seed can reproduce a run's prompts
        ),
    ),
    (
        3,
        (
            # Rolling windows (windows.py) read every endpoint's samples since a time.
            "CREATE INDEX samples_time ON samples (started_at)",
        ),
    ),
    (
        4,
        (
            # Where a sample came from: "scheduled" (serve) or "one-shot" (run); only published ones are ranked.
            # Samples taken before this migration by a one-shot run are recognised by their run's command.
            "ALTER TABLE samples ADD COLUMN source TEXT NOT NULL DEFAULT 'scheduled'",
            "ALTER TABLE samples ADD COLUMN published INTEGER NOT NULL DEFAULT 1",
            "UPDATE samples SET source = 'one-shot', published = 0 WHERE run_id IN "
            "(SELECT id FROM runs WHERE command NOT LIKE 'tokenpace serve%')",
            # The client's own loop lagged while this request was timed: its figures are not the endpoint's.
            "ALTER TABLE samples ADD COLUMN client_bound INTEGER NOT NULL DEFAULT 0",
        ),
    ),
    (
        5,
        (
            # Counts a server sent that no INTEGER can hold (Inf, beyond 32 bits, text): SQLite stored them as
            # given before the store sanitised them (refusals.py), and every SUM over them failed. The timeline
            # keeps the provider's usage; these become NULL, as new writes do. On PostgreSQL nothing matches.
            "UPDATE samples SET provider_input_tokens = NULL"
            " WHERE NOT (provider_input_tokens BETWEEN -2147483648 AND 2147483647)",
            "UPDATE samples SET provider_output_tokens = NULL"
            " WHERE NOT (provider_output_tokens BETWEEN -2147483648 AND 2147483647)",
            "UPDATE samples SET token_diff = NULL WHERE NOT (token_diff BETWEEN -2147483648 AND 2147483647)",
            "UPDATE samples SET input_tokens = NULL WHERE NOT (input_tokens BETWEEN -2147483648 AND 2147483647)",
            "UPDATE samples SET http_status = NULL WHERE NOT (http_status BETWEEN -2147483648 AND 2147483647)",
        ),
    ),
    (
        6,
        (
            # The hourly rollup the windows read (rollup.py), built from the samples already there.
            *rollup.HOURS.schema(SHAPE_6),
            partial(rollup.rebuild, levels=(rollup.HOURS,), shape=SHAPE_6),
        ),
    ),
    (
        7,
        (
            # The daily rollup (rollup.py): a 72 h window reads its whole days from it, 14 days of 100k too.
            *rollup.DAYS.schema(SHAPE_6),
            partial(rollup.rebuild, levels=(rollup.DAYS,), shape=SHAPE_6),  # the hourly one is already right
        ),
    ),
    (
        8,
        (
            # The 6-hour rollup (rollup.py): a window's day edges read a few quarters and hours, not 23 hours.
            *rollup.QUARTERS.schema(SHAPE_6),
            partial(rollup.rebuild, levels=(rollup.QUARTERS,), shape=SHAPE_6),
        ),
    ),
    (
        9,
        (
            # Regions (issue 11): where a sample was measured from, by which probe agent and queued job; '' is
            # the storing process itself. One sample per (job, request): a retried job cannot store twice.
            "ALTER TABLE samples ADD COLUMN region TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE samples ADD COLUMN agent TEXT",
            "ALTER TABLE samples ADD COLUMN job_id TEXT",
            "ALTER TABLE samples ADD COLUMN job_seq INTEGER",
            "CREATE UNIQUE INDEX samples_job ON samples (job_id, job_seq)",
            # The path to the endpoint as the agent saw it just before the run (clients/network.py).
            "ALTER TABLE samples ADD COLUMN net_connect_ms DOUBLE PRECISION",
            "ALTER TABLE samples ADD COLUMN net_tls_ms DOUBLE PRECISION",
            "ALTER TABLE samples ADD COLUMN net_rtt_ms DOUBLE PRECISION",
            # Probe agents, one row each, written by the agent itself (store/agents.py).
            """CREATE TABLE agents (
                name TEXT PRIMARY KEY,
                region TEXT NOT NULL,
                host TEXT NOT NULL,
                version TEXT NOT NULL,
                started_at DOUBLE PRECISION NOT NULL,
                heartbeat_at DOUBLE PRECISION NOT NULL,
                heartbeat_s DOUBLE PRECISION NOT NULL,
                stopped_at DOUBLE PRECISION,
                jobs_done INTEGER NOT NULL DEFAULT 0,
                jobs_failed INTEGER NOT NULL DEFAULT 0,
                jobs_dropped INTEGER NOT NULL DEFAULT 0,
                clock_offset_ms DOUBLE PRECISION
            )""",
        ),
    ),
    (
        10,
        (
            # The rollups keyed by region too (a board per region), and keeping TTFT less the network round trip
            # (rollup.DERIVED) so its percentiles are exact like the others: dropped, recreated and rebuilt.
            partial(rollup.recreate, shape=SHAPE_10),
        ),
    ),
    (
        11,
        (
            # Agents' own roles (issue 21): which role wrote an agent's row and a run, for the row-level security
            # policies of grants.py; on PostgreSQL the rollups are then counted by a trigger (counting.py), so
            # that an agent's role needs no right on them.
            "ALTER TABLE agents ADD COLUMN role TEXT",
            "ALTER TABLE runs ADD COLUMN role TEXT",
            partial(counting.install, shape=SHAPE_10),
        ),
    ),
    (
        12,
        (
            # What was timed, beyond timing (issue 22): the provider's prompt-cache count, the correctness canary
            # asked for and its verdict, the idle time before the request and the cold-start tag, and which send
            # of a repeated prefix a cached-prefix workload's request was.
            "ALTER TABLE samples ADD COLUMN provider_cached_tokens INTEGER",
            "ALTER TABLE samples ADD COLUMN canary TEXT",
            "ALTER TABLE samples ADD COLUMN canary_ok INTEGER",
            "ALTER TABLE samples ADD COLUMN idle_s DOUBLE PRECISION",
            "ALTER TABLE samples ADD COLUMN cold INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE samples ADD COLUMN prefix_turn INTEGER",
        ),
    ),
    (
        13,
        (
            # The board's truth (issue 22): the rollups keyed by whether the provider served the prompt from its
            # cache and whether the sample was a cold start (rollup.TAGS: fresh figures are rows with both 0),
            # and counting the canary's verdicts (rollup.CHECKS): dropped, recreated, rebuilt, and the counting
            # trigger installed again for the new shape.
            partial(rollup.recreate, shape=SHAPE_13),
            partial(counting.install, shape=SHAPE_13),
        ),
    ),
    (
        14,
        (
            # Figures no measurement can produce (issue 29: one agent's output speed of Infinity took every page
            # down): those stored set to NULL and refused from now on (guards.py, measure/bounds.py), the rollups
            # rebuilt without them (a deleted sample's value too) and refusing rows no samples can make, and the
            # counting trigger installed again, refusing them as well.
            guards.mend_samples,
            partial(rollup.rebuild, shape=SHAPE_13),
            partial(guards.guard_rollups, shape=SHAPE_13),
            partial(counting.install, shape=SHAPE_13),
        ),
    ),
    (
        15,
        (
            # Client-bound per figure (issue 29): client_bound holds which figures a sample's client lag could
            # have moved too far, as bits (measure/verdict.py: 1 TTFT, 2 output speed, 4 end-to-end), and a
            # sample flagged before meant all three. The rollups are keyed by it: their rows change alike.
            "UPDATE samples SET client_bound = 7 WHERE client_bound = 1",
            "UPDATE sample_hours SET client_bound = 7 WHERE client_bound = 1",
            "UPDATE sample_quarters SET client_bound = 7 WHERE client_bound = 1",
            "UPDATE sample_days SET client_bound = 7 WHERE client_bound = 1",
            # How late the sample's timestamps may be, ms (load/lag.py): finite and never negative.
            "ALTER TABLE samples ADD COLUMN client_lag_ms DOUBLE PRECISION"
            " CHECK (client_lag_ms >= 0 AND client_lag_ms < 1e15)",
        ),
    ),
    (
        16,
        (
            # Rate limits (issue 30): a 429's Retry-After in seconds from its arrival (clients/ratelimits.py: at
            # most a day), which the sampler's back-off reads, and its rate-limit headers as a JSON object.
            "ALTER TABLE samples ADD COLUMN retry_after_s DOUBLE PRECISION"
            " CHECK (retry_after_s >= 0 AND retry_after_s <= 86400)",
            "ALTER TABLE samples ADD COLUMN ratelimits TEXT",
        ),
    ),
    (
        17,
        (
            # The copy ratio (issue 31): the share of the answer's 8-grams of o200k tokens found in its prompt
            # (measure/copying.py), what prompt-lookup drafting speeds up; a share, so from 0 to 1.
            "ALTER TABLE samples ADD COLUMN copy_ratio DOUBLE PRECISION CHECK (copy_ratio >= 0 AND copy_ratio <= 1)",
        ),
    ),
    (
        18,
        (
            # End-to-end for 500 answer tokens (issue 31): the rollups keep each sample's, computed from its TTFT,
            # first answer token and output speed (rollup.DERIVED), so the board's percentiles of it are exact:
            # dropped, recreated and rebuilt, counted by the trigger in the new shape, and guarded again.
            partial(rollup.recreate, shape=SHAPE_18),
            partial(counting.install, shape=SHAPE_18),
            partial(guards.guard_rollups, shape=SHAPE_18),
        ),
    ),
    (
        19,
        (
            # Incident alerts (serve/incidents.py, alerted.py): the incidents announced open to the webhooks and not
            # yet closed, each by its place, so that serve announces none of them again when it restarts.
            "CREATE TABLE incident_alerts (place TEXT PRIMARY KEY, opened_by TEXT NOT NULL,"
            " opened_at DOUBLE PRECISION NOT NULL)",
        ),
    ),
)


def up_to_date(conn: Connection, dialect: Dialect) -> bool:
    """Whether every migration is applied, asked without writing: a region agent's role may not create tables."""
    absent: tuple[type[Exception], ...] = (sqlite3.Error, *dialect.errors)
    try:
        have = {v for (v,) in conn.execute("SELECT version FROM schema_migrations").fetchall()}
    except absent:  # no table yet
        conn.rollback()
        return False
    conn.rollback()
    return have == {v for v, _ in MIGRATIONS}


def apply(conn: Connection, dialect: Dialect, url: str) -> None:
    """Apply the missing migrations in one transaction, under a lock so two processes cannot both do it."""
    if up_to_date(conn, dialect):
        return
    conn.execute(dialect.lock_migrations)
    conn.execute(BOOTSTRAP)
    have = {v for (v,) in conn.execute("SELECT version FROM schema_migrations").fetchall()}
    known = MIGRATIONS[-1][0]
    if have and max(have) > known:
        newer = f"database schema version {max(have)} is newer than this tokenpace knows ({known})"
        raise StoreError(f"{url}: {newer}: upgrade tokenpace")
    for version, statements in MIGRATIONS:
        if version not in have:
            for step in statements:
                step(conn, dialect.placeholder) if callable(step) else conn.execute(step)
            record = "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)"
            conn.execute(record.replace("?", dialect.placeholder), (version, time.time()))
    conn.commit()
