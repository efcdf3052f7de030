"""Rate limits in the schedule: a 429 holds every job of its plan until the time its server asked for.

A plan (provider and plan) is one account's quota, so a rate-limited sample of any of its models or regions
holds all of its jobs until its Retry-After has passed since the response arrived (:func:`held_until`); a 429
without a usable Retry-After holds them DEFAULT_HOLD_S. A job due while its plan is held is skipped, counted, as
if it had run: it comes due again an interval later, its own next due time, so the jobs a hold skipped never
start together when it ends. Runs already in flight when the 429 arrives go on.

Holds are read from the database, as due times are: after each run, the plan's 429s since that run began (an
agent's too, once it has stored them), and at start-up those that could still hold, so a restart keeps them.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from functools import partial
from typing import TypeVar

from tokenpace.clients.ratelimits import MAX_RETRY_AFTER_S
from tokenpace.measure.bounds import MAX_REQUEST_S
from tokenpace.schedule.status import HoldStatus
from tokenpace.store import recent
from tokenpace.store.database import Store, utc

T = TypeVar("T")
log = logging.getLogger(__name__)
# A 429 without a usable Retry-After: providers count their limits per minute (requests and tokens per minute),
# so a minute lets the window turn. A job's interval would be safer for the quota, but one model without quota
# (OpenAI answers insufficient_quota with a 429 too) would then keep its plan's other models from ever running.
DEFAULT_HOLD_S = 60.0
LOOKBACK_S = MAX_REQUEST_S + MAX_RETRY_AFTER_S  # the longest a request's start can precede the end of its hold
Plan = tuple[str, str]  # provider, plan


def held_until(started_at: float, e2e_ms: float | None, retry_after_s: float | None) -> float:
    """Held until = started_at + e2e_ms / 1000 (the 429's arrival) + (retry_after_s, else DEFAULT_HOLD_S)."""
    wait = DEFAULT_HOLD_S if retry_after_s is None else min(max(retry_after_s, 0.0), MAX_RETRY_AFTER_S)
    took = e2e_ms / 1000 if e2e_ms is not None and 0 <= e2e_ms <= MAX_REQUEST_S * 1000 else 0.0
    return started_at + took + wait


def read_holds(store: Store, since: float, plan: Plan | None = None) -> dict[Plan, float]:
    """Per plan (one, or every one), the latest held_until of its 429s that started at ``since`` or later."""
    found: dict[Plan, float] = {}
    for provider, name, started_at, e2e_ms, retry_after_s in recent.rate_limited(store, since, *(plan or (None, None))):
        if math.isfinite(until := held_until(started_at, e2e_ms, retry_after_s)):
            found[provider, name] = max(until, found.get((provider, name), until))
    return found


Read = Callable[[Callable[[], T]], Awaitable[T]]  # the sampler's: on a thread, or inline on a virtual clock


class Holds:
    """Each plan's hold and the runs it skipped; ``read`` runs a store read, ``failed`` logs and counts an error."""

    def __init__(self, store: Store, read: Read[dict[Plan, float]], failed: Callable[[str, Exception], None]) -> None:
        self.store, self._read, self._failed = store, read, failed
        self._until: dict[Plan, float] = {}
        self._skipped: Counter[Plan] = Counter()
        self._last_skip: dict[Plan, float] = {}

    async def read(self, since: float, plan: Plan | None = None) -> None:
        """Hold each plan (one, or every one) as its 429s since ``since`` ask; a read that fails holds nothing (and
        is logged)."""
        try:
            found = await self._read(partial(read_holds, self.store, since, plan))
        except Exception as exc:
            self._failed("cannot read the rate limits" + (f" of {plan[0]}:{plan[1]}" if plan else ""), exc)
            return
        for held, until in found.items():
            if until > self._until.get(held, -math.inf):
                self._until[held] = until

    def skips(self, plan: Plan, now: float, name: str) -> bool:
        """Whether the plan is held at ``now``; a job that finds it held is counted as skipped."""
        until = self._until.get(plan)
        if until is None or until <= now:
            return False
        self._skipped[plan] += 1
        self._last_skip[plan] = now
        log.info("skipped %s: %s:%s was rate-limited, held for %.0f s more", name, *plan, until - now)
        return True

    def status(self) -> tuple[HoldStatus, ...]:
        """Every plan ever held: its hold's end and the runs skipped."""
        return tuple(
            HoldStatus(*plan, datetime.fromtimestamp(t, UTC), self._skipped[plan], utc(self._last_skip.get(plan)))
            for plan, t in sorted(self._until.items())
        )
