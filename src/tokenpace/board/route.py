"""A routing feed's core: one model's endpoints ranked for a goal, each in or out, and why (issue 33).

A goal is what to send traffic by: output speed, TTFT or end-to-end time at P50 or P90, or price, with limits
(``max_price``, ``min_success``). P90 is the tail a request can count on nine times in ten: the 90th percentile
of a time, the 10th of a speed (the speed 90 % of requests reach). Price is the blended price, $ per 1M tokens
(cost.blended). The core is pure: it ranks :class:`Candidate` s as of ``now`` and never reads the clock, so a
route can be replayed at any past hour from the samples before it (``route_read.read_route`` with that hour).

Each endpoint takes its figure from the freshest window that holds enough of its values: the last 30 minutes,
the last hour (windows an uncapped plan's cadence fills; OpenRouter routes by its last 30 minutes too), else the
board's window, and says which, with every window's n. Enough: the board's ``min_samples``, and at P90 the
samples a P90 needs (sufficiency.samples_needed: 44 at 99 %). An endpoint is out when it has no figure, too few
values, is stale (no sample for its job's stale limit, or no job measures it any more), succeeds less often than
``min_success`` in that window or a fresher one holding enough judged samples (default: the board's failing
bound), is unpriced where price matters, or costs
more than ``max_price``. The ones in are ranked as the board ranks (ranking.interval_ranks): an endpoint is behind
only those whose 95 % interval lies wholly better, so overlapping ones tie.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from tokenpace.board import numbers
from tokenpace.board.ranking import interval_ranks
from tokenpace.board.rows import FAILING_BELOW
from tokenpace.board.rules import UNMEASURED_LIMIT
from tokenpace.board.sufficiency import samples_needed
from tokenpace.config.windows import DEFAULT_WINDOW, WINDOWS, Window
from tokenpace.store.database import epoch
from tokenpace.store.windows import EndpointRow

By = Literal["speed", "ttft", "e2e", "price"]
BY: dict[str, str | None] = {"speed": "output_speed", "ttft": "ttft_ms", "e2e": "e2e_ms", "price": None}
HIGHER_FIRST = {"speed": True, "ttft": False, "e2e": False, "price": False}
PERCENTILES = (50, 90)
# The now-windows, freshest first: tried before the board's window, each where it holds enough values.
NOW_WINDOWS = (Window("30m", 30 * 60, "median", "last 30 min"), Window("1h", 3600, "median", "last 1 h"))


@dataclass(frozen=True, slots=True)
class Goal:
    """What a route ranks by and holds to: ``by`` at percentile ``p`` (price has none), in ``region`` (a URL's
    value, board/regions.py), at most ``max_price`` ($ per 1M tokens, blended), at least ``min_success``."""

    model: str
    by: By = "speed"
    p: int = 50
    workload: str = "1k"
    region: str = "all"
    max_price: float | None = None
    min_success: float = FAILING_BELOW
    min_samples: int = 3

    @property
    def needed(self) -> int:
        """Values a figure needs to be ranked on: min_samples, and at P90 what a P90 needs."""
        return max(self.min_samples, samples_needed(0.9) if self.p == 90 and self.by != "price" else 0)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One endpoint as of a time: its rows over the now-windows and the board's window (freshest first, the
    board's last; a window without a sample of it has none), its stale limit (rules.StaleAfter's: None never,
    rules.UNMEASURED_LIMIT no job measures it) and its blended price (None: unknown)."""

    rows: tuple[tuple[Window, EndpointRow | None], ...]
    stale_after: float | None = None
    price: float | None = None


@dataclass(frozen=True, slots=True)
class Pick:
    """An endpoint's place on a route: ``rank`` (None when out), ``tied`` as the board says "=N", the figure
    and its 95 % interval over ``n`` values of ``window``, every window's n, how old its last sample is, its
    success share in that window, its price, and ``reasons`` it is out (none: it is in)."""

    row: EndpointRow
    window: Window
    figure: float | None
    interval: tuple[float, float] | None
    n: int
    counts: tuple[tuple[str, int], ...]  # (window name, n) of each window tried
    now_window: bool  # the figure is from a now-window, not the board's
    age_s: float | None  # now - the last sample
    stale: bool
    success: float | None
    price: float | None
    reasons: tuple[tuple[str, str], ...]  # (code, one line) of each reason it is out
    rank: int | None = None
    tied: bool = False

    @property
    def chosen(self) -> bool:
        return not self.reasons


@dataclass(frozen=True, slots=True)
class Route:
    """A goal's route as of ``now``: the endpoints in, best first, then those out, by name."""

    goal: Goal
    now: datetime
    board_window: Window
    picks: tuple[Pick, ...]

    @property
    def chosen(self) -> tuple[Pick, ...]:
        return tuple(p for p in self.picks if p.chosen)


def value_of(row: EndpointRow, goal: Goal, price: float | None) -> tuple[float | None, tuple[float, float] | None, int]:
    """(figure, its 95 % interval, its n) of a row for a goal: P50 from the figure, P90 from its tail (a speed's
    P10), a price with no interval but the point, over the row's counted samples."""
    metric = BY[goal.by]
    if metric is None:
        return price, None if price is None else (price, price), row.counted
    if goal.p == 50:
        f = row.figure(metric)
        return f.p50, f.interval("median"), f.n
    t = row.tail(metric, 0.1 if HIGHER_FIRST[goal.by] else 0.9)
    return t.value, None if t.lo is None or t.hi is None else (t.lo, t.hi), t.n


def _window_of(candidate: Candidate, goal: Goal) -> tuple[Window, EndpointRow, tuple[tuple[str, int], ...]]:
    """The freshest window whose row has enough values for the goal, else the board's (the last); every n."""
    counts: list[tuple[str, int]] = []
    present = [(w, row) for w, row in candidate.rows if row is not None]
    found = present[-1]  # the board's window where it has a row; else the widest that has one
    enough = None
    for window, row in candidate.rows:
        n = 0 if row is None else value_of(row, goal, candidate.price)[2]
        counts.append((window.name, n))
        if enough is None and row is not None and n >= goal.needed:
            enough = (window, row)
    window, row = enough or found
    return window, row, tuple(counts)


def _failing_window(candidate: Candidate, goal: Goal, chosen: Window) -> tuple[Window, float] | None:
    """The first window, freshest first up to the chosen one, whose success share is under min_success, over at
    least ``goal.needed`` judged samples where fresher than the chosen (an endpoint failing every request for the
    last half hour has no figure there, and must not route on its older window's); None where none is."""
    for window, row in candidate.rows:
        judged = 0 if row is None else row.samples - row.cancelled
        rate = None if row is None else row.success_rate
        enough = window.name == chosen.name or judged >= max(goal.needed, 1)
        if rate is not None and enough and rate < goal.min_success:
            return window, rate
        if window.name == chosen.name:
            return None
    return None


def _age(candidate: Candidate, now: datetime) -> float | None:
    last = [r.last_at for _, r in candidate.rows if r is not None and r.last_at is not None]
    return None if not last else max(0.0, epoch(now) - epoch(max(last)))


def pick_of(candidate: Candidate, goal: Goal, now: datetime) -> Pick:
    """One endpoint's pick, unranked: its window, figure, and each reason it is out."""
    window, row, counts = _window_of(candidate, goal)
    figure, interval, n = value_of(row, goal, candidate.price)
    age = _age(candidate, now)
    limit = candidate.stale_after
    unmeasured = limit == UNMEASURED_LIMIT
    stale = unmeasured or (limit is not None and age is not None and age > limit)
    reasons = []
    if figure is None:
        reasons.append(("unpriced" if goal.by == "price" else "no_figure", _no_figure(goal)))
    elif n < goal.needed:
        reasons.append(("too_few", f"too few: n={n} < {goal.needed} in the {window.label}"))
    if unmeasured:
        reasons.append(("unmeasured", "not measured any more: no running job samples it"))
    elif stale:
        ago, over = numbers.duration(age or 0.0), numbers.duration(limit or 0.0)
        reasons.append(("stale", f"stale: last sample {ago} ago, over its limit of {over}"))
    failing = _failing_window(candidate, goal, window)
    if failing is not None:
        share = f"{failing[1]:.1%} < {goal.min_success:.1%}"
        reasons.append(("min_success", f"succeeds {share} in the {failing[0].label}"))
    if goal.max_price is not None and goal.by != "price" and candidate.price is None:
        reasons.append(("unpriced", "no price to hold to max_price"))
    if goal.max_price is not None and candidate.price is not None and candidate.price > goal.max_price:
        reasons.append(("max_price", f"price ${candidate.price:g} per 1M tokens > max_price ${goal.max_price:g}"))
    now_window = window.name in {w.name for w in NOW_WINDOWS}
    return Pick(row, window, figure, interval, n, counts, now_window, age, stale, row.success_rate, candidate.price,
                tuple(reasons))  # fmt: skip


def _no_figure(goal: Goal) -> str:
    return "no price known" if goal.by == "price" else f"no {goal.by} figure at P{goal.p} in any window"


def rank(
    candidates: Sequence[Candidate], goal: Goal, now: datetime, *, board_window: Window = WINDOWS[DEFAULT_WINDOW]
) -> Route:
    """The route of a goal as of ``now``: each endpoint's :func:`pick_of`; those in sorted best first (ties by
    name) and ranked by ranking.interval_ranks, tied where they share a rank; those out after them, by name."""
    picks = [pick_of(r, goal, now) for r in candidates if any(row is not None for _, row in r.rows)]
    picks.sort(key=lambda p: p.row.name)
    higher = HIGHER_FIRST[goal.by]
    chosen = sorted((p for p in picks if p.chosen), key=lambda p: -(p.figure or 0.0) if higher else p.figure or 0.0)
    ranks = interval_ranks([p.interval for p in chosen], higher)
    shared = {r: ranks.count(r) for r in ranks}
    ranked = [replace(p, rank=r, tied=shared[r] > 1) for p, r in zip(chosen, ranks, strict=True)]
    return Route(goal, now, board_window, (*ranked, *(p for p in picks if not p.chosen)))
