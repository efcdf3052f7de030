"""What a plan spent: the provider's input count, the larger output count, inside the window only."""

from __future__ import annotations

import pytest

from tests.schedule.test_sampler import DAY, T0, fake_sample, job
from tokenpace.schedule.sampler import Spend, last_started, usage
from tokenpace.store.database import Store


def test_usage_counts_the_larger_output_and_the_providers_input(any_store: Store) -> None:
    store, j = any_store, job("m")
    store.add_sample(fake_sample(j, T0, input_tokens=1000, output_tokens=1))  # o200k saw 3 output tokens
    store.add_sample(fake_sample(j, T0 + 1, input_tokens=500, output_tokens=70))
    store.add_sample(fake_sample(j, T0 - DAY - 1))  # outside the window
    assert usage(store, "p", "default", T0 - DAY) == Spend(2, 1500, 3 + 70)
    assert last_started(store, j) == pytest.approx(T0 + 1) and last_started(store, job("n")) is None
