"""What a plan spent: the provider's input count, the larger output count, inside the window only; per day;
per typical request."""

from __future__ import annotations

import dataclasses

import pytest

from tests.schedule.test_sampler import DAY, T0, fake_sample, job
from tokenpace.schedule.sampler import Spend, last_started, usage
from tokenpace.store.database import Store
from tokenpace.store.usage import MAX_DAYS, DaySpend, daily, typical


def test_usage_counts_the_larger_output_and_the_providers_input(any_store: Store) -> None:
    store, j = any_store, job("m")
    store.add_sample(fake_sample(j, T0, input_tokens=1000, output_tokens=1))  # o200k saw 3 output tokens
    store.add_sample(fake_sample(j, T0 + 1, input_tokens=500, output_tokens=70))
    store.add_sample(fake_sample(j, T0 - DAY - 1))  # outside the window
    assert usage(store, "p", "default", T0 - DAY) == Spend(2, 1500, 3 + 70)
    assert last_started(store, j) == pytest.approx(T0 + 1) and last_started(store, job("n")) is None


def test_daily_spend_is_counted_per_utc_day_and_endpoint(any_store: Store) -> None:
    store, a, b = any_store, job("m"), job("n")
    today = T0 // DAY * DAY  # midnight UTC of T0's day
    store.add_sample(fake_sample(a, today + 5, input_tokens=1000, output_tokens=10))
    store.add_sample(fake_sample(a, today + 50, input_tokens=500, output_tokens=70))
    store.add_sample(fake_sample(b, today + 60, input_tokens=7, output_tokens=1))
    store.add_sample(fake_sample(a, today - 1, input_tokens=200, output_tokens=20))  # the day before
    store.add_sample(fake_sample(a, today - 2 * DAY - 1, input_tokens=9, output_tokens=9))  # three days before
    found = daily(store, 2, today + 100)
    day = int(today // DAY)
    assert found == [
        DaySpend("p", "default", "m", day - 1, Spend(1, 200, 20)),
        DaySpend("p", "default", "m", day, Spend(2, 1500, 10 + 70)),
        DaySpend("p", "default", "n", day, Spend(1, 7, 3)),  # o200k counted 3 output tokens, above the reported 1
    ]
    store.add_sample(fake_sample(a, today - (MAX_DAYS + 5) * DAY))  # older than any daily table reads
    assert min(d.day for d in daily(store, 10_000, today + 100)) == day - 3  # bounded however many days asked


def test_typical_request_is_the_mean_of_successful_published_samples(any_store: Store) -> None:
    store, a = any_store, job("m")
    store.add_sample(fake_sample(a, T0, input_tokens=1000, output_tokens=100))
    store.add_sample(fake_sample(a, T0 + 1, input_tokens=500, output_tokens=50))
    store.add_sample(fake_sample(a, T0 - DAY - 1, input_tokens=9, output_tokens=9))  # before the window
    found = typical(store, T0 - DAY, T0 + 10)
    ((key, tokens),) = found.items()
    assert key == ("p", "default", "m", "small") and tokens == pytest.approx((750.0, 75.0))
    assert typical(store, T0 - DAY, T0 + 10, workload="other") == {}


def test_daily_spend_leaves_out_private_one_shot_samples(any_store: Store) -> None:
    store, a = any_store, job("m")
    store.add_sample(fake_sample(a, T0))
    store.add_sample(dataclasses.replace(fake_sample(a, T0 + 1), source="one-shot", published=False))
    assert [d.spend.requests for d in daily(any_store, 1, T0 + 2)] == [1]
    assert usage(store, "p", "default", T0 - 1).requests == 2  # a budget counts both
