"""The hourly rollup: what the leaderboard's windows need of the published samples, one row per endpoint hour.

A window over a million samples ranked 70,000 of them per read (0.4 s for 24 h, 2-3 s for 72 h on SQLite).
``sample_hours`` holds, per (provider, plan, model, workload, hour = floor(started_at / 3600), client_bound) of
the *published* samples: how many, how many ok and one-shot, the first and last time, the protocol and simulated
flag (their maxima, as the windows report them), the failures' kinds (`` kind`` each), and for the ok samples
each metric's values themselves, NULLs skipped, as text: 16 hex digits per value, its IEEE 754 bits big-endian
(:func:`encode`). That round-trips every float exactly, concatenates as text in both databases, and decodes
~200,000 values in a few milliseconds (:func:`decode`; ``float()`` of decimal text took ten times as long).
So a window's whole hours are a handful of rows per endpoint, and its percentiles stay exact: the values are all
there, only grouped.

The single writer keeps it in the transaction that inserts the sample (:func:`add`, an upsert whose text
columns grow by concatenation, ``||`` in both databases); :func:`rebuild` recomputes it from ``samples``, as the
migration that created it did and as a migration that changes samples must (the tests check that a rebuild
equals what the writer kept). Hours are exact: :func:`hour_of` gives h with h * 3600 <= t < (h + 1) * 3600,
compared as the database compares, so a window can read the hours it holds whole from here and its two edge
hours from ``samples`` without counting a sample twice or missing one.
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
SCHEMA = (
    """CREATE TABLE sample_hours (
        provider TEXT NOT NULL,
        plan TEXT NOT NULL,
        model TEXT NOT NULL,
        workload TEXT NOT NULL,
        hour INTEGER NOT NULL,
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
        PRIMARY KEY (provider, plan, model, workload, hour, client_bound)
    )""",
    # Covering for the filter menus (windows.present); a board's read narrows by hour, then workload.
    "CREATE INDEX sample_hours_time ON sample_hours (hour, workload, provider, plan, model)",
)
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


def encode(value: float) -> str:
    """A float as 16 hex digits: its IEEE 754 bits, big-endian."""
    return struct.pack(">d", value).hex()


def decode(text: str) -> list[float]:
    """The floats of concatenated :func:`encode` texts."""
    values = array("d", bytes.fromhex(text))
    if sys.byteorder == "little":
        values.byteswap()
    return values.tolist()


def _larger(column: str, *, smaller: bool = False) -> str:
    """The upsert's MAX (or MIN) of the kept and the new value: CASE, as SQLite and PostgreSQL spell it alike."""
    op = "<" if smaller else ">"
    return f"{column} = CASE WHEN excluded.{column} {op} sample_hours.{column} THEN excluded.{column} ELSE sample_hours.{column} END"  # noqa: E501


_UPSERT_SET = ", ".join(
    [f"{c} = sample_hours.{c} + excluded.{c}" for c in ("samples", "ok", "one_shot")]
    + [_larger("first_at", smaller=True), _larger("last_at"), _larger("protocol"), _larger("simulated")]
    + [f"{c} = sample_hours.{c} || excluded.{c}" for c in ("failures", *METRICS)]
)


@dataclass
class _Hour:
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


def _key(raw: Sequence[Any]) -> tuple[Any, ...]:
    return (*raw[:4], hour_of(raw[4]), int(raw[8]))


def _start(raw: Sequence[Any]) -> _Hour:
    return _Hour(raw[9], int(raw[10]), raw[4], raw[4])


def _insert(ph: str, rows: int = 1) -> str:
    one = f"({', '.join([ph] * len(COLUMNS))})"
    return f"INSERT INTO sample_hours ({', '.join(COLUMNS)}) VALUES {', '.join([one] * rows)}"  # noqa: S608


def add(conn: Connection, ph: str, values: Sequence[Any]) -> None:
    """Count a sample just inserted (its values in ``SAMPLE_COLUMNS`` order), in the insert's transaction."""
    if not values[_INDEX["published"]]:
        return
    raw = [values[i] for i in _PICK]
    hour = _start(raw)
    hour.add(raw)
    upsert = f"{_insert(ph)} ON CONFLICT ({', '.join(KEY)}) DO UPDATE SET {_UPSERT_SET}"
    conn.execute(upsert, hour.row(_key(raw)))


def fold(raws: Iterable[Sequence[Any]]) -> dict[tuple[Any, ...], _Hour]:
    """Samples (``RAW`` columns) grouped into rollup rows."""
    hours: dict[tuple[Any, ...], _Hour] = {}
    for raw in raws:
        key = _key(raw)
        hour = hours.get(key)
        if hour is None:
            hour = hours[key] = _start(raw)
        hour.add(raw)
    return hours


def rebuild(conn: Connection, ph: str, batch: int = 500) -> None:
    """Recompute the whole rollup from ``samples``, a day of samples at a time (a day is whole hours)."""
    conn.execute("DELETE FROM sample_hours")
    published = "FROM samples WHERE published = 1"
    nxt = f"SELECT MIN(started_at) {published} AND started_at >= {ph}"
    day = f"SELECT {RAW} {published} AND started_at >= {ph} AND started_at < {ph}"
    at = conn.execute(f"SELECT MIN(started_at) {published}").fetchone()[0]
    while at is not None:
        start = float(hour_of(at) * HOUR)
        end = start + 24 * HOUR
        rows = [h.row(k) for k, h in fold(conn.execute(day, (start, end)).fetchall()).items()]
        for i in range(0, len(rows), batch):
            chunk = rows[i : i + batch]
            conn.execute(_insert(ph, len(chunk)), [v for r in chunk for v in r])
        at = conn.execute(nxt, (end,)).fetchone()[0]
