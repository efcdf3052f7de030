"""The board's windows: the trailing spans of time it reads, and the statistic that is each one's headline figure.

A window is the span (now - seconds, now]; long-context workloads may use a longer span (Artificial Analysis
measures its 100k workload over 14 days instead of 72 hours). The store reads a window (store/windows.py); the
board and the pages offer and explain them from here.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

EACH = "*"  # as a region: one row per (endpoint, region) rather than one filtered or pooled
RowKey = tuple[str, str, str, str]  # (provider, plan, model, workload): one row of a window, as caches key it


@dataclass(frozen=True, slots=True)
class Window:
    """A trailing span of time and the statistic that is its headline figure."""

    name: str
    seconds: int
    statistic: Literal["mean", "median"]
    label: str
    long_seconds: int | None = None  # the span for long-context workloads, when it differs

    def span(self, workload: str, long_workloads: Collection[str] = ()) -> int:
        """Seconds this window covers for a workload: long_seconds for a long one, if set, else seconds."""
        return self.long_seconds if self.long_seconds and workload in long_workloads else self.seconds


WINDOWS: dict[str, Window] = {
    w.name: w
    for w in (
        Window("24h", 24 * 3600, "mean", "24 h mean"),  # as TokenDyno's board
        Window("72h", 72 * 3600, "median", "72 h median", long_seconds=14 * 86_400),  # as Artificial Analysis
        Window("7d", 7 * 86_400, "median", "7 d median"),
    )
}
DEFAULT_WINDOW = "72h"
