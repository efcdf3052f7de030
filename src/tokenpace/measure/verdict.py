"""The client-bound verdict: which of a sample's figures the client's own lateness could have moved too far.

Every timestamp is taken on the client's event loop, late by however long the loop was busy before it
(load/lag.py bounds that lateness per timestamp). A figure is flagged client-bound when the lateness of the
timestamps it is made of could move it by more than :func:`tolerance_ms` of itself, and only that figure is
left out of the board; the sample's other figures count. The timestamps each figure uses:

- TTFT: the first token's arrival (its clock starts at the write, whose timestamp is taken right after the
  bytes are handed to the socket: a late write delays the request and its start alike, and moves no figure,
  only the client's own wait before it, which no figure includes);
- output speed: the first and the last token's arrivals (their span, each end late by its own bound);
- end-to-end: the end of the stream.

The flags are bits (:class:`Bound`), stored in the sample's ``client_bound`` column; a figure not measured is
never flagged. The sample's lag bound (``client_lag_ms``, shown as "± N ms") is the largest bound of the
timestamps its figures use.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from tokenpace.measure.metrics import NS_PER_MS
from tokenpace.measure.timing import Timeline

TOLERANCE_SHARE = 0.01  # of the span a figure is made of
TOLERANCE_FLOOR_MS = 2.0  # below this no figure is flagged: the watch's own resolution is ~1 ms


class Bound(enum.IntFlag):
    """Figures of a sample flagged client-bound (0: none)."""

    TTFT = 1  # TTFT, and what is made of it: TTFT less the network round trip, a cold start's TTFT
    SPEED = 2  # output speed
    E2E = 4  # end-to-end time


NONE = Bound(0)
ALL = Bound.TTFT | Bound.SPEED | Bound.E2E  # what a sample flagged client-bound before issue 29 means
# Which flags leave each of the board's figures out, by its column's name. End-to-end for 500 tokens is made of a
# token's arrival early in the stream (the first answer token's, judged as the first token's) and the output speed.
FIGURE_BOUND = {
    "ttft_ms": Bound.TTFT,
    "ttft_net_ms": Bound.TTFT,
    "output_speed": Bound.SPEED,
    "e2e_ms": Bound.E2E,
    "e2e500_ms": Bound.TTFT | Bound.SPEED,
}


def tolerance_ms(span_ms: float) -> float:
    """Tolerance = max(1 % of the span, 2 ms): the most a figure's timestamps may be late and it still count."""
    return max(TOLERANCE_SHARE * span_ms, TOLERANCE_FLOOR_MS)


def moved(lag_ms: float, span_ms: float) -> bool:
    """Flagged = lag > tolerance_ms(span): the lateness could move a span of span_ms by more than allowed."""
    return lag_ms > tolerance_ms(span_ms)


@dataclass(frozen=True, slots=True)
class FigureVerdict:
    """Which figures are flagged, and the sample's lag bound: the largest of its timestamps' (ms)."""

    bound: Bound
    lag_ms: float


@dataclass(frozen=True, slots=True)
class Stamps:
    """The moments a sample's figures are made of, ns on the client's clock (None: not measured)."""

    sent: int
    first: int | None  # the first token-bearing chunk's arrival
    last: int | None  # the last one's (None with fewer than two chunks: no speed)
    end: int


def stamps(timeline: Timeline) -> Stamps:
    """The timeline's write, first and last token chunks and end (metrics.compute's very moments).

    The earliest and latest token arrivals are chunk_times' ends: one pass, not its sort, because this runs
    beside metrics.compute on the decoder thread for every stream, 800k events long or more.
    """
    times = [e.t_ns for e in timeline.events if e.is_token]
    if not times:
        return Stamps(timeline.t_sent_ns, None, None, timeline.t_end_ns)
    first, last = min(times), max(times)
    return Stamps(timeline.t_sent_ns, first, last if last != first else None, timeline.t_end_ns)


def judge_figures(s: Stamps, lag_at: Callable[[int], float]) -> FigureVerdict:
    """Each figure flagged when moved(lag of its timestamps, its span); ``lag_at(t_ns)``: a timestamp's bound, ms.

    TTFT: moved(lag(first), first - sent); speed: moved(max(lag(first), lag(last)), last - first), its two ends
    late apart; end-to-end: moved(lag(end), end - sent).
    """
    lags = {t: lag_at(t) for t in (s.first, s.last, s.end) if t is not None}
    bound = NONE
    if s.first is not None and moved(lags[s.first], (s.first - s.sent) / NS_PER_MS):
        bound |= Bound.TTFT
    if (
        s.first is not None
        and s.last is not None
        and moved(max(lags[s.first], lags[s.last]), (s.last - s.first) / NS_PER_MS)
    ):
        bound |= Bound.SPEED
    if moved(lags[s.end], (s.end - s.sent) / NS_PER_MS):
        bound |= Bound.E2E
    return FigureVerdict(bound, max(lags.values()))
