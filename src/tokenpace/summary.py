"""Summaries of a set of samples: P5 / P50 / P95 / mean per figure, success rate, errors by kind."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True, slots=True)
class Summary:
    endpoint: str
    samples: int
    ok: int
    errors: dict[str, int]
    figures: dict[str, Stat]

    @property
    def success_rate(self) -> float | None:
        """Success rate = successful samples / all samples."""
        return self.ok / self.samples if self.samples else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "samples": self.samples,
            "ok": self.ok,
            "success_rate": self.success_rate,
            "errors": self.errors,
            "figures": {
                name: {"count": s.count, "p5": s.p5, "p50": s.p50, "p95": s.p95, "mean": s.mean}
                for name, s in self.figures.items()
            },
        }


def summarise(endpoint: str, samples: Sequence[Sample]) -> Summary:
    """Figures over successful samples only; failures count towards the success rate and error counts."""
    ok = [s for s in samples if s.ok]
    figures = {}
    for name, _label, _unit in FIGURES:
        values = [v for s in ok if (v := getattr(s.metrics, name)) is not None]
        figures[name] = stat(values)
    errors = Counter(str(s.error_kind) for s in samples if not s.ok)
    return Summary(endpoint, len(samples), len(ok), dict(sorted(errors.items())), figures)
