"""Samples to files: CSV for spreadsheets, JSON Lines (with the raw timeline) for re-analysis."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path

from tokenpace.errors import ConfigError
from tokenpace.sample import Sample, sample_row

SAMPLE_FORMATS = (".csv", ".jsonl")


def write_samples(path: Path, samples: Sequence[Sample]) -> None:
    """Write by extension: ``.csv`` (flat rows) or ``.jsonl`` (rows plus the decoded timeline)."""
    suffix = path.suffix.lower()
    if suffix not in SAMPLE_FORMATS:
        raise ConfigError(f"--output {path}: use a file name ending in .csv or .jsonl")
    with path.open("w", newline="", encoding="utf-8") as f:
        if suffix == ".csv":
            rows = [sample_row(s) for s in samples]
            writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["id"])
            writer.writeheader()
            writer.writerows(rows)
        else:
            for s in samples:
                row = {**sample_row(s), "timeline": json.loads(s.timeline.to_json())}
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
