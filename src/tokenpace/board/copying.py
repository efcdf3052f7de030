"""Copy ratios on the board: each endpoint's median per workload over a window (measure/copying.py's figure).

A provider that drafts tokens by looking them up in the prompt streams an answer that copies its prompt faster
than one it has to generate. Beside its speed, the median share of its answers' 8-grams found in their prompts
says how much there was to copy: a fast endpoint whose answers copy much is fast on these prompts, not on every
prompt. Counted over published successful samples whatever their cache, cold or client-bound tags: it is about
the answer, not its timing.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

from tokenpace.board.pageparts import PageSource
from tokenpace.config.endpoints import endpoint_name
from tokenpace.config.windows import Window
from tokenpace.measure.metrics import percentile
from tokenpace.store.series import SamplePoint, copy_ratios

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class CopyMedian:
    """The median copy ratio of ``n`` samples (None when n is 0)."""

    median: float | None
    n: int

    def data(self) -> dict[str, Any]:
        return {"median": self.median, "n": self.n}


def medians(values: Iterable[tuple[K, float]]) -> dict[K, CopyMedian]:
    """Each key's median = percentile(its values, 50) and its n, keys in the order they first come."""
    found: dict[K, list[float]] = {}
    for key, value in values:
        found.setdefault(key, []).append(value)
    return {key: CopyMedian(percentile(vs, 50), len(vs)) for key, vs in found.items()}


def point_medians(points: Iterable[SamplePoint]) -> dict[str, CopyMedian]:
    """An endpoint page's medians per workload: its published successful points with a copy ratio."""
    return medians((p.workload, p.copy_ratio) for p in points if p.published and p.ok and p.copy_ratio is not None)


@dataclass(frozen=True, slots=True)
class CopyTable:
    """Every endpoint's median copy ratio per workload over one window: ``rows`` by endpoint name, in name order."""

    window: Window
    workloads: list[str]
    rows: dict[str, dict[str, CopyMedian]] = field(default_factory=dict)

    def data(self) -> dict[str, Any]:
        return {
            "window": self.window.name,
            "workloads": self.workloads,
            "rows": [
                {"endpoint": name, "medians": {w: m.data() for w, m in cells.items()}}
                for name, cells in self.rows.items()
            ],
        }


def copy_table(source: PageSource, window: Window) -> CopyTable:
    """The window's medians of every endpoint and workload, each workload over its own span (a long one's longer),
    in the board's order of workloads."""
    store, now, long = source.store, source.now(), source.long_workloads
    rows = [r for r in copy_ratios(store, since=now - timedelta(seconds=window.seconds)) if r[3] not in long]
    for w in long:
        rows += copy_ratios(store, since=now - timedelta(seconds=window.span(w, long)), workload=w)
    found = medians(((endpoint_name(p, plan, m), w), ratio) for p, plan, m, w, ratio in rows)
    workloads = source.ordered({w for _, w in found})
    table: dict[str, dict[str, CopyMedian]] = {}
    for name, w in sorted(found, key=lambda k: (k[0], workloads.index(k[1]))):
        table.setdefault(name, {})[w] = found[name, w]
    return CopyTable(window, workloads, table)
