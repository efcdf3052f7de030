"""The client-bound verdict per figure: given each timestamp's lag bound, which figures are flagged."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tokenpace.measure.timing import Event, EventKind, Timeline
from tokenpace.measure.verdict import NONE, Bound, Stamps, judge_figures, moved, stamps, tolerance_ms

MS = 1_000_000


def test_the_tolerance_is_one_percent_or_two_ms_whichever_is_larger() -> None:
    assert tolerance_ms(50.0) == 2.0 and tolerance_ms(200.0) == 2.0
    assert tolerance_ms(4500.0) == pytest.approx(45.0)
    assert not moved(2.0, 150.0) and moved(2.01, 150.0)
    assert not moved(44.9, 4500.0) and moved(45.1, 4500.0)


def lags(at: dict[int, float]) -> Callable[[int], float]:
    """A lag lookup from timestamps to bounds (ms); a timestamp not listed was on time."""
    return lambda t: at.get(t, 0.0)


S = Stamps(sent=0, first=150 * MS, last=4150 * MS, end=4200 * MS)  # TTFT 150 ms, speed over 4 s, E2E 4.2 s


@pytest.mark.parametrize(
    ("at", "flagged"),
    [
        ({}, NONE),
        ({S.first: 2.0, S.last: 2.0, S.end: 2.0}, NONE),  # within 2 ms: every figure kept
        ({S.first: 5.0}, Bound.TTFT),  # 5 ms on a 150 ms TTFT: 3 %; on a 4 s span 0.1 %: speed kept
        ({S.first: 45.0}, Bound.TTFT | Bound.SPEED),  # over 1 % of the 4 s span too
        ({S.last: 45.0}, Bound.SPEED),  # the last token late: speed only (the end was on time)
        ({S.end: 41.0}, NONE),  # under 1 % of 4.2 s
        ({S.end: 43.0}, Bound.E2E),
        ({S.sent: 500.0}, NONE),  # a late write moves nothing: every figure's clock starts at it
    ],
)
def test_each_figure_is_judged_by_the_lag_at_its_own_timestamps(at: dict[int, float], flagged: Bound) -> None:
    verdict = judge_figures(S, lags(at))
    assert verdict.bound == flagged
    assert verdict.lag_ms == max((v for t, v in at.items() if t != S.sent), default=0.0)


def test_a_figure_not_measured_is_never_flagged() -> None:
    failed = Stamps(sent=0, first=None, last=None, end=30 * MS)  # no token: only an end
    assert judge_figures(failed, lambda t: 100.0).bound == Bound.E2E
    one_chunk = Stamps(sent=0, first=10 * MS, last=None, end=12 * MS)  # one chunk: no speed
    assert judge_figures(one_chunk, lambda t: 100.0).bound == Bound.TTFT | Bound.E2E


def test_the_stamps_are_the_metrics_own_moments() -> None:
    """First and last token-bearing chunks (events read together are one), not role or usage events."""
    events = (
        Event(5 * MS, EventKind.OTHER),
        Event(150 * MS, EventKind.CONTENT, "a"),
        Event(150 * MS, EventKind.CONTENT, "b"),
        Event(300 * MS, EventKind.CONTENT, "c"),
        Event(310 * MS, EventKind.USAGE),
    )
    timeline = Timeline(t_sent_ns=1 * MS, t_headers_ns=4 * MS, t_end_ns=320 * MS, events=events)
    assert stamps(timeline) == Stamps(sent=1 * MS, first=150 * MS, last=300 * MS, end=320 * MS)
