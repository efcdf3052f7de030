"""Samples to files: CSV for spreadsheets, JSON Lines (with the raw timeline) for re-analysis."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tokenpace.errors import ConfigError
from tokenpace.measure.sample import Sample, sample_row

SAMPLE_FORMATS = (".csv", ".jsonl")


def jsonl_row(sample: Sample) -> dict[str, Any]:
    """The sample as a JSON Lines record: its flat row plus the decoded timeline."""
    return {**sample_row(sample), "timeline": json.loads(sample.timeline.to_json())}


def write_samples(path: Path, samples: Sequence[Sample]) -> None:
    """Write by extension: ``.csv`` (flat rows) or ``.jsonl`` (rows plus the decoded timeline)."""
    suffix = path.suffix.lower()
    if suffix not in SAMPLE_FORMATS:
        raise ConfigError(f"--output {path}: use a file name ending in .csv or .jsonl")
    # A lone surrogate (JSON lets a server send one) cannot be UTF-8: it is written as "?", not raised.
    with path.open("w", newline="", encoding="utf-8", errors="replace") as f:
        if suffix == ".csv":
            rows = [sample_row(s) for s in samples]
            writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["id"])
            writer.writeheader()
            writer.writerows(rows)
        else:
            for s in samples:
                f.write(json.dumps(jsonl_row(s), ensure_ascii=False) + "\n")
