"""The rollup: what the leaderboard's windows need of the published samples, one row per endpoint hour and day.

A window over a million samples ranked 70,000 of them per read (0.4 s for 24 h, 2-3 s for 72 h on SQLite).
``sample_hours`` holds, per (provider, plan, model, workload, region, hour = floor(started_at / 3600),
client_bound, cached, cold) of the *published* samples (:data:`TAGS`: served from the provider's prompt cache, a
cold start; the board's figures are of rows with both 0): how many, how many ok and one-shot, the first and last
time, the protocol and simulated flag (their maxima, as the windows report them), the failures' kinds (`` kind``
each), how many had a canary verdict and how many passed (:data:`CHECKS`), and for the ok samples each metric's
values themselves (TTFT less the network round trip and end-to-end for 500 tokens too: :data:`DERIVED`), NULLs
skipped, as text: 16 hex digits per value, its IEEE 754 bits big-endian (:func:`encode`). That round-trips every
float exactly, concatenates as text in both databases, and decodes ~200,000 values in a few milliseconds
(:func:`decode`; ``float()`` of decimal text took ten times as long).
``sample_days`` is the same per day = floor(started_at / 86400) (a :class:`RollupLevel` each): a 72 h window holds
two or three whole days, so it reads a few day rows and the hours at the day edges instead of 72 hour rows
per endpoint, and ``sample_quarters`` per quarter = 6 hours, so those day edges are at most 5 hours and
2 quarters each. So a window's whole days and hours are a handful of rows per endpoint, and its percentiles stay
exact: the values are all there, only grouped.

The writer keeps every level in the transaction that inserts the sample (:func:`add`, an upsert per level whose
text columns grow by concatenation, ``||`` in both databases; on PostgreSQL the same upserts run in a trigger,
``counting.py``, so that region agents' roles need no right on the rollups); :func:`rebuild` recomputes them from
``samples``, as the migrations that created them did and as a migration that changes samples must (the tests check
that a rebuild equals what the writer kept). Hours and days are exact: :func:`hour_of` gives h with h * 3600 <= t <
(h + 1) * 3600, compared as the database compares, and a day is 24 whole hours (:func:`day_of`), so a window can
read the days and hours it holds whole from here (:func:`cover`) and its two edge hours from ``samples`` without
counting a sample twice or missing one.
"""

from __future__ import annotations

import logging
import math
import struct
import sys
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tokenpace.measure.bounds import within
from tokenpace.measure.catalogue import ROLLUP_KEYS
from tokenpace.measure.metrics import ANSWER_TOKENS, corrected_ttft, e2e500
from tokenpace.measure.sample import CACHED_MIN_TOKENS, is_cached
from tokenpace.store.columns import SAMPLE_COLUMNS
from tokenpace.store.dialects import Connection

HOUR = 3600
DAY = 24 * HOUR
# Figures computed from a sample's columns (``{row}`` their prefix, as in TAGS), as SQL both databases evaluate
# alike (IEEE doubles, NULL in, NULL out) and as the writer computes them in Python (measure/metrics: corrected_ttft,
# e2e500, the same operations in the same order): kept like the others, so their percentiles are as exact. TTFT
# less the network round trip the agent measured; end-to-end for 500 tokens (none without a speed above 0).
DERIVED = {
    "ttft_net_ms": "{row}ttft_ms - {row}net_rtt_ms",
    "e2e500_ms": "CASE WHEN {row}output_speed > 0 THEN {row}ttft_ms + ({row}ttfat_ms - {row}ttft_ms) + "
    f"{float(ANSWER_TOKENS)!r} / {{row}}output_speed * 1000.0 END",
}
# Which figures the rollups keep is the catalogue's to say (its rows marked ``rollup``, measure/catalogue.py); their
# columns keep the order the tables have had since migration 10 (store/tally.py reads rows by position), a figure
# added later after them.
_FIRST = ("output_speed", "ttft_ms", "e2e_ms", "ttft_net_ms")
METRICS = tuple(sorted(ROLLUP_KEYS, key=lambda k: _FIRST.index(k) if k in _FIRST else len(_FIRST)))
STORED = tuple(m for m in METRICS if m not in DERIVED)  # the leaderboard's figures that are columns of ``samples``
COUNTS = ("samples", "ok", "one_shot", "first_at", "last_at", "protocol", "simulated", "failures")
log = logging.getLogger(__name__)
UNKNOWN = "unknown"  # a failure's kind when the sample has none, as the windows have always shown it


# Key columns after client_bound (0/1), as SQL both databases evaluate alike over a sample's columns: the provider
# served part of the prompt from its cache (its figures are not a fresh prompt's), and the request came after the
# endpoint sat idle long enough to be a cold start (its TTFT is reported apart). A fresh sample has both 0.
# ``{row}`` is the columns' prefix: "" in a query over samples, "NEW." in the counting trigger (counting.py).
TAGS = {
    "cached": f"CASE WHEN {{row}}provider_cached_tokens >= {CACHED_MIN_TOKENS} THEN 1 ELSE 0 END",
    "cold": "{row}cold",
}
# Counts of the correctness canary (issue 22): samples whose verdict is known, and those that passed.
CHECKS = ("canary_checked", "canary_passed")


# What every sample counts in a row besides its identity (the raw columns after the identity).
_COUNTED = ("started_at", "ok", "error_kind", "source", "client_bound", "protocol", "simulated")
Raw = Mapping[str, Any]  # a sample's raw columns by name (:attr:`Shape.names`)


@dataclass(frozen=True, slots=True)
class Shape:
    """What a rollup row is keyed by (besides its unit and client_bound) and which figures it keeps.

    The tables' shape changed (migration 10 added the region and corrected TTFT, migration 13 the cached and cold
    tags and the canary's counts, migration 18 end-to-end for 500 tokens): each migration names the shape it
    builds, spelt out in the migration (migrations.py), so the history means what it meant; the code reads
    :data:`CURRENT`.
    """

    ident: tuple[str, ...]
    metrics: tuple[str, ...]
    tags: tuple[str, ...] = ()  # of TAGS: key columns after client_bound
    checks: tuple[str, ...] = ()  # CHECKS, or none: counts after the failures

    @property
    def names(self) -> tuple[str, ...]:
        """The columns a raw sample contributes, by name, in the order :attr:`raw` selects them."""
        return (*self.ident, *_COUNTED, *self.tags, *(("canary_ok",) if self.checks else ()), *self.metrics)

    @property
    def raw(self) -> str:
        """The SELECT list of :attr:`names` over samples: the windows read their edge hours with the same columns."""
        return ", ".join((TAGS | DERIVED)[c].format(row="") if c in TAGS or c in DERIVED else c for c in self.names)


# The shape the code writes and reads; the migration that last changed the tables built it (a test checks).
CURRENT = Shape(("provider", "plan", "model", "workload", "region"), METRICS, tuple(TAGS), CHECKS)
RAW = CURRENT.raw


@dataclass(frozen=True, slots=True)
class RollupLevel:
    """A rollup table: its rows hold the samples of one ``unit`` (a column counting ``seconds`` since the epoch)."""

    table: str
    unit: str
    seconds: int

    def key_of(self, shape: Shape) -> tuple[str, ...]:
        return (*shape.ident, self.unit, "client_bound", *shape.tags)

    def columns_of(self, shape: Shape) -> tuple[str, ...]:
        return (*self.key_of(shape), *COUNTS, *shape.checks, *shape.metrics)

    @property
    def key(self) -> tuple[str, ...]:
        return self.key_of(CURRENT)

    @property
    def columns(self) -> tuple[str, ...]:
        return self.columns_of(CURRENT)

    def of(self, t: float) -> int:
        """The unit holding t (exactly, as :func:`hour_of`)."""
        return hour_of(t) // (self.seconds // HOUR)

    def schema(self, shape: Shape) -> tuple[str, str]:
        texts = {"provider", "plan", "model", "workload", "region", "protocol", "failures", *shape.metrics}
        kinds = {"first_at": "DOUBLE PRECISION", "last_at": "DOUBLE PRECISION"}
        cols = ",\n        ".join(
            f"{c} {'TEXT' if c in texts else kinds.get(c, 'INTEGER')} NOT NULL" for c in self.columns_of(shape)
        )
        return (
            f"""CREATE TABLE {self.table} (
        {cols},
        PRIMARY KEY ({", ".join(self.key_of(shape))})
    )""",
            # Covering for the filter menus (windows.present); a board's read narrows by unit, then workload.
            f"CREATE INDEX {self.table}_time ON {self.table} ({self.unit}, {', '.join(_menu(shape))})",
        )


def _menu(shape: Shape) -> tuple[str, ...]:
    """The index's columns after the unit: workload first, then the rest of the identity."""
    return ("workload", *(c for c in shape.ident if c != "workload"))


HOURS = RollupLevel("sample_hours", "hour", HOUR)
QUARTERS = RollupLevel("sample_quarters", "quarter", 6 * HOUR)  # 6 hours: a day's edges read a few rows, not 23
DAYS = RollupLevel("sample_days", "day", DAY)
LEVELS = (HOURS, QUARTERS, DAYS)
_PUBLISHED = SAMPLE_COLUMNS.index("published")


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


Range = tuple[RollupLevel, int, int]  # a level's units [first, end)
Edge = tuple[str, float, str, float]  # started_at above (">" or ">=") a time and below ("<" or "<=") another


def _tile(h0: int, h1: int, levels: Sequence[RollupLevel]) -> list[Range]:
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


def upsert_set(t: str, shape: Shape) -> str:
    return ", ".join(
        [f"{c} = {t}.{c} + excluded.{c}" for c in ("samples", "ok", "one_shot", *shape.checks)]
        + [_larger(t, "first_at", smaller=True), _larger(t, "last_at"), _larger(t, "protocol")]
        + [_larger(t, "simulated"), *(f"{c} = {t}.{c} || excluded.{c}" for c in ("failures", *shape.metrics))]
    )


@dataclass
class _Row:
    """One rollup row being built: from one sample (the writer) or from many (a rebuild), of a shape."""

    shape: Shape
    protocol: str
    simulated: int
    first_at: float
    last_at: float
    values: tuple[list[str], ...]
    samples: int = 0
    ok: int = 0
    one_shot: int = 0
    checked: int = 0
    passed: int = 0
    failures: list[str] = field(default_factory=list)
    skipped: int = 0  # values no measurement can produce (measure/bounds.py), left out

    def add(self, raw: Raw) -> None:
        """Count one sample, given as its shape's raw columns by name (its identity and tags are in the key)."""
        if self.shape.checks:
            verdict = raw["canary_ok"]
            self.checked += verdict is not None
            self.passed += bool(verdict)
        at, ok = raw["started_at"], raw["ok"]
        self.samples += 1
        self.ok += int(ok)
        self.one_shot += raw["source"] == "one-shot"
        self.first_at, self.last_at = min(self.first_at, at), max(self.last_at, at)
        self.protocol, self.simulated = max(self.protocol, raw["protocol"]), max(self.simulated, int(raw["simulated"]))
        if not ok:
            self.failures.append(f" {raw['error_kind'] or UNKNOWN}")
        else:
            for texts, metric in zip(self.values, self.shape.metrics, strict=True):
                value = raw[metric]
                if value is not None and within(metric, value):
                    texts.append(encode(float(value)))
                elif value is not None:
                    self.skipped += 1

    def row(self, key: Sequence[Any]) -> tuple[Any, ...]:
        counts = (self.samples, self.ok, self.one_shot, self.first_at, self.last_at, self.protocol, self.simulated)
        checks = (self.checked, self.passed) if self.shape.checks else ()
        return (*key, *counts, "".join(self.failures), *checks, *("".join(v) for v in self.values))


def _key(raw: Raw, level: RollupLevel, shape: Shape) -> tuple[Any, ...]:
    """The row's key (:meth:`RollupLevel.key_of`): the sample's identity, its unit, whether it was client-bound and its
    tags (0/1 each)."""
    ident = (raw[c] for c in shape.ident)
    return (*ident, level.of(raw["started_at"]), int(raw["client_bound"]), *(int(raw[t]) for t in shape.tags))


def _first_row(raw: Raw, shape: Shape) -> _Row:
    at = raw["started_at"]
    return _Row(shape, raw["protocol"], int(raw["simulated"]), at, at, tuple([] for _ in shape.metrics))


def _insert(level: RollupLevel, ph: str, rows: int = 1, shape: Shape = CURRENT) -> str:
    columns = level.columns_of(shape)
    one = f"({', '.join([ph] * len(columns))})"
    return f"INSERT INTO {level.table} ({', '.join(columns)}) VALUES {', '.join([one] * rows)}"  # noqa: S608


def _raw(values: Sequence[Any]) -> dict[str, Any]:
    """A sample's raw columns by name (``CURRENT.names``) from its values in ``SAMPLE_COLUMNS`` order, tags and
    derived figures computed as the SQL of :data:`TAGS` and :data:`DERIVED` computes them."""
    get = dict(zip(SAMPLE_COLUMNS, values, strict=True))
    raw = {c: get[c] for c in (*CURRENT.ident, *_COUNTED, "canary_ok", *STORED)}
    raw |= {"cached": int(is_cached(get["provider_cached_tokens"])), "cold": int(get["cold"])}
    raw |= {"ttft_net_ms": corrected_ttft(get["ttft_ms"], get["net_rtt_ms"])}
    return raw | {"e2e500_ms": e2e500(get["ttft_ms"], get["ttfat_ms"], get["output_speed"])}


def add(conn: Connection, ph: str, values: Sequence[Any]) -> None:
    """Count a sample just inserted (its values in ``SAMPLE_COLUMNS`` order), in the insert's transaction."""
    if not values[_PUBLISHED]:
        return
    raw = _raw(values)
    one = _first_row(raw, CURRENT)
    one.add(raw)
    for level in LEVELS:
        conflict = f"ON CONFLICT ({', '.join(level.key)}) DO UPDATE SET {upsert_set(level.table, CURRENT)}"
        conn.execute(f"{_insert(level, ph)} {conflict}", one.row(_key(raw, level, CURRENT)))


def fold(raws: Iterable[Raw], level: RollupLevel = HOURS, shape: Shape = CURRENT) -> dict[tuple[Any, ...], _Row]:
    """Samples (the shape's raw columns by name) grouped into a level's rollup rows."""
    rows: dict[tuple[Any, ...], _Row] = {}
    for raw in raws:
        key = _key(raw, level, shape)
        row = rows.get(key)
        if row is None:
            row = rows[key] = _first_row(raw, shape)
        row.add(raw)
    return rows


def rebuild(
    conn: Connection, ph: str, levels: Sequence[RollupLevel] = LEVELS, batch: int = 500, shape: Shape = CURRENT
) -> None:
    """Recompute the levels' rollups from ``samples``, a day of samples at a time (whole hours and a whole day)."""
    for level in levels:
        conn.execute(f"DELETE FROM {level.table}")  # noqa: S608
    published = "FROM samples WHERE published = 1"
    nxt = f"SELECT MIN(started_at) {published} AND started_at >= {ph}"
    day = f"SELECT {shape.raw} {published} AND started_at >= {ph} AND started_at < {ph}"
    at = conn.execute(f"SELECT MIN(started_at) {published}").fetchone()[0]
    while at is not None:
        start = float(day_of(at) * DAY)
        end = start + DAY
        raws = [dict(zip(shape.names, r, strict=True)) for r in conn.execute(day, (start, end)).fetchall()]
        for level in levels:
            folded = fold(raws, level, shape)
            if level is levels[0] and (skipped := sum(r.skipped for r in folded.values())):
                log.warning("%d values no measurement can produce left out of the rollups", skipped)
            rows = [r.row(k) for k, r in folded.items()]
            for i in range(0, len(rows), batch):
                chunk = rows[i : i + batch]
                conn.execute(_insert(level, ph, len(chunk), shape), [v for r in chunk for v in r])
        at = conn.execute(nxt, (end,)).fetchone()[0]


def recreate(conn: Connection, ph: str, *, shape: Shape) -> None:
    """Every level dropped, made again in a shape and rebuilt from ``samples`` (migrations 10, 13 and 18)."""
    for level in LEVELS:
        conn.execute(f"DROP TABLE {level.table}")
        for sql in level.schema(shape):
            conn.execute(sql)
    rebuild(conn, ph, shape=shape)
