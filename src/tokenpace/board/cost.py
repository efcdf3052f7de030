"""What a request costs and what a plan spent: prices (config.prices) times the tokens the store counted.

Prices are dollars per 1M tokens. A row's cost per request is its workload's typical request (the mean billed
input and output tokens of the endpoint's last 20 successful samples in the window, ``usage.typical``) at its price;
the blended price weighs input 3:1 against output, as Artificial Analysis does. Cached input is shown beside the
price but not used: tokenpace's prompts are fresh each time, so they are billed as uncached input. What a plan
spent per day is ``usage.hourly`` summed per day and priced per model; a model without a price leaves the
plan's dollars partial, and says so (``unpriced``). An hour that ended long enough ago is final (no sample of it
can still arrive), so it is read once and kept: a week's table costs, after its first read, the last few hours.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from tokenpace.config.endpoints import Config
from tokenpace.config.prices import Price
from tokenpace.config.windows import RowKey
from tokenpace.store.database import Store
from tokenpace.store.rollup import HOUR
from tokenpace.store.usage import HourSpend, hourly
from tokenpace.store.windows import EndpointRow

PER = 1_000_000  # prices are per this many tokens


def blended(p: Price) -> float:
    """Blended price = (3 * input + output) / 4, $ per 1M tokens (Artificial Analysis's 3:1 blend)."""
    return (3 * p.input + p.output) / 4


def request_cost(p: Price, input_tokens: float, output_tokens: float) -> float:
    """Cost = (input tokens * input price + output tokens * output price) / 1M, in dollars."""
    return (input_tokens * p.input + output_tokens * p.output) / PER


@dataclass(frozen=True, slots=True)
class RowCost:
    """A row's model under its canonical name, its price and what a typical request of its workload costs."""

    canonical: str
    price: Price | None = None
    stale: bool = False  # the price is older than prices.STALE_DAYS
    input_tokens: float | None = None  # the typical request's, as billed
    output_tokens: float | None = None
    cost: float | None = None  # dollars per typical request
    quantization: str | None = None  # as the provider states it (config)

    @property
    def blended(self) -> float | None:
        return None if self.price is None else blended(self.price)


def row_cost(config: Config, row: EndpointRow, tokens: tuple[float, float] | None, today: date) -> RowCost:
    """The price and cost per request of one row (None where no price or no successful sample is known)."""
    price = config.price_of(row.provider, row.plan, row.model)
    canonical = config.models.canonical(row.model)
    quantization = config.quantization.get((row.provider, row.model))
    if price is None:
        return RowCost(canonical, quantization=quantization)
    if tokens is None:
        return RowCost(canonical, price, price.stale(today), quantization=quantization)
    cost = request_cost(price, *tokens)
    return RowCost(canonical, price, price.stale(today), tokens[0], tokens[1], cost, quantization)


def row_costs(
    config: Config, rows: Iterable[EndpointRow], tokens: Mapping[RowKey, tuple[float, float]], today: date
) -> dict[RowKey, RowCost]:
    """:func:`row_cost` of every row, by (provider, plan, model, workload)."""
    return {r.key: row_cost(config, r, tokens.get(r.key), today) for r in rows}


def price_dict(p: Price | None, today: date) -> dict[str, Any] | None:
    """A price as JSON: the three rates, when and where it was read, its age and whether it is stale."""
    if p is None:
        return None
    return {
        "input": p.input, "output": p.output, "cached_input": p.cached_input, "blended": blended(p),
        "as_of": None if p.as_of is None else p.as_of.isoformat(), "source": p.source,
        "age_days": p.age_days(today), "stale": p.stale(today),
    }  # fmt: skip


def cost_dict(c: RowCost | None, today: date) -> dict[str, Any]:
    """A row's JSON fields beside row_dict's: canonical model, price, blended price, cost per request."""
    c = c or RowCost("")
    return {
        "canonical_model": c.canonical or None, "price": price_dict(c.price, today), "blended_price": c.blended,
        "typical_input_tokens": c.input_tokens, "typical_output_tokens": c.output_tokens, "cost_per_request": c.cost,
        "quantization": c.quantization,
    }  # fmt: skip


CSV_COLUMNS = (
    "canonical_model", "price_input", "price_output", "price_cached_input", "price_as_of", "price_stale",
    "blended_price", "typical_input_tokens", "typical_output_tokens", "cost_per_request", "quantization",
)  # fmt: skip


def csv_values(c: RowCost | None) -> list[Any]:
    """The CSV_COLUMNS of a row, empty where unknown."""
    c = c or RowCost("")
    p = c.price
    if p is None:
        return [c.canonical or None, *[None] * (len(CSV_COLUMNS) - 2), c.quantization]
    as_of = None if p.as_of is None else p.as_of.isoformat()
    return [c.canonical, p.input, p.output, p.cached_input, as_of, c.stale, c.blended, c.input_tokens,
            c.output_tokens, c.cost, c.quantization]  # fmt: skip


@dataclass(frozen=True, slots=True)
class PlanDay:
    """What one plan spent on one UTC day: requests, tokens and dollars at its models' prices."""

    provider: str
    plan: str
    day: date
    requests: int
    input_tokens: int
    output_tokens: int
    dollars: float  # at the prices known; requests of unpriced models add nothing
    unpriced: int  # requests of models without a price: dollars leaves them out


def plan_days(config: Config, spends: Sequence[HourSpend]) -> list[PlanDay]:
    """Per plan and UTC day, the sums of usage.hourly's rows, each model's tokens priced by request_cost."""
    sums: dict[tuple[str, str, int], list[float]] = {}
    for s in spends:
        acc = sums.setdefault((s.provider, s.plan, s.hour // 24), [0, 0, 0, 0.0, 0])
        u, price = s.spend, config.price_of(s.provider, s.plan, s.model)
        acc[0], acc[1], acc[2] = acc[0] + u.requests, acc[1] + u.input_tokens, acc[2] + u.output_tokens
        if price is None:
            acc[4] += u.requests
        else:
            acc[3] += request_cost(price, u.input_tokens, u.output_tokens)
    return [
        PlanDay(provider, plan, datetime.fromtimestamp(day * 24 * HOUR, UTC).date(), int(a[0]), int(a[1]), int(a[2]),
                a[3], int(a[4]))
        for (provider, plan, day), a in sorted(sums.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][1]))
    ]  # fmt: skip


def plan_day_dict(d: PlanDay) -> dict[str, Any]:
    return {"provider": d.provider, "plan": d.plan, "day": d.day.isoformat(), "requests": d.requests,
            "input_tokens": d.input_tokens, "output_tokens": d.output_tokens, "dollars": d.dollars,
            "unpriced_requests": d.unpriced}  # fmt: skip


MAX_DAYS = 31
FINAL_AFTER_S = 2 * HOUR  # a sample is stored when its request ends: no request runs longer than this after
_FINAL: weakref.WeakKeyDictionary[Store, dict[int, list[HourSpend]]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def spend(store: Store, config: Config, days: int, now: datetime) -> list[PlanDay]:
    """What each plan spent on each of the last ``days`` UTC days (today included, at most MAX_DAYS), newest
    day first. Hours over FINAL_AFTER_S old are read once per store and kept; the rest are read each time."""
    last = int(now.timestamp() // HOUR)
    first = (last // 24 - min(max(days, 1), MAX_DAYS) + 1) * 24
    final = int((now.timestamp() - FINAL_AFTER_S) // HOUR)  # hours before this one are complete
    with _LOCK:
        kept = _FINAL.setdefault(store, {})
        for hour in [h for h in kept if h < first - MAX_DAYS * 24]:
            del kept[hour]  # long out of every table
        known = dict(kept)
    read = hourly(store, [h for h in range(first, last + 1) if h not in known])
    fresh: dict[int, list[HourSpend]] = {h: [] for h in range(first, last + 1) if h not in known}
    for s in read:
        fresh[s.hour].append(s)
    with _LOCK:
        kept.update({h: rows for h, rows in fresh.items() if h < final})
    every = [s for h in range(first, last + 1) for s in known.get(h, fresh.get(h, []))]
    return sorted(plan_days(config, every), key=lambda d: d.day, reverse=True)  # plans stay in name order
