"""What the sampler reports of itself: each job's due time, each plan's budget use and skips, each rate-limit hold.

Values only, so that the pages that show them (board/, web/) import these and never the sampler's loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tokenpace.config.settings import Budget, Spend
from tokenpace.schedule.cadence import Job


@dataclass(frozen=True, slots=True)
class JobStatus:
    job: Job
    next_due: datetime | None  # None while it runs
    running: bool
    last_started: datetime | None


@dataclass(frozen=True, slots=True)
class BudgetStatus:
    provider: str
    plan: str
    budgets: tuple[Budget, ...]  # its 24 h budget and its limits, each over its own window
    used: tuple[Spend, ...]  # of each, over its window before the last check
    skipped: int  # runs skipped because they would not fit, since the sampler started: above 0, the cap bit
    last_skip: datetime | None
    recent_skips: int = 0  # of those, the ones in the last 24 h: above 0, the cap still bites


@dataclass(frozen=True, slots=True)
class HoldStatus:
    provider: str
    plan: str
    until: datetime  # the latest hold's end, past or not
    skipped: int  # runs skipped while held, since the sampler started
    last_skip: datetime | None


@dataclass(frozen=True, slots=True)
class Status:
    started_at: datetime
    jobs: tuple[JobStatus, ...]
    budgets: tuple[BudgetStatus, ...]
    failures: int = 0  # exceptions the sampler caught (a run, a read, a bug), logged and survived
    holds: tuple[HoldStatus, ...] = ()  # plans a 429 held, and the runs skipped meanwhile
