"""A load test's result document: what ``tokenpace bench`` writes, and what its report and ``compare`` read.

One document per bench command: one point for a single load level, one point per level for a sweep. Every
figure is derived (measure/loadstats.py) from samples that are also stored in the database under the point's
``run_id``; the document adds, per point, a bounded list of per-request rows for the report's charts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tokenpace.config.load import Load, Slo
from tokenpace.measure.loadstats import Figures

MAX_ROWS = 20_000  # per-request rows kept per point (the charts' dots); figures always cover every request


@dataclass(frozen=True, slots=True)
class Row:
    """One measured request, for charts: seconds since the point began, TTFT, E2E (ms), tokens out, ok, tag."""

    t_s: float
    ttft_ms: float | None
    e2e_ms: float
    output_tokens: int
    ok: bool
    tag: str = ""


@dataclass(frozen=True, slots=True)
class Point:
    """One load level: how it was loaded, its figures, and the client's health while it ran."""

    load: Load
    figures: Figures
    run_id: str
    client_bound: bool = False
    cpu_us_per_event: float | None = None
    loop_lag_p99_ms: float | None = None
    rows: tuple[Row, ...] = ()


@dataclass(frozen=True, slots=True)
class BenchResult:
    """One bench command's result: what was measured, against which endpoint, and its points."""

    endpoint: str  # the endpoint's name (provider/model or provider:plan/model); never its URL or key
    model: str
    protocol: str
    dataset: str
    started_at: str  # ISO 8601, UTC
    tool_version: str
    command: str  # as stored with the runs: header values and the database password masked
    slo: Slo | None = None
    sweep: str | None = None  # "concurrency", "rate", "auto" or None for one level
    saturation: float | None = None  # auto sweep: the highest rate the endpoint kept up with
    points: tuple[Point, ...] = field(default_factory=tuple)
