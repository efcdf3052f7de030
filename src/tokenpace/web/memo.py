"""Figures recomputed only when the store has taken something new, or a minute has passed.

A 72 h leaderboard over a million samples takes seconds to compute (bench/aggregate.py), while the page, its
JSON twin, its CSV and ``/metrics`` ask for the same few figures again and again between two samples. A minute
at most, because a window's edge moves with the clock and another process may write to the same database.
While one request recomputes a value, others get the previous one rather than queueing a second query.
The same memo holds whole rendered pages (app.py): :meth:`Memo.peek` answers a warm page on the event loop
with a dict lookup, no thread and no template.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from tokenpace.store.database import Store

T = TypeVar("T")
MAX_AGE_S = 60.0
PAGE_REFRESH_S = 5.0  # a rendered page outlives new samples this long: a flood then costs one render per page
MAX_ITEMS = 256  # distinct queries kept; past that the memo starts over rather than track recency


class Memo:
    """``get(key, compute)``: the value computed for ``key`` since the store's last write, else a fresh one."""

    def __init__(self, store: Store, max_age_s: float = MAX_AGE_S, min_age_s: float = 0.0, stale_s: float = 0.0):
        self._store = store
        self._max_age_s = max_age_s
        self._min_age_s = min_age_s  # younger than this, a value stands even if the store has changed
        self._stale_s = stale_s  # younger than this, peek(stale=True) answers it while the next is computed
        self._items: dict[Hashable, tuple[int, float, Any]] = {}
        self._computing: set[Hashable] = set()
        self._lock = threading.Lock()  # views run on Starlette's thread pool

    def peek(self, key: Hashable, stale: bool = False) -> Any | None:
        """The value for ``key`` if it is fresh, or the last one while it is recomputed; else None.

        ``stale``: also the last one if it is younger than ``stale_s``, so that no one waits for the next, under
        a flood, while a quiet board's visitor still waits for the sample stored since a page an hour old.
        """
        writes = self._store.writes
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            recent = time.monotonic() - hit[1] < self._stale_s
            if self._fresh(hit, writes) or (stale and recent) or key in self._computing:
                return hit[2]
        return None

    def _fresh(self, hit: tuple[int, float, Any], writes: int) -> bool:
        age = time.monotonic() - hit[1]
        return age < self._min_age_s or (hit[0] == writes and age < self._max_age_s)

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        writes = self._store.writes  # read before computing: a write during it makes the next get recompute
        with self._lock:
            hit = self._items.get(key)
            if hit is not None and self._fresh(hit, writes):
                fresh: T = hit[2]
                return fresh
            if hit is not None and key in self._computing:
                # One recompute at a time: meanwhile the last answer, not a second copy of the same query.
                last: T = hit[2]
                return last
            self._computing.add(key)
        try:
            value = compute()
        finally:
            with self._lock:
                self._computing.discard(key)
        with self._lock:
            if len(self._items) >= MAX_ITEMS:
                self._items.clear()
            self._items[key] = (writes, time.monotonic(), value)
        return value
