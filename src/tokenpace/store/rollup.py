"""The rollup: what the leaderboard's windows need of the published samples, one row per endpoint hour and day.

A window over a million samples ranked 70,000 of them per read (0.4 s for 24 h, 2-3 s for 72 h on SQLite).
``sample_hours`` holds, per (provider, plan, model, workload, hour = floor(started_at / 3600), client_bound) of
the *published* samples: how many, how many ok and one-shot, the first and last time, the protocol and simulated
flag (their maxima, as the windows report them), the failures' kinds (`` kind`` each), and for the ok samples
each metric's values themselves, NULLs skipped, as text: 16 hex digits per value, its IEEE 754 bits big-endian
(:func:`encode`). That round-trips every float exactly, concatenates as text in both databases, and decodes
~200,000 values in a few milliseconds (:func:`decode`; ``float()`` of decimal text took ten times as long).
``sample_days`` is the same per day = floor(started_at / 86400) (a :class:`Level` each): a 72 h window holds
two or three whole days, so it reads a few day rows and the hours at the day edges instead of 72 hour rows
per endpoint, and ``sample_quarters`` per quarter = 6 hours, so those day edges are at most 5 hours and
2 quarters each. So a window's whole days and hours are a handful of rows per endpoint, and its percentiles stay
exact: the values are all there, only grouped.

The single writer keeps every level in the transaction that inserts the sample (:func:`add`, an upsert per level whose
text columns grow by concatenation, ``||`` in both databases); :func:`rebuild` recomputes them from ``samples``,
as the migrations that created them did and as a migration that changes samples must (the tests check that a
rebuild equals what the writer kept). Hours and days are exact: :func:`hour_of` gives h with
h * 3600 <= t < (h + 1) * 3600, compared as the database compares, and a day is 24 whole hours (:func:`day_of`),
so a window can read the days and hours it holds whole from here (:func:`cover`) and its two edge hours from
``samples`` without counting a sample twice or missing one.
"""

from __future__ import annotations

import math
import struct
import sys
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tokenpace.store.columns import SAMPLE_COLUMNS
from tokenpace.store.dialects import Connection

HOUR = 3600
DAY = 24 * HOUR
METRICS = ("output_speed", "ttft_ms", "e2e_ms")  # the leaderboard's figures, columns of ``samples``
KEY = ("provider", "plan", "model", "workload", "hour", "client_bound")
COLUMNS = (
    *KEY, "samples", "ok", "one_shot", "first_at", "last_at", "protocol", "simulated", "failures", *METRICS,
)  # fmt: skip
# What a raw sample contributes, in this order: the windows read their edge hours with the same columns.
RAW = (
    "provider, plan, model, workload, started_at, ok, error_kind, source, client_bound, protocol, simulated, "
    + ", ".join(METRICS)
)
UNKNOWN = "unknown"  # a failure's kind when the sample has none, as the windows have always shown it


@dataclass(frozen=True, slots=True)
class Level:
    """A rollup table: its rows hold the samples of one ``unit`` (a column counting ``seconds`` since the epoch)."""

    table: str
    unit: str
    seconds: int

    @property
    def key(self) -> tuple[str, ...]:
        return tuple(self.unit if c == "hour" else c for c in KEY)

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(self.unit if c == "hour" else c for c in COLUMNS)

    def of(self, t: float) -> int:
        """The unit holding t (exactly, as :func:`hour_of`)."""
        return hour_of(t) // (self.seconds // HOUR)

    def schema(self) -> tuple[str, str]:
        return (
            f"""CREATE TABLE {self.table} (
        provider TEXT NOT NULL,
        plan TEXT NOT NULL,
        model TEXT NOT NULL,
        workload TEXT NOT NULL,
        {self.unit} INTEGER NOT NULL,
        client_bound INTEGER NOT NULL,
        samples INTEGER NOT NULL,
        ok INTEGER NOT NULL,
        one_shot INTEGER NOT NULL,
        first_at DOUBLE PRECISION NOT NULL,
        last_at DOUBLE PRECISION NOT NULL,
        protocol TEXT NOT NULL,
        simulated INTEGER NOT NULL,
        failures TEXT NOT NULL,
        output_speed TEXT NOT NULL,
        ttft_ms TEXT NOT NULL,
        e2e_ms TEXT NOT NULL,
        PRIMARY KEY (provider, plan, model, workload, {self.unit}, client_bound)
    )""",
            # Covering for the filter menus (windows.present); a board's read narrows by unit, then workload.
            f"CREATE INDEX {self.table}_time ON {self.table} ({self.unit}, workload, provider, plan, model)",
        )


HOURS = Level("sample_hours", "hour", HOUR)
QUARTERS = Level("sample_quarters", "quarter", 6 * HOUR)  # 6 hours: a day's edges read a few rows, not 23
DAYS = Level("sample_days", "day", DAY)
LEVELS = (HOURS, QUARTERS, DAYS)
SCHEMA = HOURS.schema()  # migration 6
_INDEX = {c: i for i, c in enumerate(SAMPLE_COLUMNS)}
_PICK = tuple(_INDEX[c.strip()] for c in RAW.split(","))


def hour_of(t: float) -> int:
    """The hour h holding t: h * 3600 <= t < (h + 1) * 3600 exactly (a float quotient could round up)."""
    h = math.floor(t / HOUR)
    while h * HOUR > t:
        h -= 1
    while (h + 1) * HOUR <= t:
        h += 1
    return h


def day_of(t: float) -> int:
    """The day d holding t: d * 86400 <= t < (d + 1) * 86400, the day of its hour (24 whole hours)."""
    return DAYS.of(t)


Range = tuple[Level, int, int]  # a level's units [first, end)
Edge = tuple[str, float, str, float]  # started_at above (">" or ">=") a time and below ("<" or "<=") another


def _tile(h0: int, h1: int, levels: Sequence[Level]) -> list[Range]:
    """The whole hours [h0, h1) as the coarsest level's whole units, the rest from finer levels at both ends."""
    level, finer = levels[-1], levels[:-1]
    if not finer:
        return [(level, h0, h1)] if h0 < h1 else []
    per = level.seconds // HOUR
    first, end = -(-h0 // per), h1 // per
    if first >= end:
        return _tile(h0, h1, finer)
    return [*_tile(h0, first * per, finer), (level, first, end), *_tile(end * per, h1, finer)]


def cover(low: float, now: float) -> tuple[list[Range], list[Edge]]:
    """The span (low, now] as whole days, quarters and hours of the rollup and at most two raw edges, each
    sample in one.

    The whole hours are [h0, h1), h0 the hour after low's and h1 now's; of them the whole days come from
    ``sample_days``, the whole quarters (6 h) before and after them from ``sample_quarters``, and the hours left
    at both ends from ``sample_hours``. The edges are the part of low's hour after low and now's hour up to now
    (which may hold samples after now, so it is never read from the rollup).
    """
    h0, h1 = hour_of(low) + 1, hour_of(now)
    if h0 >= h1:
        return [], [(">", low, "<=", now)]
    return _tile(h0, h1, LEVELS), [(">", low, "<", float(h0 * HOUR)), (">=", float(h1 * HOUR), "<=", now)]


def encode(value: float) -> str:
    """A float as 16 hex digits: its IEEE 754 bits, big-endian."""
    return struct.pack(">d", value).hex()


def decode(text: str) -> list[float]:
    """The floats of concatenated :func:`encode` texts."""
    values = array("d", bytes.fromhex(text))
    if sys.byteorder == "little":
        values.byteswap()
    return values.tolist()


def _larger(table: str, column: str, *, smaller: bool = False) -> str:
    """The upsert's MAX (or MIN) of the kept and the new value: CASE, as SQLite and PostgreSQL spell it alike."""
    op = "<" if smaller else ">"
    kept, new = f"{table}.{column}", f"excluded.{column}"
    return f"{column} = CASE WHEN {new} {op} {kept} THEN {new} ELSE {kept} END"


def _upsert_set(t: str) -> str:
    return ", ".join(
        [f"{c} = {t}.{c} + excluded.{c}" for c in ("samples", "ok", "one_shot")]
        + [_larger(t, "first_at", smaller=True), _larger(t, "last_at"), _larger(t, "protocol")]
        + [_larger(t, "simulated"), *(f"{c} = {t}.{c} || excluded.{c}" for c in ("failures", *METRICS))]
    )


@dataclass
class _Row:
    """One rollup row being built: from one sample (the writer) or from many (a rebuild)."""

    protocol: str
    simulated: int
    first_at: float
    last_at: float
    samples: int = 0
    ok: int = 0
    one_shot: int = 0
    failures: list[str] = field(default_factory=list)
    values: tuple[list[str], ...] = field(default_factory=lambda: ([], [], []))

    def add(self, raw: Sequence[Any]) -> None:
        """Count one sample, given as its ``RAW`` columns."""
        at, ok, kind, source, _, protocol, simulated, *metrics = raw[4:]
        self.samples += 1
        self.ok += int(ok)
        self.one_shot += source == "one-shot"
        self.first_at, self.last_at = min(self.first_at, at), max(self.last_at, at)
        self.protocol, self.simulated = max(self.protocol, protocol), max(self.simulated, int(simulated))
        if not ok:
            self.failures.append(f" {kind or UNKNOWN}")
        else:
            for texts, value in zip(self.values, metrics, strict=True):
                if value is not None:
                    texts.append(encode(float(value)))

    def row(self, key: Sequence[Any]) -> tuple[Any, ...]:
        counts = (self.samples, self.ok, self.one_shot, self.first_at, self.last_at, self.protocol, self.simulated)
        return (*key, *counts, "".join(self.failures), *("".join(v) for v in self.values))


def _key(raw: Sequence[Any], level: Level) -> tuple[Any, ...]:
    return (*raw[:4], level.of(raw[4]), int(raw[8]))


def _start(raw: Sequence[Any]) -> _Row:
    return _Row(raw[9], int(raw[10]), raw[4], raw[4])


def _insert(level: Level, ph: str, rows: int = 1) -> str:
    one = f"({', '.join([ph] * len(COLUMNS))})"
    return f"INSERT INTO {level.table} ({', '.join(level.columns)}) VALUES {', '.join([one] * rows)}"  # noqa: S608


def add(conn: Connection, ph: str, values: Sequence[Any]) -> None:
    """Count a sample just inserted (its values in ``SAMPLE_COLUMNS`` order), in the insert's transaction."""
    if not values[_INDEX["published"]]:
        return
    raw = [values[i] for i in _PICK]
    one = _start(raw)
    one.add(raw)
    for level in LEVELS:
        upsert = f"{_insert(level, ph)} ON CONFLICT ({', '.join(level.key)}) DO UPDATE SET {_upsert_set(level.table)}"
        conn.execute(upsert, one.row(_key(raw, level)))


def fold(raws: Iterable[Sequence[Any]], level: Level = HOURS) -> dict[tuple[Any, ...], _Row]:
    """Samples (``RAW`` columns) grouped into a level's rollup rows."""
    rows: dict[tuple[Any, ...], _Row] = {}
    for raw in raws:
        key = _key(raw, level)
        row = rows.get(key)
        if row is None:
            row = rows[key] = _start(raw)
        row.add(raw)
    return rows


def rebuild(conn: Connection, ph: str, levels: Sequence[Level] = LEVELS, batch: int = 500) -> None:
    """Recompute the levels' rollups from ``samples``, a day of samples at a time (whole hours and a whole day)."""
    for level in levels:
        conn.execute(f"DELETE FROM {level.table}")  # noqa: S608
    published = "FROM samples WHERE published = 1"
    nxt = f"SELECT MIN(started_at) {published} AND started_at >= {ph}"
    day = f"SELECT {RAW} {published} AND started_at >= {ph} AND started_at < {ph}"
    at = conn.execute(f"SELECT MIN(started_at) {published}").fetchone()[0]
    while at is not None:
        start = float(day_of(at) * DAY)
        end = start + DAY
        raws = conn.execute(day, (start, end)).fetchall()
        for level in levels:
            rows = [r.row(k) for k, r in fold(raws, level).items()]
            for i in range(0, len(rows), batch):
                chunk = rows[i : i + batch]
                conn.execute(_insert(level, ph, len(chunk)), [v for r in chunk for v in r])
        at = conn.execute(nxt, (end,)).fetchone()[0]


def rebuild_hours(conn: Connection, ph: str) -> None:
    """Migration 6: the hourly rollup alone (the daily one came later)."""
    rebuild(conn, ph, (HOURS,))


def rebuild_days(conn: Connection, ph: str) -> None:
    """Migration 7: the daily rollup, from the samples (the hourly one is already right)."""
    rebuild(conn, ph, (DAYS,))


def rebuild_quarters(conn: Connection, ph: str) -> None:
    """Migration 8: the 6-hour rollup, from the samples (the others are already right)."""
    rebuild(conn, ph, (QUARTERS,))
