"""MLPerf's early stopping (measure/stats.py) against MLCommons' own reference values and LoadGen's formulas.

The reference values are those LoadGen's users check their ports by: find_min_passing(t=0, P99) = 459, (t=0,
P90) = 44, (t=1, P99) = 661 (so an estimate of P99 needs 662 requests, of P90 64), and over 10,000 values an
estimate of P99 that is the 77th largest. LoadGen's odds are written here independently, as it derives them:
BetaRegularized[q, h, 1 + t] through the Gauss hypergeometric function (DLMF 8.17.7 and 15.8.1), which for an
integer t is a finite sum; and its SingleStream search for t is replayed as it loops.
"""

from __future__ import annotations

import math
import random

import pytest

from tokenpace.measure.metrics import percentile_sorted
from tokenpace.measure.stats import (
    EarlyStop,
    binomial_cdf,
    early_stop,
    early_stopping_odds,
    highest_bounded,
    min_passing,
    overlatency,
)


def loadgen_odds(h: int, t: int, q: float) -> float:
    """BetaRegularized[q, h, 1 + t] = q^h (1-q)^t / (h B(h, 1+t)) 2F1(1, -t; 1+h; q/(q-1)): the series ends
    after t + 1 terms, (-t)_k / (1+h)_k zk."""
    z, term, total = q / (q - 1), 1.0, 1.0
    for k in range(t):
        term *= (-t + k) * z / (1 + h + k)
        total += term
    log_beta = math.lgamma(h) + math.lgamma(1 + t) - math.lgamma(h + 1 + t)
    return math.exp(h * math.log(q) + t * math.log1p(-q) - log_beta) / h * total


def loadgen_t(n: int, q: float) -> int:
    """LoadGen's SingleStream search, as it loops: t = 1 once n > h(1), then the first i >= 2 with n < h(i) + i
    gives t = i - 1."""
    if n < min_passing(1, q) + 1:
        return 0
    for i in range(2, n + 1):
        if n < min_passing(i, q) + i:
            return i - 1
    return 1


def test_the_minimum_queries_are_mlcommons_reference_values() -> None:
    assert min_passing(0, 0.99) == 459 == math.ceil(math.log(0.01) / math.log(0.99))
    assert min_passing(0, 0.90) == 44 and min_passing(0, 0.95) == 90
    assert min_passing(1, 0.99) == 661  # the SingleStream floor: an estimate of P99 needs 662 requests
    assert min_passing(1, 0.90) + 1 == 64
    assert [min_passing(t, 0.99) for t in range(6)] == sorted({min_passing(t, 0.99) for t in range(6)})


@pytest.mark.parametrize("q", [0.9, 0.95, 0.99])
@pytest.mark.parametrize("t", [0, 1, 2, 5, 20])
def test_the_odds_are_loadgens_incomplete_beta(q: float, t: int) -> None:
    for h in (1, 10, 100, 459, 661, 2000):
        assert early_stopping_odds(h, t, q) == pytest.approx(loadgen_odds(h, t, q), rel=1e-9, abs=1e-300)
    need = min_passing(t, q)
    assert loadgen_odds(need, t, q) <= 0.01 < loadgen_odds(need - 1, t, q)


@pytest.mark.parametrize("n", [0, 300, 661, 662, 663, 700, 1_000, 2_500])
def test_the_requests_over_the_bound_are_loadgens_singlestream_t(n: int) -> None:
    assert overlatency(n, 0.99) == loadgen_t(n, 0.99)


def test_the_estimate_of_p99_from_10000_values_is_their_77th_largest() -> None:
    values = [float(i) for i in range(10_000)]
    es = early_stop(values, 0.99)
    assert es == EarlyStop(0.99, 10_000, 662, 0.99, values[10_000 - 77], 77)
    empirical = percentile_sorted(values, 99)
    assert es.bound is not None and empirical is not None and es.bound >= empirical  # never under the empirical P99


def test_from_the_floor_the_estimate_is_the_largest_and_below_it_the_highest_percentile_bounded() -> None:
    at_floor = early_stop([float(i) for i in range(662)])
    assert (at_floor.bounded, at_floor.bound, at_floor.over) == (0.99, 661.0, 1)
    below = early_stop([float(i) for i in range(300)])
    assert below.bounded == 0.978 and below.bound == 299.0 and below.needed == 662
    # the largest of 300 bounds P97.8 (at most one of 300 above it is that unlikely) and not P97.9
    assert binomial_cdf(1, 300, 1 - 0.978) <= 0.01 < binomial_cdf(1, 300, 1 - 0.979)
    assert early_stop([1.0] * 10) == EarlyStop(0.99, 10, 662) and early_stop([]) == EarlyStop(0.99, 0, 662)
    # at the median, the chance of at most one of n above it is (n + 1) / 2^n: 12 / 2^11 <= 1 % < 11 / 2^10
    assert highest_bounded(11, 0.99) == 0.53 and highest_bounded(10, 0.99) is None


def test_bad_arguments_are_refused() -> None:
    for bad in ((1, 1.0, 0.99), (1, 0.0, 0.99), (1, 0.99, 1.0), (-1, 0.99, 0.99)):
        with pytest.raises(ValueError):
            min_passing(*bad)


@pytest.mark.parametrize(("n", "q"), [(700, 0.99), (300, 0.978)])
def test_the_bound_is_above_the_true_percentile_99_times_in_100(n: int, q: float) -> None:
    """Exponential latencies (true q-quantile -ln(1 - q)): over 2,000 runs of n the bound falls under the truth
    at most 1 % of the time (LoadGen's rule is conservative by one request, so it falls under it less)."""
    rng, truth, runs = random.Random(31), -math.log(1 - q), 2_000
    under = 0
    for _ in range(runs):
        es = early_stop(sorted(rng.expovariate(1.0) for _ in range(n)))
        assert es.bounded == q and es.bound is not None
        under += es.bound < truth
    assert under <= 0.01 * runs
