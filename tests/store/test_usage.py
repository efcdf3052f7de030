"""What a plan spent: the provider's input count, the larger output count, inside the window only; per day;
per typical request."""

from __future__ import annotations

import dataclasses

import pytest

from tests.schedule.test_sampler import DAY, T0, fake_sample, job
from tokenpace.config.settings import Spend
from tokenpace.schedule.sampler import job_last_started, usage
from tokenpace.store.database import Store
from tokenpace.store.usage import TYPICAL, HourSpend, hourly, typical


def test_usage_counts_the_larger_output_and_the_providers_input(any_store: Store) -> None:
    store, j = any_store, job("m")
    store.add_sample(fake_sample(j, T0, input_tokens=1000, output_tokens=1))  # o200k saw 3 output tokens
    store.add_sample(fake_sample(j, T0 + 1, input_tokens=500, output_tokens=70))
    store.add_sample(fake_sample(j, T0 - DAY - 1))  # outside the window
    assert usage(store, "p", "default", T0 - DAY) == Spend(2, 1500, 3 + 70)
    assert job_last_started(store, j) == pytest.approx(T0 + 1) and job_last_started(store, job("n")) is None


def test_hourly_spend_is_counted_per_utc_hour_and_endpoint(any_store: Store) -> None:
    store, a, b = any_store, job("m"), job("n")
    start = T0 // 3600 * 3600  # the start of T0's hour
    store.add_sample(fake_sample(a, start + 5, input_tokens=1000, output_tokens=10))
    store.add_sample(fake_sample(a, start + 50, input_tokens=500, output_tokens=70))
    store.add_sample(fake_sample(b, start + 60, input_tokens=7, output_tokens=1))
    store.add_sample(fake_sample(a, start - 1, input_tokens=200, output_tokens=20))  # the hour before
    store.add_sample(fake_sample(a, start - 7200 - 1, input_tokens=9, output_tokens=9))  # not asked for
    hour = int(start // 3600)
    assert hourly(store, [hour, hour - 1, hour]) == [
        HourSpend("p", "default", "m", hour - 1, Spend(1, 200, 20)),
        HourSpend("p", "default", "m", hour, Spend(2, 1500, 10 + 70)),
        HourSpend("p", "default", "n", hour, Spend(1, 7, 3)),  # o200k counted 3 output tokens, above the reported 1
    ]
    assert len(hourly(store, range(hour - 200, hour + 1))) == 4  # many hours: several statements
    assert hourly(store, []) == []


def test_typical_request_is_the_mean_of_the_last_successful_published_samples(any_store: Store) -> None:
    store, a, key = any_store, job("m"), ("p", "default", "m", "small")
    store.add_sample(fake_sample(a, T0 - DAY - 1, input_tokens=9, output_tokens=9))  # before the window
    for i in range(TYPICAL):  # older than the last TYPICAL: left out
        store.add_sample(fake_sample(a, T0 - 100 + i, input_tokens=1, output_tokens=1))
    store.add_sample(dataclasses.replace(fake_sample(a, T0, 500, 50), published=False, source="one-shot"))
    for i in range(TYPICAL):
        store.add_sample(fake_sample(a, T0 + i, input_tokens=1000 + 10 * (i % 2), output_tokens=100))
    store.add_sample(fake_sample(a, T0 + 50, input_tokens=5, output_tokens=5))  # after the window
    keys = [key, ("p", "default", "m", "other"), ("p", "pro", "m", "small")]
    found = typical(store, keys, T0 - DAY, T0 + 30)
    assert list(found) == [key] and found[key] == pytest.approx((1005.0, 100.0))
    many = [("p", "default", f"m{i}", "small") for i in range(250)]  # more keys than one statement holds
    assert typical(store, [*many, key], T0 - DAY, T0 + 30) == found


def test_hourly_spend_leaves_out_unpublished_one_shot_samples(any_store: Store) -> None:
    store, a = any_store, job("m")
    store.add_sample(fake_sample(a, T0))
    store.add_sample(dataclasses.replace(fake_sample(a, T0 + 1), source="one-shot", published=False))
    assert [d.spend.requests for d in hourly(any_store, [int(T0 // 3600)])] == [1]
    assert usage(store, "p", "default", T0 - 1).requests == 2  # a budget counts both
