"""Prices: dollars per million tokens, dated, with where they were read, as a config or a preset states them.

A price is what the provider bills per 1M input tokens, per 1M output tokens and, where it bills them apart,
per 1M cached input tokens. Prices change without notice, so every one carries the day it was read (``as_of``)
and a page marks one older than :data:`STALE_DAYS` days. In a config file::

    [providers.groq]
    price = { input = 0.05, output = 0.08, as_of = "2026-11-01", source = "https://groq.com/pricing" }

    [providers.groq.prices."llama-3.3-70b-versatile"]   # one model's own price
    input = 0.59
    output = 0.79
    as_of = 2026-11-01                                   # a TOML date or a "YYYY-MM-DD" string

    [providers.groq.plans.free]
    price = { input = 0, output = 0, as_of = "2026-11-01" }   # a plan may have its own, and ``prices`` too

An endpoint's price is the first found of: its plan's ``prices`` for its model, its plan's ``price``, its
provider's ``prices`` for its model, its provider's ``price``, then the preset's price for the preset's default
model (:func:`pick`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Annotated

import pydantic

STALE_DAYS = 90  # a price read longer ago than this is marked as possibly out of date
MAX_DOLLARS_PER_M = 10_000.0  # far above any listed price (the dearest are ~$600 per 1M): a typo, not a price
MAX_SOURCE = 300
EARLIEST = date(2020, 1, 1)  # before per-token LLM APIs were sold: a mistyped year


@dataclass(frozen=True, slots=True)
class Price:
    """Dollars per 1M tokens: input, output and (None where not billed apart) cached input; when and where read."""

    input: float
    output: float
    cached_input: float | None = None
    as_of: date | None = None
    source: str | None = None

    def age_days(self, today: date) -> int | None:
        """Days since the price was read: today - as_of (None when undated)."""
        return None if self.as_of is None else (today - self.as_of).days

    def stale(self, today: date) -> bool:
        """Whether the price is older than STALE_DAYS days (an undated one is stale: nobody knows)."""
        age = self.age_days(today)
        return age is None or age > STALE_DAYS


def _one_line(text: str) -> str:
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise ValueError("give one line of text without control characters")
    return text


def _dated(day: date) -> date:
    today = datetime.now(UTC).date()
    if not EARLIEST <= day <= today:
        raise ValueError(f"{day.isoformat()} is not a day from {EARLIEST.isoformat()} to today ({today.isoformat()})")
    return day


Dollars = Annotated[float, pydantic.Field(ge=0, le=MAX_DOLLARS_PER_M, allow_inf_nan=False, strict=True)]
Day = Annotated[date, pydantic.AfterValidator(_dated)]
Source = Annotated[str, pydantic.Field(min_length=1, max_length=MAX_SOURCE), pydantic.AfterValidator(_one_line)]


class PriceTable(pydantic.BaseModel):
    """``{ input, output, cached_input, as_of, source }`` as a config file gives it."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)
    input: Dollars
    output: Dollars
    cached_input: Dollars | None = None
    as_of: Day
    source: Source | None = None

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
