"""Figures and the success rate over many samples: one vocabulary for run summaries and windows."""

from __future__ import annotations

import math

import pytest

from tests.measure.test_metrics import MS
from tokenpace.measure.sample import Sample
from tokenpace.measure.stats import Figure, figure
from tokenpace.measure.timing import Event, EventKind, Timeline


def test_success_rate_leaves_out_what_the_client_cancelled() -> None:
    from datetime import UTC, datetime

    from tokenpace.board.summary import summarise
    from tokenpace.config.endpoints import Endpoint
    from tokenpace.measure.failures import ErrorKind, Failure
    from tokenpace.measure.sample import make_sample

    def sample(kind: ErrorKind | None) -> Sample:
        failure = None if kind is None else Failure(kind, "x")
        t = Timeline(0, 1, 2 * MS, (Event(MS, EventKind.CONTENT, " a"), Event(MS, EventKind.DONE)), failure=failure)
        return make_sample("r", Endpoint("p", "m", "http://x"), "1k", datetime.now(UTC), t)

    s = summarise("p/m", [sample(None), sample(None), sample(ErrorKind.RATE_LIMITED), sample(ErrorKind.CANCELLED)])
    assert s.success_rate == pytest.approx(2 / 3)
    assert s.errors == {"cancelled": 1, "rate_limited": 1}


def test_a_figure_and_the_success_rate_over_many_samples() -> None:
    import dataclasses

    from tokenpace.measure.stats import Figure, figure, success_rate

    assert figure([]) == Figure(0) and figure([]).headline("median") is None
    f = figure([4.0, 1.0, 3.0, 2.0, 5.0])
    half = 1.959963984540054 * (2.5**0.5) / (5**0.5)  # z · s / √n, s² = 2.5
    board = (5, 3.0, 1.2, 2.0, 3.0, 4.0, 4.8, 3 - half, 3 + half, 1.0, 5.0)
    assert dataclasses.astuple(f) == pytest.approx((*board, None, None, None))  # a load test's tail left unset
    assert f.headline("mean") == 3.0 and f.headline("median") == 3.0
    assert f.interval("mean") == pytest.approx((3 - half, 3 + half)) and f.interval("median") == (1.0, 5.0)
    assert figure([7.0]).interval("median") is None and figure([7.0]).interval("mean") is None
    same = figure([0.1 + 0.2] * 7)  # rounding could make Σx² - n·mean² a hair below zero: the interval is a point
    assert same.interval("mean") == pytest.approx((0.3, 0.3)) and same.interval("median") == (same.p50, same.p50)
    assert success_rate(2, 4, 1) == pytest.approx(2 / 3) and success_rate(0, 3, 0) == 0.0
    assert success_rate(0, 2, 2) is None  # every sample cancelled: nothing judged


def test_the_median_interval_is_the_textbook_one_and_covers_95_percent() -> None:
    """n = 100: the 40th and 61st values (Conover's table); over 2000 draws of 30 lognormal values the
    interval holds the true median about 95 % of the time (order statistics: at least, with rounding out)."""
    import math
    import random

    from tokenpace.measure.stats import median_interval

    assert median_interval([float(i) for i in range(1, 101)]) == (40.0, 61.0)
    rng = random.Random(7)
    true_median = math.exp(5.0)
    held = 0
    for _ in range(2000):
        lo, hi = median_interval(sorted(rng.lognormvariate(5.0, 0.5) for _ in range(30)))
        assert lo is not None and hi is not None
        held += lo <= true_median <= hi
    assert 0.94 <= held / 2000 <= 0.99


def test_a_quantile_interval_lies_between_order_statistics() -> None:
    from tokenpace.measure.stats import median_interval, quantile_interval

    values = [float(v) for v in range(1, 101)]
    assert quantile_interval(values, 0.99) == (97.0, 100.0)  # 99 -+ 1.96 x sqrt(0.99): ranks 97 to 101, clamped
    assert quantile_interval(values, 0.5) == median_interval(values) == (40.0, 61.0)
    assert quantile_interval([3.0], 0.5) == (None, None)


def test_a_share_interval_is_wilsons() -> None:
    from tokenpace.measure.stats import share_interval

    lo, hi = share_interval(0, 100) or (1.0, 0.0)
    assert lo == pytest.approx(0.0, abs=1e-12) and hi == pytest.approx(0.037, abs=5e-4)
    lo, hi = share_interval(20, 100) or (0.0, 0.0)
    assert lo == pytest.approx(0.1334, abs=5e-4) and hi == pytest.approx(0.2888, abs=5e-4)
    assert share_interval(0, 0) is None


def test_values_no_measurement_can_produce_are_left_out_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    """Issue 29: two output speeds of 1e300 made the mean raise OverflowError and the board answer 500."""
    found = figure([1e300, 1e300, math.inf, math.nan, -math.inf, 5.0, 7.0])
    assert (found.n, found.mean, found.p50) == (2, 6.0, 6.0)
    assert "5 values no measurement can produce left out" in caplog.text
    assert figure([math.inf]) == Figure(0)
    assert figure([-3.5, 2.0]).mean == -0.75  # a figure below zero (TTFT less the round trip) is one
