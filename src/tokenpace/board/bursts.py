"""Requests released together (the parallel workload's bursts of 10): how an endpoint served each burst.

One request's speed says how fast a stream runs; a burst says what the endpoint delivers to ten at once
(aggregate throughput) and how evenly it admits them (the spread of their TTFTs: a server that queues
requests serves the last one seconds after the first). Pure: a run's samples (sample_member) and a page's chart
points (point_member) become the same members.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tokenpace.measure.quantiles import Quantiles
from tokenpace.measure.sample import Sample
from tokenpace.measure.stats import Figure, figure, figure_of
from tokenpace.store.series import SamplePoint


@dataclass(frozen=True, slots=True)
class Member:
    """One request of a burst: when it started (epoch seconds), how long it took, what it produced."""

    started_s: float
    e2e_ms: float | None  # None: it ended without a response worth timing
    output_tokens: int
    ttft_ms: float | None  # None: no token arrived


def sample_member(s: Sample) -> tuple[str | None, Member]:
    """A run's sample as a member of its burst, with the burst's group id (None: released alone)."""
    m = s.metrics
    return s.group_id, Member(s.started_at.timestamp(), m.e2e_ms, m.output_tokens, m.ttft_ms)


def point_member(p: SamplePoint) -> tuple[str | None, Member]:
    """A chart's point as a member of its burst, with the burst's group id (None: released alone)."""
    return p.group_id, Member(p.started_at.timestamp(), p.e2e_ms, p.output_tokens or 0, p.ttft_ms)


def aggregate_speed(members: Sequence[Member]) -> float | None:
    """Aggregate output speed of a burst = Σ output tokens / (last end - first start), tok/s."""
    if not members:
        return None
    start = min(m.started_s for m in members)
    end = max(m.started_s + (m.e2e_ms or 0) / 1000 for m in members)
    return sum(m.output_tokens for m in members) / (end - start) if end > start else None


def ttft_spread_ms(members: Sequence[Member]) -> float | None:
    """TTFT spread of a burst = max TTFT - min TTFT among its requests that produced a token, ms."""
    ttfts = [m.ttft_ms for m in members if m.ttft_ms is not None]
    return max(ttfts) - min(ttfts) if ttfts else None


@dataclass(frozen=True, slots=True)
class Bursts:
    """Figures over bursts: how many, their aggregate output speeds (tok/s) and TTFT spreads (ms)."""

    count: int
    speed: Figure
    ttft_spread: Figure


def bursts(groups: Mapping[str, Sequence[Member]]) -> Bursts | None:
    """Figures over the bursts given by group id; None when there are none."""
    if not groups:
        return None
    speeds = [v for g in groups.values() if (v := aggregate_speed(g)) is not None]
    spreads = [v for g in groups.values() if (v := ttft_spread_ms(g)) is not None]
    return Bursts(len(groups), figure(speeds), figure(spreads))


def grouped(members: Iterable[tuple[str | None, Member]]) -> dict[str, list[Member]]:
    """Members by group id; those without one (a request released alone) are left out."""
    out: dict[str, list[Member]] = {}
    for group, member in members:
        if group is not None:
            out.setdefault(group, []).append(member)
    return out


# Bursts whose members may still come, at most: past it the oldest is taken as whole (a run's closed loop has at
# most 4096 chains in flight, so a burst this many bursts old has ended).
OPEN_BURSTS = 10_000


@dataclass(slots=True)
class _Open:
    """A burst's members so far, as :func:`aggregate_speed` and :func:`ttft_spread_ms` read them."""

    members: int
    start: float
    end: float
    tokens: int
    ttft_lo: float | None
    ttft_hi: float | None


class BurstTally:
    """:func:`bursts` of members as they come: each burst's sums until it is whole (``size`` members; the last,
    and any left when the run stops, at :meth:`result`), then its two figures' values."""

    def __init__(self, size: int | None = None) -> None:
        self.size = size
        self.open: dict[str, _Open] = {}
        self.count = 0
        self.speeds, self.spreads = Quantiles(), Quantiles()

    def add(self, group: str | None, m: Member) -> None:
        if group is None:
            return
        end, ttft = m.started_s + (m.e2e_ms or 0) / 1000, m.ttft_ms
        if (b := self.open.get(group)) is None:
            self.count += 1
            b = self.open[group] = _Open(0, m.started_s, end, 0, ttft, ttft)
            if len(self.open) > OPEN_BURSTS:
                self._close(next(iter(self.open)))
        b.members, b.tokens = b.members + 1, b.tokens + m.output_tokens
        b.start, b.end = min(b.start, m.started_s), max(b.end, end)
        if ttft is not None:
            b.ttft_lo = ttft if b.ttft_lo is None else min(b.ttft_lo, ttft)
            b.ttft_hi = ttft if b.ttft_hi is None else max(b.ttft_hi, ttft)
        if b.members == self.size:
            self._close(group)

    def _close(self, group: str) -> None:
        b = self.open.pop(group)
        if b.end > b.start:  # aggregate_speed's formula
            self.speeds.add(b.tokens / (b.end - b.start))
        if b.ttft_lo is not None and b.ttft_hi is not None:  # ttft_spread_ms's
            self.spreads.add(b.ttft_hi - b.ttft_lo)

    def result(self) -> Bursts | None:
        """The figures over every burst so far, those still open taken as they are; None without any."""
        for group in list(self.open):
            self._close(group)
        return Bursts(self.count, figure_of(self.speeds), figure_of(self.spreads)) if self.count else None
