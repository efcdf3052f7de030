"""Requests released together (the parallel workload's bursts of 10): how an endpoint served each burst.

One request's speed says how fast a stream runs; a burst says what the endpoint delivers to ten at once
(aggregate throughput) and how evenly it admits them (the spread of their TTFTs: a server that queues
requests serves the last one seconds after the first). Pure: a run's samples (sample_member) and a page's chart
points (point_member) become the same members.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tokenpace.measure.sample import Sample
from tokenpace.measure.stats import Figure, figure
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
