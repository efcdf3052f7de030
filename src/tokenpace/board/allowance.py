"""What each plan's budget and limits allow tokenpace, what it spent of each window, and the cadence that follows.

One line per capped count of each window (``$12 per 5h``: tokenpace's 10 % is $1.20, spent $0.31 in the last
5 h, at most $1.18 at the plan's cadence), from the scheduler's jobs and the store: the same jobs, worst cases
and windows the sampler checks each run against (schedule/pacing.py), the same counts (store/usage.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from tokenpace.config.endpoints import Config, plan_name
from tokenpace.config.settings import SPEND_NAMES
from tokenpace.schedule.cadence import Job
from tokenpace.schedule.pacing import Demand, amount, budget_text, duration_text, window_text, window_worst
from tokenpace.store.database import Store
from tokenpace.store.usage import spent

PaceSource = Literal["every", "limits", "billing"]  # where a plan's cadence comes from


@dataclass(frozen=True, slots=True)
class Cap:
    """One capped count of one window: as stated, tokenpace's share of it, spent in the window, the worst case."""

    window_s: float
    resource: str  # requests, input_tokens, output_tokens or dollars
    stated: str  # "$12 per 5h"
    share: float
    allowed: float  # stated cap x share
    spent: float  # in the window up to now
    worst: float  # the most the plan's jobs may spend in one such window at its cadence


@dataclass(frozen=True, slots=True)
class PlanAllowance:
    provider: str
    plan: str
    every_s: float  # the plan's cadence
    source: PaceSource
    caps: tuple[Cap, ...]

    @property
    def name(self) -> str:
        return plan_name(self.provider, self.plan)


def allowances(store: Store, config: Config, jobs: Sequence[Job], now: datetime) -> list[PlanAllowance]:
    """Every plan with a budget or limits among ``jobs``, A to Z, its windows' spend read from the store."""
    grouped: defaultdict[tuple[str, str], list[Job]] = defaultdict(list)
    for job in jobs:
        if job.budgets:
            grouped[job.key[:2]].append(job)
    return [_allowance(store, config, plan, found, now.timestamp()) for plan, found in sorted(grouped.items())]


def _allowance(store: Store, config: Config, plan: tuple[str, str], jobs: list[Job], now: float) -> PlanAllowance:
    first = jobs[0]
    every = first.plan_every_s or min(j.every_s for j in jobs)
    settings = config.plan_of(first.endpoint)
    source: PaceSource = "every" if settings.every_given else "limits" if first.limits else "billing"
    prices = {j.endpoint.model: j.price for j in jobs if j.price is not None}
    demands = [Demand(j.every_s, j.jitter, j.worst_case()) for j in jobs]
    caps = []
    for budget in first.budgets:
        used = spent(store, *plan, now - budget.window_s, prices)
        worst = window_worst(budget.window_s, demands, every)
        for resource, allowed in zip(SPEND_NAMES, budget.allowed(), strict=True):
            if allowed is not None:
                stated = budget_text(budget, resource)
                got, most = getattr(used, resource), getattr(worst, resource)
                caps.append(Cap(budget.window_s, resource, stated, budget.share, allowed, got, most))
    return PlanAllowance(*plan, every, source, tuple(caps))


def cap_text(c: Cap) -> str:
    """``$12 per 5h: tokenpace's 10 % is $1.20, spent $0.31 in the last 5h, at most $1.18 at this cadence``."""
    mine = "all of it" if c.share == 1 else f"tokenpace's {c.share:.0%} is {amount(c.resource, c.allowed)}"
    spent_text = f"spent {amount(c.resource, c.spent)} in the last {window_text(c.window_s)}"
    return f"{c.stated}: {mine}, {spent_text}, at most {amount(c.resource, c.worst)} at this cadence"


SOURCE_TEXT = {"every": "as its every says", "limits": "the densest its limits allow", "billing": "its billing's"}


def allowance_dict(a: PlanAllowance) -> dict[str, Any]:
    """A plan's allowance as JSON and as the pages show it."""
    return {
        "provider": a.provider,
        "plan": a.plan,
        "name": a.name,
        "every_s": a.every_s,
        "every": duration_text(a.every_s),
        "source": a.source,
        "source_text": SOURCE_TEXT[a.source],
        "caps": [
            {"window": window_text(c.window_s), "resource": c.resource, "stated": c.stated, "share": c.share,
             "allowed": c.allowed, "spent": c.spent, "worst": c.worst, "text": cap_text(c)}
            for c in a.caps
        ],
    }  # fmt: skip
