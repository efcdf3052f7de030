"""A plan's pace: the densest cadence whose worst case fits every window of its limits (pure functions).

Every job of a plan (each model, workload and region, at its own cadence) spends from the plan's windows. A job
run every I seconds with jitter x starts its runs at least I (1 - x) apart (cadence.next_due), so at most
floor(W / (I (1 - x))) + 1 of them start in any window of W seconds, each spending up to its worst case
(Job.worst_case, priced). The plan's cadence E makes each job's interval max(E, its workload's own); the plan's
pace is the least E, in whole minutes up to 2 hours and whole hours past them (cadences a config file writes),
and no denser than the uncapped default of 10 minutes, whose worst case fits share x cap of every window. A plan
whose ``every`` is given keeps it, and it must fit. The sampler checks each run against what the plan actually
spent all the same (sampler.py), so no window is ever exceeded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tokenpace.config.settings import BILLING_EVERY_S, Budget, PlanSettings, Spend
from tokenpace.errors import ConfigError

PACE_FLOOR_S = BILLING_EVERY_S["uncapped"]  # tokenpace's densest cadence of its own; `every` may go below it
PACE_STEP_S = 60.0  # a derived cadence is whole minutes up to PACE_HOURLY_FROM_S, whole hours past it
PACE_HOURLY_FROM_S = 7200.0
_MINUTE_STEPS = round((PACE_HOURLY_FROM_S - PACE_FLOOR_S) / PACE_STEP_S)


@dataclass(frozen=True, slots=True)
class Demand:
    """A job as its plan's windows see it: its workload's own cadence (0: the plan's), its jitter and the worst
    case of one run."""

    own_every_s: float
    jitter: float
    worst: Spend


def runs_in(window_s: float, every_s: float, jitter: float) -> int:
    """Most runs that start in any closed window: floor(window_s / (every_s x (1 - jitter))) + 1."""
    return math.floor(window_s / (every_s * (1 - jitter))) + 1


def window_worst(window_s: float, demands: Sequence[Demand], every_s: float) -> Spend:
    """The most one window may hold at plan cadence every_s: sum of runs_in(W, max(every_s, own), x) x worst."""
    return sum((d.worst * runs_in(window_s, max(every_s, d.own_every_s), d.jitter) for d in demands), Spend())


def fits(budgets: Sequence[Budget], demands: Sequence[Demand], every_s: float) -> bool:
    """Whether window_worst(W, demands, every_s) <= share x cap for each budget's window W and every cap."""
    return all(window_worst(b.window_s, demands, every_s).fits(b) for b in budgets)


def candidate(k: int) -> float:
    """The k-th cadence a plan may be paced to: 10 min + k min up to 2 h, then 2 h + (k - 110) h."""
    if k <= _MINUTE_STEPS:
        return PACE_FLOOR_S + k * PACE_STEP_S
    return PACE_HOURLY_FROM_S + (k - _MINUTE_STEPS) * 3600.0


def densest(budgets: Sequence[Budget], demands: Sequence[Demand]) -> float | None:
    """The least candidate(k) (10 min, 11 min, ... 2 h, 3 h, ...) with fits(budgets, demands, E); None where none fits.

    window_worst only falls as E grows, and stops falling once E (1 - x) passes every window: a bisection.
    """
    if not demands or not budgets:
        return PACE_FLOOR_S
    widest = max(b.window_s for b in budgets) / (1 - max(d.jitter for d in demands))
    lo, hi = 0, _MINUTE_STEPS + max(0, math.ceil((widest - PACE_HOURLY_FROM_S) / 3600)) + 1
    if not fits(budgets, demands, candidate(hi)):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(budgets, demands, candidate(mid)):
            hi = mid
        else:
            lo = mid + 1
    return candidate(lo)


def pace(where: str, plan: PlanSettings, demands: Sequence[Demand]) -> float:
    """The plan's cadence: ``every`` where given, else the densest that fits its limits, else its billing's.

    ConfigError ``where: ...`` when a given ``every``, or even the sparsest cadence, exceeds a window's share.
    """
    if not plan.limits:
        return plan.every_s
    found = densest(plan.budgets, demands)
    if found is None:
        widest = max(b.window_s for b in plan.budgets) / (1 - max(d.jitter for d in demands)) + 3600
        raise ConfigError(
            f"{where}: one run of each scheduled workload {_excess(plan.budgets, demands, widest)}: raise the limit "
            "or budget_share, or leave workloads out of schedule.workloads"
        )
    if not plan.every_given:
        return found
    if not fits(plan.budgets, demands, plan.every_s):
        given = f'every = "{duration_text(plan.every_s)}"'
        fix = f'every = "{duration_text(found)}" or longer fits'
        raise ConfigError(f"{where}: {given} {_excess(plan.budgets, demands, plan.every_s)}: {fix}")
    return plan.every_s


def _excess(budgets: Sequence[Budget], demands: Sequence[Demand], every_s: float) -> str:
    """``spends up to $3.41 per 5h, over 10 % of $12 per 5h``: the first window the cadence overfills."""
    for b in budgets:
        worst = window_worst(b.window_s, demands, every_s)
        if over := worst.over(b):
            name, per = over[0], window_text(b.window_s)
            share = "" if b.share == 1 else f"{b.share:.0%} of "
            return f"spends up to {amount(name, getattr(worst, name))} per {per}, over {share}{budget_text(b, name)}"
    return "fits"  # (not reached: called where something does not fit)


def amount(name: str, value: float) -> str:
    """A spend in its unit: "$3.41", "120 requests", "2,000 input tokens"."""
    if name == "dollars":
        return f"${value:,.2f}"
    return f"{value:,.0f} " + name.replace("_", " ")


def budget_text(budget: Budget, name: str) -> str:
    """One cap of a budget as the provider states it: "$12 per 5h", "100 requests per 24h"."""
    cap = getattr(budget, name)
    shown = f"${cap:,g}" if name == "dollars" else amount(name, cap)
    return f"{shown} per {window_text(budget.window_s)}"


def window_text(seconds: float) -> str:
    """A window as a config file writes it: whole days from 2 d ("7d", "30d"), else hours ("5h", "24h")."""
    if seconds >= 2 * 86_400 and seconds % 86_400 == 0:
        return f"{seconds / 86_400:.0f}d"
    return duration_text(seconds) if seconds < 3600 or seconds % 3600 else f"{seconds / 3600:.0f}h"


def duration_text(seconds: float) -> str:
    """A cadence as a config file writes it, in its largest whole unit: "47m", "2h", "1d", "90s"."""
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:g}s"
