"""Figures over many samples: how many values, their mean and percentiles, and the success rate.

The one vocabulary of both places that aggregate samples: a run's summary (``board.summary``, in Python over
the samples at hand) and the leaderboard's rolling windows (``store.windows``, in SQL over the database), so
both report the same fields and judge success by the same formula. Pure; the lowest layer both import.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from tokenpace.measure.metrics import percentile_sorted

QUANTILES = (5, 25, 50, 75, 95)  # Figure's percentiles, in its field order


@dataclass(frozen=True, slots=True)
class Figure:
    """One metric over a set of successful samples: how many values, their mean and percentiles (None: no values)."""

    n: int
    mean: float | None = None
    p5: float | None = None
    p25: float | None = None
    p50: float | None = None
    p75: float | None = None
    p95: float | None = None

    def headline(self, statistic: str) -> float | None:
        """The headline of a window or summary: the mean for "mean", else the median (P50)."""
        return self.mean if statistic == "mean" else self.p50


def figure(values: Sequence[float]) -> Figure:
    """n, mean and each of QUANTILES (metrics.percentile) of the values; all but n None when there are none."""
    return figure_sorted(sorted(values))


def figure_sorted(ordered: Sequence[float]) -> Figure:
    """:func:`figure` of values already in ascending order (metrics.percentile_sorted: no copy sorted again)."""
    if not ordered:
        return Figure(0)
    return Figure(len(ordered), statistics.fmean(ordered), *(percentile_sorted(ordered, q) for q in QUANTILES))


def success_rate(ok: int, samples: int, cancelled: int) -> float | None:
    """Success rate = ok / (samples - cancelled); None when nothing was judged."""
    # A sample the client cancelled (Ctrl-C, shutdown) says nothing of the endpoint, so it is no verdict.
    judged = samples - cancelled
    return ok / judged if judged else None
