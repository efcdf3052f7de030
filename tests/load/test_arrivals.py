"""Arrival schedules: each process's mean rate, its spread, and the same schedule from the same seed."""

from __future__ import annotations

import itertools
import statistics

import pytest

from tokenpace.load.arrivals import intervals, offsets


def first(n: int, *args: object, **kwargs: object) -> list[float]:
    return list(itertools.islice(intervals(*args, **kwargs), n))  # type: ignore[arg-type]


@pytest.mark.parametrize("arrival", ["poisson", "constant", "gamma"])
def test_mean_interval_is_one_over_the_rate(arrival: str) -> None:
    gaps = first(20_001, 8.0, arrival, 0.5, 3)[1:]
    assert gaps[0] >= 0 and statistics.fmean(gaps) == pytest.approx(1 / 8, rel=0.03)


def test_the_first_arrival_is_at_once() -> None:
    assert first(1, 5.0, "poisson") == [0.0]


def test_constant_is_exact_and_poisson_and_gamma_spread_as_their_shape_says() -> None:
    assert set(first(100, 4.0, "constant")[1:]) == {0.25}
    cv = {}
    for name, shape in (("poisson", 1.0), ("gamma-burst", 0.25), ("gamma-regular", 4.0)):
        gaps = first(20_001, 10.0, "poisson" if name == "poisson" else "gamma", shape, 7)[1:]
        cv[name] = statistics.stdev(gaps) / statistics.fmean(gaps)
    # coefficient of variation = 1 / sqrt(shape): 1, 2, 0.5
    assert cv == pytest.approx({"poisson": 1.0, "gamma-burst": 2.0, "gamma-regular": 0.5}, rel=0.06)


def test_same_seed_same_schedule_other_seed_another() -> None:
    assert first(50, 3.0, "poisson", 1.0, 9) == first(50, 3.0, "poisson", 1.0, 9)
    assert first(50, 3.0, "poisson", 1.0, 9) != first(50, 3.0, "poisson", 1.0, 10)


def test_offsets_stop_before_the_duration() -> None:
    times = offsets(10.0, "constant", duration_s=1.0)
    assert len(times) == 10 and times[0] == 0.0 and times[-1] == pytest.approx(0.9)
    assert all(b > a for a, b in itertools.pairwise(times))


def test_a_rate_or_shape_of_zero_is_refused() -> None:
    with pytest.raises(ValueError, match="more than 0"):
        first(1, 0.0)
    with pytest.raises(ValueError, match="more than 0"):
        first(1, 1.0, "gamma", 0.0)
