"""How much of a window holds samples, and the window's name as a page shows it: "72 h median" once the samples
span (almost) all of it, "median over 8 min of 72 h" before. A 72 h label on a board of 8 minutes of samples says
what is not there; the board, the endpoint and model pages and the terminal all name a window by this."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tokenpace.board import numbers
from tokenpace.config.windows import Window
from tokenpace.store.database import epoch
from tokenpace.store.windows import EndpointRow

FULL_COVER = 0.95  # samples spanning this share of a window: it is named as the window itself


@dataclass(frozen=True, slots=True)
class Coverage:
    """A window and how much of it the rows' samples span: from the oldest first sample to now."""

    window: Window
    covered_s: float
    span_s: int  # the window's span for the rows' workloads (the 100k workload's is longer)
    empty: bool  # no rows: nothing to cover, and the page says so

    @property
    def text(self) -> str:
        """ "8 min of 72 h"."""
        return f"{numbers.duration(self.covered_s)} of {numbers.duration(self.span_s)}"

    @property
    def label(self) -> str:
        """The window's label where samples span FULL_COVER of it (or there are none), else what they span."""
        full = self.empty or self.covered_s >= FULL_COVER * self.span_s
        return self.window.label if full else f"{self.window.statistic} over {self.text}"

    def data(self) -> dict[str, Any]:
        return {"covered_s": self.covered_s, "span_s": self.span_s, "text": self.text, "label": self.label}


def coverage(window: Window, rows: Sequence[EndpointRow], now: datetime) -> Coverage:
    """covered = now - the oldest first sample of the rows, at most the longest span (0 without a sample)."""
    span = max((r.window_s for r in rows), default=window.seconds)
    ages = [min(r.window_s, epoch(now) - epoch(r.first_at)) for r in rows if r.first_at is not None]
    return Coverage(window, max(0.0, max(ages, default=0.0)), span, not rows)
