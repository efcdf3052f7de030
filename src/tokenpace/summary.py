"""Summaries of a set of samples: P5 / P50 / P95 / mean per figure, success rate, errors by kind."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tokenpace.failures import ErrorKind
from tokenpace.metrics import percentile
from tokenpace.sample import Sample

# (field of Metrics, label, unit) in the order they are shown.
FIGURES: tuple[tuple[str, str, str], ...] = (
    ("ttft_ms", "TTFT", "ms"),
    ("output_speed", "Output speed", "tok/s"),
    ("e2e_ms", "End-to-end", "ms"),
    ("t100_ms", "Time to 100 tokens", "ms"),
    ("ttfb_ms", "Time to first byte", "ms"),
    ("gap_p95_ms", "Gap p95 (per request)", "ms"),
    ("gap_max_ms", "Gap max (per request)", "ms"),
    ("output_tokens", "Output tokens (o200k)", "tok"),
    ("token_diff", "o200k - provider tokens", "tok"),
)


@dataclass(frozen=True, slots=True)
class Stat:
    count: int
    p5: float | None
    p50: float | None
    p95: float | None
    mean: float | None


def stat(values: Sequence[float]) -> Stat:
    """Percentiles and mean of the values; every field None when there are none."""
    return Stat(
        count=len(values),
        p5=percentile(values, 5),
        p50=percentile(values, 50),
        p95=percentile(values, 95),
        mean=statistics.fmean(values) if values else None,
    )


def group_speed(samples: Sequence[Sample]) -> float | None:
    """Aggregate output speed of a group = sum of output tokens / (last end - first start), tok/s."""
    start = min(s.started_at.timestamp() for s in samples)
    end = max(s.started_at.timestamp() + (s.metrics.e2e_ms or 0) / 1000 for s in samples)
    return sum(s.metrics.output_tokens for s in samples) / (end - start) if end > start else None


def ttft_spread_ms(samples: Sequence[Sample]) -> float | None:
    """TTFT spread of a group = max TTFT - min TTFT among its requests that produced a token."""
    ttfts = [s.metrics.ttft_ms for s in samples if s.metrics.ttft_ms is not None]
    return max(ttfts) - min(ttfts) if ttfts else None


@dataclass(frozen=True, slots=True)
class Groups:
    """Requests released together (the parallel workload): how the endpoint served each burst."""

    count: int
    speed: Stat  # aggregate output tokens/s per group
    ttft_spread: Stat  # ms, per group

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "aggregate_output_speed": _stat_dict(self.speed),
                "ttft_spread_ms": _stat_dict(self.ttft_spread)}  # fmt: skip


def _stat_dict(s: Stat) -> dict[str, Any]:
    return {"count": s.count, "p5": s.p5, "p50": s.p50, "p95": s.p95, "mean": s.mean}


def groups(samples: Sequence[Sample]) -> Groups | None:
    """Figures per group of samples sharing a group id; None when no sample belongs to a group."""
    by_group: dict[str, list[Sample]] = {}
    for s in samples:
        if s.group_id is not None:
            by_group.setdefault(s.group_id, []).append(s)
    if not by_group:
        return None
    speeds = [v for g in by_group.values() if (v := group_speed(g)) is not None]
    spreads = [v for g in by_group.values() if (v := ttft_spread_ms(g)) is not None]
    return Groups(len(by_group), stat(speeds), stat(spreads))


@dataclass(frozen=True, slots=True)
class Summary:
    endpoint: str
    samples: int
    ok: int
    errors: dict[str, int]
    figures: dict[str, Stat]
    groups: Groups | None = None

    @property
    def success_rate(self) -> float | None:
        """Success rate = successful samples / (all samples - cancelled ones, which say nothing of the endpoint)."""
        judged = self.samples - self.errors.get(ErrorKind.CANCELLED.value, 0)
        return self.ok / judged if judged else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "samples": self.samples,
            "ok": self.ok,
            "success_rate": self.success_rate,
            "errors": self.errors,
            "figures": {name: _stat_dict(s) for name, s in self.figures.items()},
            "groups": None if self.groups is None else self.groups.as_dict(),
        }


def summarise(endpoint: str, samples: Sequence[Sample]) -> Summary:
    """Figures over successful samples only; failures count towards the success rate (cancelled ones apart)."""
    ok = [s for s in samples if s.ok]
    figures = {}
    for name, _label, _unit in FIGURES:
        values = [v for s in ok if (v := getattr(s.metrics, name)) is not None]
        figures[name] = stat(values)
    errors = Counter(str(s.error_kind) for s in samples if not s.ok)
    return Summary(endpoint, len(samples), len(ok), dict(sorted(errors.items())), figures, groups(samples))
