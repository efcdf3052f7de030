"""Cost maths: blended price, cost per request, a row's price, and what each plan spent per day."""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime

import pytest

from tests.schedule.test_sampler import DAY, T0, fake_sample, job
from tokenpace.board.cost import (
    CSV_COLUMNS,
    MAX_DAYS,
    PlanDay,
    RowCost,
    blended,
    cost_dict,
    csv_values,
    plan_days,
    request_cost,
    row_cost,
    spend,
)
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.config.prices import Price
from tokenpace.config.settings import Spend
from tokenpace.measure.stats import Figure
from tokenpace.store.database import Store
from tokenpace.store.usage import HourSpend
from tokenpace.store.windows import EndpointRow

GROQ = Price(0.05, 0.08, 0.01, date(2026, 11, 1), "https://groq.com/pricing")


def test_blended_is_three_parts_input_to_one_part_output() -> None:
    assert blended(GROQ) == pytest.approx((3 * 0.05 + 0.08) / 4)
    assert blended(Price(0, 0)) == 0


def test_request_cost_is_tokens_times_price_per_million() -> None:
    assert request_cost(GROQ, 1_000_000, 0) == pytest.approx(0.05)
    assert request_cost(GROQ, 1000, 100) == pytest.approx((1000 * 0.05 + 100 * 0.08) / 1e6)


def row(provider: str, model: str, plan: str = "default") -> EndpointRow:
    empty = Figure(0, None, None, None, None, None, None, None)
    return EndpointRow(provider, plan, model, "1k", "openai-chat", False, 1, 0, 1.0, empty, empty, empty, None, None,
                       3600, ())  # fmt: skip


def config(**prices: Price) -> Config:
    endpoints = tuple(Endpoint(p, "llama-3.1-8b-instant", "http://x") for p in prices)
    return Config(endpoints, prices={(p, "default", "llama-3.1-8b-instant"): price for p, price in prices.items()})


def test_row_cost_prices_the_typical_request_and_names_the_canonical_model() -> None:
    cfg = config(groq=GROQ)
    c = row_cost(cfg, row("groq", "llama-3.1-8b-instant"), (1000.0, 100.0), date(2026, 11, 2))
    assert c == RowCost("llama-3.1-8b", GROQ, False, 1000.0, 100.0, request_cost(GROQ, 1000, 100))
    assert c.blended == blended(GROQ)
    stale = row_cost(cfg, row("groq", "llama-3.1-8b-instant"), None, date(2027, 2, 1))  # 92 days on
    assert stale.stale and stale.cost is None
    assert row_cost(cfg, row("groq", "other"), (1.0, 1.0), date(2026, 11, 2)) == RowCost("other")  # no price


def test_json_and_csv_carry_price_blend_cost_and_canonical_model() -> None:
    c = RowCost("llama-3.1-8b", GROQ, False, 1000.0, 100.0, 0.000058)
    d = cost_dict(c, date(2026, 11, 11))
    assert d["canonical_model"] == "llama-3.1-8b" and d["cost_per_request"] == 0.000058
    assert d["blended_price"] == blended(GROQ)
    assert d["price"] == {"input": 0.05, "output": 0.08, "cached_input": 0.01, "blended": blended(GROQ),
                          "as_of": "2026-11-01", "source": "https://groq.com/pricing", "age_days": 10,
                          "stale": False}  # fmt: skip
    values = dict(zip(CSV_COLUMNS, csv_values(c), strict=True))
    assert values["price_as_of"] == "2026-11-01" and values["cost_per_request"] == 0.000058
    assert values["blended_price"] == blended(GROQ) and values["canonical_model"] == "llama-3.1-8b"
    assert csv_values(None) == [None] * len(CSV_COLUMNS)
    assert cost_dict(None, date(2026, 11, 11))["price"] is None


def cents(days: list[PlanDay]) -> list[PlanDay]:
    """Dollars rounded to 1e-9: sums of float products compare to a tolerance, not exactly."""
    return [dataclasses.replace(d, dollars=round(d.dollars, 9)) for d in days]


def test_plan_days_price_each_model_and_count_the_unpriced_apart() -> None:
    cfg = config(groq=GROQ)
    spends = [
        HourSpend("groq", "default", "llama-3.1-8b-instant", 20000 * 24, Spend(1, 1_000_000, 0)),
        HourSpend("groq", "default", "llama-3.1-8b-instant", 20000 * 24 + 23, Spend(1, 1_000_000, 1_000_000)),
        HourSpend("groq", "default", "mystery", 20000 * 24 + 5, Spend(1, 10, 10)),
        HourSpend("groq", "default", "llama-3.1-8b-instant", 20001 * 24, Spend(1, 0, 0)),
    ]
    assert cents(plan_days(cfg, spends)) == [
        PlanDay("groq", "default", date(2024, 10, 4), 3, 2_000_010, 1_000_010, 0.18, 1),
        PlanDay("groq", "default", date(2024, 10, 5), 1, 0, 0, 0.0, 0),
    ]


def test_spend_per_plan_per_day_from_stored_samples(any_store: Store) -> None:
    store: Store = any_store
    today = T0 // DAY * DAY
    on = job("llama-3.1-8b-instant", provider="groq")
    store.add_sample(fake_sample(on, today + 10, input_tokens=1000, output_tokens=100))
    store.add_sample(fake_sample(on, today + 20, input_tokens=3000, output_tokens=100))
    store.add_sample(fake_sample(on, today - 10, input_tokens=500, output_tokens=50))  # yesterday
    store.add_sample(fake_sample(job("m"), today + 30))  # another plan, no price
    found = spend(store, config(groq=GROQ), 2, datetime.fromtimestamp(today + 100, UTC))
    day = datetime.fromtimestamp(today, UTC).date()
    assert cents(found) == [
        PlanDay("groq", "default", day, 2, 4000, 200, round(request_cost(GROQ, 4000, 200), 9), 0),
        PlanDay("p", "default", day, 1, 300, 40, 0.0, 1),
        PlanDay("groq", "default", date.fromordinal(day.toordinal() - 1), 1, 500, 50,
                round(request_cost(GROQ, 500, 50), 9), 0),
    ]  # fmt: skip
    # Hours over FINAL_AFTER_S old were read once and kept; the last ones are read again each time.
    store.add_sample(fake_sample(on, today - 5 * 3600, input_tokens=1, output_tokens=1))  # too late: kept as read
    store.add_sample(fake_sample(on, today + 50, input_tokens=1, output_tokens=1))  # this hour: read again
    again = spend(store, config(groq=GROQ), 2, datetime.fromtimestamp(today + 100, UTC))
    assert [(d.day, d.plan, d.provider, d.requests) for d in again] == [
        (day, "default", "groq", 3),
        (day, "default", "p", 1),
        (date.fromordinal(day.toordinal() - 1), "default", "groq", 1),
    ]
    assert spend(store, config(), 10_000, datetime.fromtimestamp(today, UTC))[-1].day >= date.fromordinal(
        day.toordinal() - MAX_DAYS + 1
    )  # bounded however many days asked
