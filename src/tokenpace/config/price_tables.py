"""A config file's price tables (``price``, ``prices."MODEL"``), checked and bounded, and which one applies.

See prices.py for what a price is and where it may be set.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Annotated

import pydantic

from tokenpace.config.plain import is_one_line
from tokenpace.config.prices import Price

MAX_DOLLARS_PER_M = 10_000.0  # far above any listed price (the dearest are ~$600 per 1M): a typo, not a price
MAX_SOURCE = 300
EARLIEST = date(2020, 1, 1)  # before per-token LLM APIs were sold: a mistyped year


def _one_line_source(text: str) -> str:
    if not is_one_line(text):
        raise ValueError("give one line of text without control characters")
    return text


def _dated(day: date) -> date:
    today = datetime.now(UTC).date()
    if not EARLIEST <= day <= today:
        raise ValueError(f"{day.isoformat()} is not a day from {EARLIEST.isoformat()} to today ({today.isoformat()})")
    return day


Dollars = Annotated[float, pydantic.Field(ge=0, le=MAX_DOLLARS_PER_M, allow_inf_nan=False, strict=True)]
Day = Annotated[date, pydantic.AfterValidator(_dated)]
PriceSource = Annotated[
    str, pydantic.Field(min_length=1, max_length=MAX_SOURCE), pydantic.AfterValidator(_one_line_source)
]


class PriceTable(pydantic.BaseModel):
    """``{ input, output, cached_input, as_of, source }`` as a config file gives it."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)
    input: Dollars
    output: Dollars
    cached_input: Dollars | None = None
    as_of: Day
    source: PriceSource | None = None

    def price(self) -> Price:
        return Price(self.input, self.output, self.cached_input, self.as_of, self.source)


def pick(
    model: str,
    plan_price: PriceTable | None,
    plan_prices: Mapping[str, PriceTable],
    provider_price: PriceTable | None,
    provider_prices: Mapping[str, PriceTable],
    preset: Price | None = None,
) -> Price | None:
    """The most specific price stated for a model: plan's per model, plan's, provider's per model, provider's,
    then the preset's."""
    for found in (plan_prices.get(model), plan_price, provider_prices.get(model), provider_price):
        if found is not None:
            return found.price()
    return preset
