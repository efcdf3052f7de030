"""Samples out, with the same columns everywhere (``columns.EXPORTED``): files for ``run --output`` (CSV for
spreadsheets, JSON Lines with the raw timeline for re-analysis) and rows for the web's ``/samples.csv``.

Every CSV tokenpace writes (these, ``/samples.csv`` and ``/leaderboard.csv``) goes through ``text.csv_row``: a
spreadsheet runs a text cell that begins with ``=`` as a formula.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenpace.errors import ConfigError
from tokenpace.measure.sample import Sample
from tokenpace.store.columns import EXPORTED, SAMPLE_COLUMNS, sample_from, sample_values
from tokenpace.store.database import Store
from tokenpace.text import csv_row

SAMPLE_FORMATS = (".csv", ".jsonl")
BATCH = 5000  # rows per query: memory stays flat however many samples there are
_STARTED, _ID = EXPORTED.index("started_at"), EXPORTED.index("id")


def export_row(sample: Sample) -> dict[str, Any]:
    """The sample as one flat record of the exported columns; the time in ISO 8601."""
    values = sample_values(sample)
    return {c: values[c] for c in EXPORTED} | {"started_at": sample.started_at.isoformat()}


def jsonl_row(sample: Sample) -> dict[str, Any]:
    """The sample as a JSON Lines record: its flat row plus the decoded timeline."""
    return {**export_row(sample), "timeline": json.loads(sample.timeline.to_json())}


def write_samples(path: Path, samples: Iterable[Sample]) -> None:
    """Write by extension: ``.csv`` (flat rows) or ``.jsonl`` (rows plus the decoded timeline)."""
    suffix = path.suffix.lower()
    if suffix not in SAMPLE_FORMATS:
        raise ConfigError(f"--output {path}: use a file name ending in .csv or .jsonl")
    # A lone surrogate (JSON lets a server send one) cannot be UTF-8: it is written as "?", not raised.
    with path.open("w", newline="", encoding="utf-8", errors="replace") as f:
        if suffix == ".csv":
            writer = csv.writer(f)
            writer.writerow(EXPORTED)  # the header even when there is no sample
            # Booleans as the database holds them (1/0), as /samples.csv writes them.
            rows = (export_row(s).values() for s in samples)
            writer.writerows(csv_row(int(v) if isinstance(v, bool) else v for v in row) for row in rows)
        else:
            for s in samples:
                f.write(json.dumps(jsonl_row(s), ensure_ascii=False) + "\n")


@dataclass(frozen=True, slots=True)
class Filter:
    """Which samples to read: equal to each value given; ``since`` in UTC epoch seconds, inclusive."""

    provider: str | None = None
    plan: str | None = None
    model: str | None = None
    workload: str | None = None
    since: float | None = None


def sample_batches(store: Store, where: Filter = Filter(), batch: int = BATCH) -> Iterator[list[tuple[Any, ...]]]:
    """The samples ``where`` picks, as rows of the exported columns, oldest first, ``batch`` rows per query.

    Read by (started_at, id) from where the last batch ended, so a long read never holds the store. Values are as
    stored: times in epoch seconds, booleans 0/1. The last batch holds fewer than ``batch`` rows, maybe none.
    """
    conditions, args = ["1 = 1"], list[Any]()
    for name in ("provider", "plan", "model", "workload"):  # column names from here, never from the caller
        if (value := getattr(where, name)) is not None:
            conditions.append(f"{name} = ?")
            args.append(value)
    if where.since is not None:
        conditions.append("started_at >= ?")
        args.append(where.since)
    sql = f"SELECT {', '.join(EXPORTED)} FROM samples WHERE {' AND '.join(conditions)}"  # noqa: S608
    sql += f" AND (started_at > ? OR (started_at = ? AND id > ?)) ORDER BY started_at, id LIMIT {int(batch)}"
    after: tuple[float, str] = (float("-inf"), "")
    while True:
        rows = store.query(sql, [*args, after[0], after[0], after[1]])
        yield rows
        if len(rows) < batch:
            return
        after = (rows[-1][_STARTED], rows[-1][_ID])


def run_samples(store: Store, run_id: str, batch: int = BATCH) -> Iterator[Sample]:
    """One run's samples, oldest first, read ``batch`` at a time by (started_at, id): a run of any size is
    written out (``run --output``) in the memory of one batch."""
    sql = f"SELECT {', '.join(SAMPLE_COLUMNS)} FROM samples WHERE run_id = ?"  # noqa: S608 (column names only)
    sql += f" AND (started_at > ? OR (started_at = ? AND id > ?)) ORDER BY started_at, id LIMIT {int(batch)}"
    started, key = SAMPLE_COLUMNS.index("started_at"), SAMPLE_COLUMNS.index("id")
    after: tuple[float, str] = (float("-inf"), "")
    while True:
        rows = store.query(sql, [run_id, after[0], after[0], after[1]])
        yield from (sample_from(dict(zip(SAMPLE_COLUMNS, r, strict=True))) for r in rows)
        if len(rows) < batch:
            return
        after = (rows[-1][started], rows[-1][key])
