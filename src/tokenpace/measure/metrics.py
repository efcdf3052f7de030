"""Speed figures derived from a :class:`~tokenpace.measure.timing.Timeline`: pure functions, one formula each.

Times are in milliseconds, speeds in tokens per second, tokens counted with o200k_base over whole texts.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tokenpace.measure.timing import Event, EventKind, Timeline
from tokenpace.prompts.tokens import count_tokens

NS_PER_MS = 1_000_000
ANSWER_TOKENS = 500  # the answer length of Artificial Analysis's end-to-end figure (its site's "500 output tokens")


@dataclass(frozen=True, slots=True)
class Metrics:
    """Every figure tokenpace reports for one sample; None where the stream cannot give it."""

    ttft_ms: float | None = None
    ttfb_ms: float | None = None
    connect_ms: float | None = None
    ttfat_ms: float | None = None
    output_speed: float | None = None
    e2e_ms: float | None = None
    t100_ms: float | None = None
    # ITL (inter-token latency: the wait between consecutive chunks) percentiles and its longest; "gap" is
    # the stored columns' name for it, kept so no database needs a migration
    gap_p50_ms: float | None = None
    gap_p95_ms: float | None = None
    gap_max_ms: float | None = None
    chunk_count: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    first_chunk_tokens: int = 0
    provider_input_tokens: int | None = None
    provider_output_tokens: int | None = None
    token_diff: int | None = None
    provider_cached_tokens: int | None = None  # input tokens the provider served from its prompt cache

    # Computed from the stored figures, not stored themselves: the rollups compute them alike (store/rollup.DERIVED).
    @property
    def thinking_ms(self) -> float | None:
        """:func:`thinking_time_ms` of this request; None without an answer token."""
        if self.ttft_ms is None or self.ttfat_ms is None:
            return None
        return thinking_time_ms(self.ttft_ms, self.ttfat_ms)

    @property
    def e2e500_ms(self) -> float | None:
        """:func:`e2e500` of this request."""
        return e2e500(self.ttft_ms, self.ttfat_ms, self.output_speed)


def percentile(values: Sequence[float], q: float) -> float | None:
    """q-th percentile (0-100) by linear interpolation between closest ranks (NumPy's default)."""
    return percentile_sorted(sorted(values), q)


def percentile_sorted(ordered: Sequence[float], q: float) -> float | None:
    """:func:`percentile` of values already in ascending order, without sorting a copy.

    With n values v[0] <= ... <= v[n-1]: pos = (n - 1) * q / 100, lo = floor(pos), hi = ceil(pos), and the
    percentile is v[lo] + (v[hi] - v[lo]) * (pos - lo); None when there are no values.
    """
    if not ordered:
        return None
    pos = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def ttft_ms(t_sent_ns: int, t_first_token_ns: int) -> float:
    """TTFT = time of the first token-bearing event - time the request was sent."""
    return (t_first_token_ns - t_sent_ns) / NS_PER_MS


def output_speed(total_tokens: int, first_chunk_tokens: int, t_first_ns: int, t_last_ns: int) -> float | None:
    """Output speed (Artificial Analysis) = (tokens - first-chunk tokens) / (t_last - t_first), tok/s."""
    if t_last_ns <= t_first_ns:
        return None
    return (total_tokens - first_chunk_tokens) / ((t_last_ns - t_first_ns) / 1e9)


def time_to_n_tokens_ms(ttft: float, speed: float, n: int = 100) -> float:
    """Time to n output tokens (Artificial Analysis) = TTFT + n / output speed."""
    return ttft + n / speed * 1000


def thinking_time_ms(ttft: float, ttfat: float) -> float:
    """Thinking time = time to the first answer token - TTFT, ms (0 where the first token is the answer's)."""
    return ttfat - ttft


def e2e_n_tokens_ms(ttft: float, thinking: float, speed: float, n: int = ANSWER_TOKENS) -> float:
    """End-to-end for n answer tokens (Artificial Analysis) = TTFT + thinking time + n / output speed, ms."""
    return ttft + thinking + n / speed * 1000


def e2e500(ttft: float | None, ttfat: float | None, speed: float | None) -> float | None:
    """One request's end-to-end for 500 answer tokens = TTFT + (TTFAT - TTFT) + 500 / output speed, ms.

    Its own thinking time, not an average's. None unless all three are known and speed > 0: the rollups' SQL
    (store/rollup.DERIVED) computes it with the same operations in the same order, so both give the same double.
    """
    if ttft is None or ttfat is None or speed is None or not speed > 0:
        return None
    return e2e_n_tokens_ms(ttft, thinking_time_ms(ttft, ttfat), speed)


def itl_ms(times_ns: Sequence[int]) -> list[float]:
    """ITL values = differences between consecutive chunk arrival times, in ms."""
    return [(b - a) / NS_PER_MS for a, b in itertools.pairwise(times_ns)]


def chunk_times(token_events: Iterable[Event]) -> list[int]:
    """Chunk arrival times = the distinct arrival times of token events, ascending (events read together are one)."""
    return sorted({e.t_ns for e in token_events})


def compute(timeline: Timeline) -> Metrics:
    """All metrics of one timeline; figures that need tokens stay None when none arrived."""
    t0 = timeline.t_sent_ns
    tokens = timeline.token_events
    # A chunk is what arrived at one moment: events read together (several in one network read) are one
    # chunk, as a client sees them; counting them apart would turn a burst into a fake speed.
    arrivals = chunk_times(tokens)
    reasoning = count_tokens(timeline.text(EventKind.REASONING))
    answer = count_tokens(timeline.text(EventKind.CONTENT, EventKind.TOOL_CALL))
    total = reasoning + answer
    usage = timeline.usage
    provider_out = usage.output_tokens if usage else None
    base = Metrics(
        ttfb_ms=None if timeline.t_headers_ns is None else (timeline.t_headers_ns - t0) / NS_PER_MS,
        connect_ms=None if timeline.connect_ns is None else timeline.connect_ns / NS_PER_MS,
        e2e_ms=(timeline.t_end_ns - t0) / NS_PER_MS,
        chunk_count=len(arrivals),
        output_tokens=total,
        reasoning_tokens=reasoning,
        provider_input_tokens=usage.input_tokens if usage else None,
        provider_output_tokens=provider_out,
        token_diff=None if provider_out is None else total - provider_out,
        provider_cached_tokens=usage.cached_tokens if usage else None,
    )
    if not tokens:
        return base
    first, last = arrivals[0], arrivals[-1]
    first_tokens = count_tokens("".join(e.text for e in tokens if e.t_ns == first))
    ttft = ttft_ms(t0, first)
    speed = output_speed(total, first_tokens, first, last) if len(arrivals) >= 2 else None
    answer_events = [e for e in tokens if e.kind is not EventKind.REASONING]
    itl = itl_ms(arrivals)
    return dataclasses.replace(
        base,
        ttft_ms=ttft,
        ttfat_ms=ttft_ms(t0, answer_events[0].t_ns) if answer_events else None,
        output_speed=speed,
        t100_ms=time_to_n_tokens_ms(ttft, speed) if speed else None,
        gap_p50_ms=percentile(itl, 50),
        gap_p95_ms=percentile(itl, 95),
        gap_max_ms=max(itl) if itl else None,
        first_chunk_tokens=first_tokens,
    )


def corrected_ttft(ttft_ms: float | None, rtt_ms: float | None) -> float | None:
    """TTFT - rtt: the first token's wait without one network round trip (None if either is unknown)."""
    if ttft_ms is None or rtt_ms is None:
        return None
    return ttft_ms - rtt_ms
