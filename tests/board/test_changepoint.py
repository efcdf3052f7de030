"""Change points: a step is found where it is, steady noise raises no alarm, too few samples say nothing."""

from __future__ import annotations

import math
import random

import pytest

from tokenpace.board.changepoint import (
    MIN_AFTER,
    MIN_BEFORE,
    mann_whitney_z,
    midranks,
    outcome_changes,
    step_fit,
    timing_changes,
    two_proportion_z,
)


def noisy(rng: random.Random, level: float, n: int, sigma: float = 0.25) -> list[float]:
    """Lognormal noise around ``level``: latencies' long right tail."""
    return [level * math.exp(rng.gauss(0, sigma)) for _ in range(n)]


def test_mann_whitney_z_matches_the_textbook_on_a_small_case() -> None:
    # before 1,2,3 and after 4,5: U = 6 (every pair), mean 3, sd sqrt(3*2*6/12) = sqrt(3)
    assert mann_whitney_z([1, 2, 3], [4, 5]) == pytest.approx(3 / math.sqrt(3))
    assert mann_whitney_z([4, 5, 6], [1, 2]) == pytest.approx(-3 / math.sqrt(3))
    assert midranks([10, 20, 20, 5]) == [2, 3.5, 3.5, 1]  # ties share their mean rank


def test_two_proportion_z_matches_the_textbook() -> None:
    # 9/10 then 5/10: pooled 0.7, se sqrt(0.21 * 0.2)
    assert two_proportion_z(9, 10, 5, 10) == pytest.approx(-0.4 / math.sqrt(0.21 * 0.2))
    assert two_proportion_z(10, 10, 10, 10) == 0.0  # every outcome alike: no evidence either way


@pytest.mark.parametrize("seed", range(20))
def test_a_step_down_is_found_at_the_first_slow_sample(seed: int) -> None:
    rng = random.Random(seed)
    values = noisy(rng, 300, 40, 0.1) + noisy(rng, 150, 12, 0.1)
    (split,) = timing_changes(values)
    assert split.index == 40
    assert split.before == pytest.approx(300, rel=0.1) and split.after == pytest.approx(150, rel=0.1)
    assert split.z < 0


def test_a_step_up_in_a_long_series_and_a_return_are_two_changes() -> None:
    rng = random.Random(7)
    values = noisy(rng, 100, 50, 0.1) + noisy(rng, 200, 40, 0.1) + noisy(rng, 100, 30, 0.1)
    assert [s.index for s in timing_changes(values)] == [50, 90]


def test_the_least_squares_step_places_a_short_recent_segment_where_it_starts() -> None:
    # Ranks alone would start it earlier when the last baseline samples happen to be low (seed 1 does that).
    rng = random.Random(1)
    values = noisy(rng, 300, 40, 0.1) + noisy(rng, 150, MIN_AFTER, 0.1)
    assert step_fit([math.log(v) for v in values]) == 40
    assert [s.index for s in timing_changes(values)] == [40]


@pytest.mark.parametrize("sigma", [0.1, 0.25, 0.4])
def test_steady_lognormal_noise_raises_no_alarm_across_many_seeds(sigma: float) -> None:
    alarms = [seed for seed in range(500) if timing_changes(noisy(random.Random(seed), 300, 96, sigma))]
    assert alarms == []


@pytest.mark.parametrize("failure_rate", [0.02, 0.05, 0.1])
def test_steady_random_failures_raise_no_alarm_across_many_seeds(failure_rate: float) -> None:
    def outcomes(seed: int) -> list[bool]:
        rng = random.Random(seed)
        return [rng.random() >= failure_rate for _ in range(96)]

    assert [seed for seed in range(500) if outcome_changes(outcomes(seed))] == []


def test_a_small_drift_is_no_change_however_significant() -> None:
    values = [100.0] * 40 + [110.0] * 40  # perfectly separated, but 10 % is under the 20 % that matters
    assert timing_changes(values) == []


def test_too_few_samples_on_either_side_find_nothing() -> None:
    assert timing_changes([300.0] * MIN_BEFORE + [100.0] * (MIN_AFTER - 1)) == []
    assert timing_changes([300.0] * (MIN_BEFORE - 1) + [100.0] * MIN_AFTER) == []
    assert timing_changes([]) == [] and outcome_changes([]) == []
    assert [s.index for s in timing_changes([300.0] * MIN_BEFORE + [100.0] * MIN_AFTER)] == [MIN_BEFORE]


def test_an_outage_is_a_success_rate_change_and_a_blip_is_not() -> None:
    (split,) = outcome_changes([True] * 30 + [False] * 10)
    assert (split.index, split.before, split.after) == (30, 1.0, 0.0)
    assert outcome_changes([True] * 30 + [False] * 3 + [True] * 10) == []
