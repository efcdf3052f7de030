"""A model's row: the median across its endpoints of their headline figures, its success rate pooled over all.

Rows are read from samples a real store (SQLite and PostgreSQL) wrote, as the board reads them.
"""

from __future__ import annotations

import statistics
from datetime import timedelta

import pytest

from tests.store.test_windows import CEREBRAS, DEMO, GROQ, NOW, fail, put, rows
from tokenpace.board.medians import model_rows
from tokenpace.config.endpoints import Endpoint
from tokenpace.measure.failures import ErrorKind
from tokenpace.store.database import Store


def test_model_rows_are_medians_across_endpoints(any_store: Store) -> None:
    other = Endpoint("together", "llama", "http://together.invalid/v1")
    for endpoint, ttft in ((GROQ, 100), (CEREBRAS, 200), (other, 600)):
        for _ in range(3):
            put(any_store, endpoint, NOW - timedelta(hours=1), ttft_ms=ttft)
    put(any_store, DEMO, NOW, ttft_ms=50)  # one sample: left out when min_samples asks for more
    fail(any_store, other, NOW, ErrorKind.HTTP_ERROR)
    found = list(rows(any_store).values())
    llama, sim = model_rows(found, "median")
    assert (llama.model, llama.workload, llama.providers, llama.samples) == ("llama", "1k", 3, 10)
    assert llama.ttft_ms == pytest.approx(200) and not llama.simulated
    assert llama.success_rate == pytest.approx(9 / 10)  # pooled: not the median of 1, 1 and 0.75
    assert sim.simulated and sim.ttft_ms == pytest.approx(50)
    assert [m.model for m in model_rows(found, "mean", min_samples=3)] == ["llama"]
    assert model_rows(found, "mean")[0].output_speed == pytest.approx(
        statistics.median(r.output_speed.mean for r in found if r.model == "llama" and r.output_speed.mean)
    )


def test_a_model_row_pools_success_over_every_endpoint_even_one_that_always_fails(any_store: Store) -> None:
    """Issue 13: a model served by one provider that fails every request showed 100 % (the median of the rest)."""
    other = Endpoint("together", "llama", "http://together.invalid/v1")
    for endpoint in (GROQ, CEREBRAS):
        for _ in range(3):
            put(any_store, endpoint, NOW - timedelta(hours=1))
    for _ in range(4):
        fail(any_store, other, NOW, ErrorKind.HTTP_ERROR)  # no counted sample: out of the figures, not the rate
    (llama,) = model_rows(list(rows(any_store).values()), "median", min_samples=3)
    assert llama.providers == 2 and llama.success_rate == pytest.approx(6 / 10)
