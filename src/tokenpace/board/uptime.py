"""An endpoint's outcomes hour by hour: the uptime strip of its page.

Every published sample counts here, whatever its outcome (the board's figures use successful ones only), and
an hour with no sample is shown as such rather than as up or down: a strip of the window's every hour, oldest
first, so a provider's outage reads as a run of red hours, and a gap in sampling as a run of empty ones.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.stats import commonest, success_rate
from tokenpace.store.rollup import HOUR, UNKNOWN, hour_of
from tokenpace.store.series import SamplePoint


@dataclass(frozen=True, slots=True)
class Hour:
    """One hour's published samples: how many, how many succeeded, the failures by kind (commonest first), and
    the success rate as everywhere (stats.success_rate: None for an hour with nothing judged)."""

    start: datetime
    samples: int
    ok: int
    errors: tuple[tuple[str, int], ...]
    success_rate: float | None

    @property
    def state(self) -> str:
        """For the strip's colour: empty, up (every judged sample ok), degraded (half or more) or down."""
        rate = self.success_rate
        return "empty" if rate is None else "up" if rate == 1 else "degraded" if rate >= 0.5 else "down"


def hour_by_hour(points: Iterable[SamplePoint], now: datetime, span_s: float) -> list[Hour]:
    """Every hour from the one holding ``now - span_s`` to the one holding ``now``, with its published samples."""
    first, last = hour_of(now.timestamp() - span_s), hour_of(now.timestamp())
    counts: dict[int, list[int]] = {}
    kinds: dict[int, Counter[str]] = {}
    for p in points:
        h = hour_of(p.started_at.timestamp())
        if not p.published or not first <= h <= last:
            continue
        tally = counts.setdefault(h, [0, 0])
        tally[0] += 1
        tally[1] += p.ok
        if not p.ok:
            kinds.setdefault(h, Counter())[p.error_kind or UNKNOWN] += 1
    hours = []
    for h in range(first, last + 1):
        samples, ok = counts.get(h, (0, 0))
        errors = commonest(kinds.get(h, {}))
        rate = success_rate(ok, samples, dict(errors).get(ErrorKind.CANCELLED.value, 0))
        hours.append(Hour(datetime.fromtimestamp(h * HOUR, UTC), samples, ok, errors, rate))
    return hours
