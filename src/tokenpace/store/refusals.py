"""Records a database could refuse: every value made storable before writing, and a rescue file for the rest.

A server's bytes reach the store (model names, error messages, usage counts), and one value the database
refuses keeps the whole record out. PostgreSQL takes no NUL in text and no integer beyond 32 bits in an INTEGER
column; neither database takes a lone surrogate; SQLite takes an infinite float in an INTEGER column, which
poisons every SUM over it later. So before a write, NUL becomes U+FFFD and a lone surrogate "?" in every text
(the timeline's JSON escapes included), a non-finite float becomes NULL, so does a figure no measurement can
produce (measure/bounds.py: the database refuses it since migration 14), and an integer outside PostgreSQL's
INTEGER range becomes NULL (or the nearest bound, in a NOT NULL column). Both databases then hold the same
values, and the timeline's JSON keeps the usage counts the provider sent, as sent.

A record refused all the same for its data (a constraint, a value), which no retry can fix, is appended to a
rescue file (JSON Lines, one ``{"refused": why, "sample" | "run": record}`` per line) rather than waiting in
``Store.unsaved`` for ever, where it would hold ``/health`` at 503.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from tokenpace.measure.bounds import BOUNDS, within
from tokenpace.measure.sample import RunRecord, Sample
from tokenpace.store.columns import sample_values

INT_MIN, INT_MAX = -(2**31), 2**31 - 1  # PostgreSQL's INTEGER: the narrower of the two databases
RESCUE_NAME = "tokenpace-rescued.jsonl"
# Column types as the migrations declare them; every other column is TEXT.
_NULLABLE_INTEGERS = {"http_status", "provider_input_tokens", "provider_output_tokens", "token_diff", "input_tokens"}
_NULLABLE_INTEGERS |= {"seed", "job_seq", "provider_cached_tokens", "canary_ok", "prefix_turn"}
_INTEGERS = _NULLABLE_INTEGERS | {"simulated", "ok", "chunk_count", "output_tokens", "reasoning_tokens"}
_INTEGERS |= {"first_chunk_tokens", "image_bytes", "image_pixels", "published", "client_bound"}
_INTEGERS |= {"concurrency", "requested", "completed", "cold"}
_REALS = {"started_at", "finished_at", "ttft_ms", "ttfb_ms", "connect_ms", "ttfat_ms", "output_speed", "e2e_ms"}
_REALS |= {"net_connect_ms", "net_tls_ms", "net_rtt_ms", "idle_s", "client_lag_ms", "retry_after_s"}
_REALS |= {"t100_ms", "gap_p50_ms", "gap_p95_ms", "gap_max_ms", "loop_lag_p50_ms", "loop_lag_p99_ms"}
_REALS |= {"loop_lag_max_ms", "cpu_us_per_event", "copy_ratio"}
_JSON_NUL = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")  # an escaped NUL, not an escaped backslash before "u0000"
# Refusals that name the record, not the database: a retry of the same values fails the same way.
_DATA_ERRORS: tuple[type[Exception], ...] = (sqlite3.DataError, sqlite3.IntegrityError, ValueError, TypeError)
_DATA_ERRORS += (OverflowError,)


def column_types() -> dict[str, str]:
    """Each non-TEXT column's declared type (both tables), as the sanitiser assumes it: checked by the tests."""
    return {c: "INTEGER" for c in _INTEGERS} | {c: "DOUBLE PRECISION" for c in _REALS}


def text(value: str) -> str:
    """The text with NUL as U+FFFD and each lone surrogate as "?": what both databases take."""
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    try:
        value.encode()
    except UnicodeEncodeError:
        value = value.encode(errors="replace").decode()
    return value


def _integer(value: Any, nullable: bool) -> Any:
    """An int within INTEGER's range; else None (nullable) or the nearest bound (a NOT NULL column)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        if INT_MIN <= value <= INT_MAX:
            return value
        return None if nullable else min(max(value, INT_MIN), INT_MAX)
    if isinstance(value, float) and math.isinf(value) and not nullable:
        return INT_MAX if value > 0 else INT_MIN
    return None  # a fraction, NaN, text: a NOT NULL column refuses it, and the record is rescued


def _real(value: Any) -> Any:
    """A finite float, else None."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:  # an int beyond any double
            return None
        return number if math.isfinite(number) else None
    return None


def storable(columns: Sequence[str], row: Sequence[Any]) -> tuple[tuple[Any, ...], list[str]]:
    """The row as its columns can hold it, and the names of the columns whose value had to change."""
    out: list[Any] = []
    changed: list[str] = []
    for column, value in zip(columns, row, strict=True):
        new = value
        if value is None:
            pass
        elif column in _INTEGERS:
            new = _integer(value, column in _NULLABLE_INTEGERS)
        elif column in _REALS:
            new = _real(value)
            if new is not None and column in BOUNDS and not within(column, new):  # the database refuses it
                new = None
        elif isinstance(value, str):
            new = text(value)
            if column == "timeline" and "\\u0000" in new:  # json.dumps escapes NUL; decoded, it is NUL again
                new = _JSON_NUL.sub(r"\1\\ufffd", new)
        if not _same(value, new):
            changed.append(column)
        out.append(new)
    return tuple(out), changed


def _same(old: Any, new: Any) -> bool:
    """Whether a value is unchanged, or a number changed only its type (True -> 1, 12.0 -> 12, 3 -> 3.0)."""
    if old is new:
        return True
    numbers = (int, float)
    comparable = (isinstance(old, numbers) and isinstance(new, numbers)) or type(old) is type(new)
    return comparable and bool(old == new)


def is_data_error(exc: BaseException, driver: tuple[type[Exception], ...] = ()) -> bool:
    """Whether the database refused the record for its values (retrying cannot help), not for its own state."""
    return isinstance(exc, (*_DATA_ERRORS, *driver))


def default_rescue_path(db_file: Path | None) -> Path:
    """Beside a SQLite file (``NAME-rescued.jsonl``); the working directory's ``tokenpace-rescued.jsonl`` else."""
    if db_file is None:
        return Path(RESCUE_NAME).absolute()
    return db_file.absolute().with_name(f"{db_file.stem}-rescued.jsonl")


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def rescue(path: Path, record: Sample | RunRecord, why: str) -> None:
    """Append the record and why it was refused to the rescue file; ASCII JSON, so any text can be written."""
    if isinstance(record, Sample):
        # Every column, hidden ones too (the file stays beside the database): the record, whole, to put back.
        values = sample_values(record)
        doc: dict[str, Any] = {"refused": why, "sample": values | {"timeline": json.loads(values["timeline"])}}
    else:
        doc = {"refused": why, "run": dataclasses.asdict(record)}
    line = json.dumps(doc, default=_plain)
    with path.open("a", encoding="ascii") as f:
        f.write(line + "\n")
