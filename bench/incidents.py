"""What keeping the incidents up to date costs a minute: deriving every sample again, against the incident log.

Builds a temporary SQLite file (and, with ``--pg URL``, a fresh PostgreSQL schema, dropped after) holding
``--samples`` synthetic samples spread evenly over 20 endpoints x 2 workloads and the last 97 days (what
/incidents reads: 90 days, the 7-day baseline and a day), a few percent failed and a few slow hours, then times:

- before: one derivation from every sample (``derive`` over ``placed_series``), as pages and /metrics did each
  minute, and the alert watcher's 9-day one;
- after: the incident log's first refresh (the same derivation, once per process and week), then a refresh a
  minute, each after a minute's samples were stored (one per endpoint and workload each 10 minutes), and one
  refresh after a sample stored three days late (its endpoint and region derived again).

    uv run python bench/incidents.py [--samples 300000] [--minutes 10] [--pg postgresql://USER@HOST/DB]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg

from tokenpace.board.incidents import derive
from tokenpace.board.tracking import IncidentLog, read_start
from tokenpace.config.incidents import Thresholds
from tokenpace.store.database import open_store
from tokenpace.store.series import placed_series

DAY = 86_400.0
SPAN_DAYS = 97
ENDPOINTS = [(f"provider{p:02d}", "default", f"model{p:02d}") for p in range(20)]
WORKLOADS = ("1k", "10k")
COLUMNS = (
    "id", "run_id", "provider", "plan", "model", "base_url", "protocol", "simulated", "workload", "started_at",
    "ok", "error_kind", "ttft_ms", "output_speed", "e2e_ms", "chunk_count", "output_tokens", "reasoning_tokens",
    "first_chunk_tokens", "timeline", "tool_version",
)  # fmt: skip


def row(
    rng: random.Random, endpoint: tuple[str, str, str], workload: str, at: float, ok: bool, slow: bool
) -> tuple[Any, ...]:
    ttft = rng.lognormvariate(5.5, 0.3) * (5 if slow else 1) if ok else None
    speed = rng.lognormvariate(4.5, 0.3) if ok else None
    e2e = ttft + 1000 * 500 / speed if ttft is not None and speed is not None else None
    return (
        uuid.UUID(int=rng.getrandbits(128)).hex, "bench", *endpoint, "http://bench.invalid/v1", "openai-chat", 0,
        workload, at, int(ok), None if ok else "http_error", ttft, speed, e2e, 500 if ok else 0, 500 if ok else 0,
        0, 1 if ok else 0, "{}", "bench",
    )  # fmt: skip


def rows(count: int, now: float, rng: random.Random) -> Iterator[tuple[Any, ...]]:
    """Samples oldest first: each endpoint and workload at an even cadence, 2 % failed at random, and an outage
    and a slow hour per endpoint every 10 days."""
    keys = [(e, w) for e in ENDPOINTS for w in WORKLOADS]
    every = SPAN_DAYS * DAY * len(keys) / count
    start = now - SPAN_DAYS * DAY
    for i in range(count // len(keys)):
        for k, (endpoint, workload) in enumerate(keys):
            at = start + i * every + k * every / len(keys)
            phase = (at / 3600 + k) % 240  # hours into a 10-day cycle, each endpoint its own
            ok = rng.random() > 0.02 and not 100 <= phase < 101
            yield row(rng, endpoint, workload, at, ok, 200 <= phase < 201)


def fill(path: Path, count: int, now: float) -> Callable[[list[tuple[Any, ...]]], None]:
    """A SQLite file of ``count`` samples, and a function that stores more (as another process would)."""
    open_store(str(path)).close()  # creates and migrates the schema
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("BEGIN")
    conn.executemany(insert("?"), rows(count, now, random.Random(1)))
    conn.execute("COMMIT")
    conn.execute("ANALYZE")

    def store_more(more: list[tuple[Any, ...]]) -> None:
        conn.executemany(insert("?"), more)

    return store_more


def fill_pg(url: str, count: int, now: float) -> Callable[[list[tuple[Any, ...]]], None]:
    """The same in a PostgreSQL schema, by COPY, vacuumed and analysed as autovacuum would have it."""
    open_store(url).close()
    with psycopg.connect(url) as conn, conn.cursor().copy(f"COPY samples ({', '.join(COLUMNS)}) FROM STDIN") as copy:
        for r in rows(count, now, random.Random(1)):
            copy.write_row(r)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE samples")
    writer = psycopg.connect(url, autocommit=True)
    return lambda more: writer.cursor().executemany(insert("%s"), more)


def insert(mark: str) -> str:
    return f"INSERT INTO samples ({', '.join(COLUMNS)}) VALUES ({', '.join([mark] * len(COLUMNS))})"  # noqa: S608


def measure(url: str, store_more: Callable[[list[tuple[Any, ...]]], None], now: datetime, minutes: int) -> None:
    t = Thresholds()
    with open_store(url) as store:
        for name, days in (("pages and /metrics (90 days)", 90), ("alert watcher (1 day)", 1)):
            began = time.process_time()
            placed = placed_series(store, since=read_start(now, days, t))
            span = now - timedelta(days=days)
            found = [c for c in derive(placed, t) if (c.closed_at or now) >= span]
            cpu = time.process_time() - began
            print(f"before, {name}: every minute {cpu:.2f} s CPU ({len(placed):,} samples, {len(found)} incidents)")
        log = IncidentLog(store, t, 90)
        began = time.process_time()
        first = log.refresh(now)
        print(f"after: first refresh {time.process_time() - began:.2f} s CPU ({log.read:,} samples read, "
              f"{len(first.found)} incidents)")  # fmt: skip
        rng, costs, walls, read = random.Random(2), [], [], log.read
        cadence = 600.0 / len(ENDPOINTS) / len(WORKLOADS)  # one per endpoint and workload each 10 minutes
        new: list[tuple[Any, ...]] = []
        for minute in range(1, minutes + 1):
            at = now + timedelta(minutes=minute)
            new = [row(rng, ENDPOINTS[j % 20], WORKLOADS[j % 2], at.timestamp() - 60 + j * cadence, True, False)
                   for j in range(int(60 / cadence))]  # fmt: skip
            store_more(new)
            store.written_elsewhere()
            began, wall = time.process_time(), time.perf_counter()
            log.refresh(at)
            costs.append(time.process_time() - began)
            walls.append(time.perf_counter() - wall)
        median, most, wall_ms = statistics.median(costs) * 1000, max(costs) * 1000, statistics.median(walls) * 1000
        each = (log.read - read) / minutes
        print(f"after: a refresh a minute, {len(new)} new samples each: median {median:.1f} ms CPU (max {most:.1f}), "
              f"{wall_ms:.1f} ms wall, database included; {each:.0f} samples read each")  # fmt: skip
        store_more([row(rng, ENDPOINTS[3], "1k", (now - timedelta(days=3)).timestamp(), False, False)])
        began = time.process_time()
        log.refresh(now + timedelta(minutes=minutes + 1))
        print(f"after: a refresh after a sample stored 3 days late: {time.process_time() - began:.2f} s CPU "
              f"({log.rederived} endpoint and region derived again)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=300_000)
    parser.add_argument("--minutes", type=int, default=10, help="refreshes a minute apart to time")
    parser.add_argument("--pg", help="also on PostgreSQL, in a fresh schema of this database (dropped after)")
    args = parser.parse_args()
    now = datetime(2026, 12, 6, 12, tzinfo=UTC)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "incidents.db"
        print(f"SQLite, {args.samples:,} samples:")
        measure(str(path), fill(path, args.samples, now.timestamp()), now, args.minutes)
    if args.pg:
        schema = f"bench_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(args.pg, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        try:
            url = f"{args.pg}?options={quote(f'-c search_path={schema}')}"
            print(f"PostgreSQL, {args.samples:,} samples:")
            measure(url, fill_pg(url, args.samples, now.timestamp()), now, args.minutes)
        finally:
            with psycopg.connect(args.pg, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")


if __name__ == "__main__":
    main()
