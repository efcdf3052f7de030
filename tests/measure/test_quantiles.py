"""Percentiles of a stream in bounded memory (measure/quantiles.py): exact while the values fit, within the stated
relative error past that, exact in the tail the top values cover, and mergeable."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from tokenpace.measure.metrics import percentile, percentile_sorted
from tokenpace.measure.quantiles import MIN_MAGNITUDE, RELATIVE_ERROR, Quantiles, bucket_of, bucket_value
from tokenpace.measure.stats import early_stop, figure, figure_of

QS = [0, 1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9, 100]


def fed(values: list[float], exact: int = 1_000, top: int = 100) -> Quantiles:
    q = Quantiles(exact, top)
    q.extend(values)
    return q


def within(estimate: float, ordered: list[float], q: float) -> bool:
    """The sketch's promise at percentile q: within RELATIVE_ERROR of the values either side of its position
    (the exact percentile interpolates between them), and never beyond the exact min and max."""
    pos = (len(ordered) - 1) * q / 100
    below, above = ordered[math.floor(pos)], ordered[math.ceil(pos)]
    slack = RELATIVE_ERROR * max(abs(below), abs(above)) + MIN_MAGNITUDE
    return below - slack <= estimate <= above + slack and ordered[0] <= estimate <= ordered[-1]


def test_every_percentile_is_exact_while_the_values_fit() -> None:
    rng = random.Random(1)
    values = [rng.lognormvariate(5, 1) for _ in range(1_000)]
    q = fed(values)
    assert q.exact and q.held() == 1_000
    assert [percentile_sorted(q.ordered(), x) for x in QS] == [percentile(values, x) for x in QS]
    assert figure_of(q) == figure(values) and q.mean() == statistics.fmean(values)


@pytest.mark.parametrize(
    "draw",
    [
        lambda rng: rng.lognormvariate(5, 1.5),  # latencies: a long right tail
        lambda rng: rng.uniform(0, 1e4),
        lambda rng: rng.choice([0.0, 1e-12, rng.expovariate(1 / 300)]),  # zeros and below MIN_MAGNITUDE
        lambda rng: rng.gauss(0, 50),  # negative values too
        lambda rng: 120.0 + rng.random() * 1e-3,  # all within 0.001 of each other
    ],
)
def test_past_the_limit_each_percentile_is_within_the_relative_error(draw: object) -> None:
    rng = random.Random(7)
    values = [draw(rng) for _ in range(30_000)]  # type: ignore[operator]
    q, ordered = fed(values, exact=1_000, top=50), sorted(values)
    assert not q.exact
    view = q.ordered()
    for x in [*QS, *range(1, 100, 3)]:
        estimate = percentile_sorted(view, x)
        assert estimate is not None and within(estimate, ordered, x), (x, estimate, percentile(values, x))
    assert (q.n, q.lo, q.hi) == (len(values), ordered[0], ordered[-1])
    assert q.mean() == pytest.approx(math.fsum(values) / len(values), rel=1e-12, abs=1e-9)


def test_the_tail_the_top_values_cover_is_exact() -> None:
    """P99 of 10,000 values lies among their largest 100: the sketch gives way to the values themselves."""
    rng = random.Random(3)
    values = [rng.paretovariate(1.5) for _ in range(10_000)]
    q, ordered = fed(values, exact=1_000, top=200), sorted(values)
    view = q.ordered()
    assert percentile_sorted(view, 99) == percentile(values, 99)
    assert [view[-k] for k in range(1, 201)] == ordered[-200:][::-1]
    assert early_stop(view) == early_stop(ordered)  # its t-th largest value (t about 1 % of n) is exact too


def test_memory_stays_bounded_whatever_the_count() -> None:
    rng = random.Random(5)
    q = Quantiles(exact=1_000, top=100)
    for _ in range(200_000):
        q.add(rng.lognormvariate(4, 1))
    held = q.held()
    for _ in range(200_000):
        q.add(rng.lognormvariate(4, 1))
    assert q.n == 400_000 and len(q.top) == 100
    assert held < 3_000 and q.held() < held + 200  # buckets over the range the values span, not the values


def test_two_merged_hold_what_one_fed_both_holds() -> None:
    rng = random.Random(11)
    a_values = [rng.expovariate(1 / 200) for _ in range(3_000)]
    b_values = [rng.expovariate(1 / 50) for _ in range(2_500)]
    for exact in (100_000, 4_000, 500):  # both exact, exact until merged, both sketched
        whole = fed(a_values + b_values, exact=exact, top=60)
        a, b = fed(a_values, exact=exact, top=60), fed(b_values, exact=exact, top=60)
        a.merge(b)
        assert (a.n, a.lo, a.hi, a.exact) == (whole.n, whole.lo, whole.hi, whole.exact)
        assert [percentile_sorted(a.ordered(), x) for x in QS] == pytest.approx(
            [percentile_sorted(whole.ordered(), x) for x in QS], rel=1e-12
        )
        assert a.mean() == pytest.approx(whole.mean(), rel=1e-12)


def test_no_measurement_is_counted_apart() -> None:
    q = fed([1.0, math.nan, math.inf, -math.inf, 1e13, 2.0])
    assert (q.n, q.left_out, q.mean()) == (2, 4, 1.5)


def test_a_bucket_holds_what_its_value_answers_for() -> None:
    """Bucket i holds gamma^(i-1) < v <= gamma^i; its value is within RELATIVE_ERROR of every v there."""
    rng = random.Random(2)
    for v in [MIN_MAGNITUDE, 1.0, *(10 ** rng.uniform(-9, 12) for _ in range(2_000))]:
        assert abs(bucket_value(bucket_of(v)) - v) <= RELATIVE_ERROR * v * (1 + 1e-9)


def test_values_fed_in_batches_hold_what_values_fed_one_by_one_hold() -> None:
    """extend takes a batch's sums and bounds at once (a request's ITLs): n, the bounds, what is left out, the mean's
    sums and every percentile are those add gives, across the move to the sketch too."""
    rng = random.Random(3)
    values = [rng.lognormvariate(3, 1) for _ in range(1_500)]
    values[7], values[300] = math.nan, 1e300  # no measurements: left out either way
    one = Quantiles(1_000, 100)
    for v in values:
        one.add(v)
    batched = Quantiles(1_000, 100)
    for k in range(0, len(values), 97):
        batched.extend(values[k : k + 97])
    assert (batched.n, batched.left_out, batched.lo, batched.hi) == (one.n, one.left_out, one.lo, one.hi) == (
        1_498, 2, min(v for v in values if v < 1e300), max(v for v in values if v < 1e300)
    )  # fmt: skip
    assert not batched.exact and not one.exact
    assert batched.mean() == pytest.approx(one.mean(), rel=1e-15)
    assert batched.sum_of_squares() == pytest.approx(one.sum_of_squares(), rel=1e-15)
    assert [percentile_sorted(batched.ordered(), x) for x in QS] == [percentile_sorted(one.ordered(), x) for x in QS]
