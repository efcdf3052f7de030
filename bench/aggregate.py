"""How long the leaderboard's rolling windows take over a million samples.

Builds a temporary SQLite file (and, with ``--pg URL``, a fresh PostgreSQL schema) holding ``--samples``
synthetic samples spread evenly over 200 endpoints x 3 workloads and the last 14 days, 3 % of them failed,
then times :func:`tokenpace.store.windows.endpoint_rows` for each window (the 100k workload long, as in serve),
and prints issue 10's table: a cold board (its SQL half, as a page computes it with no memo) for the default
workload over 24 h and 72 h, and an endpoint page's two reads (its rows and its chart points over 72 h):

    uv run python bench/aggregate.py [--samples 1000000] [--repeat 3] [--pg postgresql://USER@HOST/DB]

Rows go in by executemany in one transaction (SQLite) or COPY (PostgreSQL): the store's one-commit-per-sample
writer is built for samples arriving seconds apart, not for a million at once. The hourly and daily rollups
the writer would have kept (``store/rollup.py``) are then rebuilt from them, as the migrations that create them
do, and the time that takes is printed.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg

from tokenpace.board.changes import Kept
from tokenpace.board.medians import model_rows
from tokenpace.board.query import Query
from tokenpace.board.ranking import read_board, snapshot
from tokenpace.config.windows import DEFAULT_WINDOW, EACH, WINDOWS
from tokenpace.store import counting, rollup
from tokenpace.store.database import Store, open_store
from tokenpace.store.series import series
from tokenpace.store.windows import endpoint_rows

DAY = 86400
WORKLOADS = ("1k", "10k", "100k")
LONG = ("100k",)
COLUMNS = (
    "id", "run_id", "provider", "plan", "model", "base_url", "protocol", "simulated", "workload", "started_at",
    "ok", "error_kind", "ttft_ms", "output_speed", "e2e_ms", "chunk_count", "output_tokens", "reasoning_tokens",
    "first_chunk_tokens", "timeline", "tool_version",
)  # fmt: skip


def endpoints() -> list[tuple[str, str, str]]:
    """200 endpoints: 40 providers, each serving 5 of 20 models on the default plan."""
    return [(f"provider{p:02d}", "default", f"model{(p + m * 4) % 20:02d}") for p in range(40) for m in range(5)]


def rows(count: int, now: float, seed: int = 1) -> Iterator[tuple[Any, ...]]:
    """Samples oldest first, as a sampler writes them (so a window's rows sit together in the file)."""
    rng = random.Random(seed)
    keys = [(e, w) for e in endpoints() for w in WORKLOADS]
    start = now - 14 * DAY
    for i in range(count):
        (provider, plan, model), workload = keys[rng.randrange(len(keys))]
        at = start + 14 * DAY * (i + rng.random()) / count
        ok = rng.random() >= 0.03
        ttft = rng.lognormvariate(5.5, 0.4) if ok else None
        speed = rng.lognormvariate(4.5, 0.3) if ok else None
        e2e = ttft + 1000 * 500 / speed if ttft is not None and speed is not None else None
        yield (
            uuid.UUID(int=rng.getrandbits(128)).hex, "bench", provider, plan, model, "http://bench.invalid/v1",
            "openai-chat", 0, workload, at, int(ok), None if ok else "http_error",
            ttft, speed, e2e, 500 if ok else 0, 500 if ok else 0, 0, 1 if ok else 0, "{}", "bench",
        )  # fmt: skip


def fill_sqlite(path: Path, count: int, now: float) -> None:
    open_store(str(path)).close()  # creates and migrates the schema
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    insert = f"INSERT INTO samples ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"  # noqa: S608
    conn.executemany(insert, rows(count, now))
    conn.execute("COMMIT")
    start = time.perf_counter()
    conn.execute("BEGIN")
    rollup.rebuild(conn, "?")
    conn.execute("COMMIT")
    print(f"SQLite: rollups rebuilt in {time.perf_counter() - start:.1f} s")
    conn.execute("ANALYZE")  # what a long-running database would have: statistics for the planner
    conn.close()


def fill_pg(url: str, count: int, now: float) -> None:
    open_store(url).close()
    with psycopg.connect(url) as conn:
        # The rebuild below counts them at once: the per-row counting trigger (store/counting.py) is off meanwhile,
        # in this transaction only.
        conn.execute(f"ALTER TABLE samples DISABLE TRIGGER {counting.TRIGGER}")
        with conn.cursor().copy(f"COPY samples ({', '.join(COLUMNS)}) FROM STDIN") as copy:
            for row in rows(count, now):
                copy.write_row(row)
        conn.execute(f"ALTER TABLE samples ENABLE TRIGGER {counting.TRIGGER}")
    start = time.perf_counter()
    with psycopg.connect(url) as conn:
        rollup.rebuild(conn, "%s")
    print(f"PostgreSQL: rollups rebuilt in {time.perf_counter() - start:.1f} s")
    with psycopg.connect(url, autocommit=True) as conn:
        # What autovacuum gives a long-running database: statistics, and the visibility map index-only scans need.
        conn.execute("VACUUM ANALYZE samples")
        conn.execute("VACUUM ANALYZE sample_hours")
        conn.execute("VACUUM ANALYZE sample_quarters")
        conn.execute("VACUUM ANALYZE sample_days")


def time_windows(store: Store, now: datetime, repeat: int) -> None:
    for window in WINDOWS.values():
        best, found = float("inf"), []
        for _ in range(repeat):
            start = time.perf_counter()
            found = endpoint_rows(store, window, now, LONG)
            best = min(best, time.perf_counter() - start)
        start = time.perf_counter()
        models = model_rows(found, window.statistic)
        model_s = time.perf_counter() - start
        samples = sum(r.samples for r in found)
        print(
            f"  {window.name:>4}: endpoint_rows {best:6.2f} s (best of {repeat}) for {len(found)} rows over "
            f"{samples:,} samples; model_rows {model_s * 1000:.1f} ms for {len(models)} rows"
        )
        for workload in WORKLOADS:  # what a page costs: one workload's rows plus the filter menus
            start = time.perf_counter()
            shown = read_board(store, Query(window=window.name, workload=workload), now, long_workloads=LONG)
            print(f"        read_board({workload}): {time.perf_counter() - start:6.2f} s for {len(shown.entries)} rows")


def first_and_best_ms(repeat: int, fn: Callable[[], object]) -> tuple[float, float]:
    """The first of ``repeat`` calls (the database's caches as the store opened them) and the fastest (the
    machine's noise only ever adds), in ms."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times[0] * 1000, min(times) * 1000


def issue_table(store: Store, now: datetime, repeat: int) -> list[tuple[str, tuple[float, float]]]:
    """Issue 10's figures: a cold 24 h and 72 h board (default workload), and the 72 h one of one region and of
    each region apart (issue 11), the board's change detection (its own memo) and an endpoint page, in ms."""
    workload, (provider, plan, model) = Query().workload, endpoints()[0]
    since = now - timedelta(seconds=WINDOWS[DEFAULT_WINDOW].seconds)

    def page() -> None:
        endpoint_rows(store, WINDOWS[DEFAULT_WINDOW], now, LONG, provider=provider, plan=plan, model=model)
        series(store, provider=provider, plan=plan, model=model, workload=None, since=since)

    boards = [
        (f"board {w} ({workload})", partial(snapshot, store, WINDOWS[w], workload, now, LONG)) for w in ("24h", "72h")
    ]
    # The same board of one region (every sample here is the storing process's: region '') and per region.
    h72 = WINDOWS["72h"]
    boards += [
        ("board 72h, one region", partial(snapshot, store, h72, workload, now, LONG, region="")),
        ("board 72h, each region", partial(snapshot, store, h72, workload, now, LONG, region=EACH)),
    ]
    rows = snapshot(store, WINDOWS[DEFAULT_WINDOW], workload, now, LONG).rows
    kept = Kept(store)  # as a page keeps it: every row read by the first call, then only rows that took a sample
    changes = (f"board's changes ({len(rows)} rows)", partial(kept.current, rows))
    reads: list[tuple[str, Callable[[], object]]] = [*boards, changes, ("endpoint page (72h)", page)]
    return [(label, first_and_best_ms(repeat, fn)) for label, fn in reads]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pg", metavar="URL", help="also time PostgreSQL, in a temporary schema of this database")
    parser.add_argument("--table-only", action="store_true", help="only issue 10's table, not every window")
    args = parser.parse_args()
    now = datetime.now(UTC)
    tables: dict[str, list[tuple[str, tuple[float, float]]]] = {}

    def timed(name: str, store: Store) -> None:
        tables[name] = issue_table(store, now, args.repeat)
        if not args.table_only:
            time_windows(store, now, args.repeat)

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        start = time.perf_counter()
        fill_sqlite(path, args.samples, now.timestamp())
        print(f"SQLite: {args.samples:,} samples inserted (and rolled up) in {time.perf_counter() - start:.1f} s")
        with open_store(str(path)) as store:
            timed("SQLite", store)
    if args.pg:
        schema = f"bench_{uuid.uuid4().hex[:12]}"  # a fresh schema, dropped afterwards: the database is left as found
        with psycopg.connect(args.pg, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        url = f"{args.pg}{'&' if '?' in args.pg else '?'}options={quote(f'-c search_path={schema}')}"
        try:
            start = time.perf_counter()
            fill_pg(url, args.samples, now.timestamp())
            print(f"PostgreSQL: {args.samples:,} samples copied (and rolled up) in {time.perf_counter() - start:.1f} s")
            with open_store(url) as store:
                timed("PostgreSQL", store)
        finally:
            with psycopg.connect(args.pg, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")
    print(f"\n{args.samples:,} samples, ms: the first call after the store opened / the best of {args.repeat}")
    print(f"{'':24}" + "".join(f"{name:>16}" for name in tables))
    for i, (label, _) in enumerate(next(iter(tables.values()))):
        print(f"{label:24}" + "".join(f"{t[i][1][0]:9.1f} /{t[i][1][1]:5.1f}" for t in tables.values()))


if __name__ == "__main__":
    main()
