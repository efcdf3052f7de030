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
model (``price_tables.pick``). The file's tables are read in ``price_tables.py``: this module stays free of
pydantic, so the presets (and ``tokenpace --help``, which lists them) load without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

STALE_DAYS = 90  # a price read longer ago than this is marked as possibly out of date


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
