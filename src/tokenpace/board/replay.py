"""The routing feed replayed as a policy: board/route.py's ranking core, fed the samples before an hour.

/routing scores the feed itself: at each hour's start, each candidate becomes a route Candidate whose rows are
built here from its samples over the feed's now-windows (30 min, 1 h) and its board window (72 h), and
route.rank picks as /route would have then; the policy sends the hour to its first endpoint in, None when none
is in (too few samples for the goal: a P90 needs 44, sufficiency.samples_needed). Two things differ from the
feed as served, both from what a Placed sample carries: the figures take every value a chart draws (the board's
rows also leave cached and cold samples out), and no endpoint is stale (no job's limit is replayed; an endpoint
that stopped answering is out by its success rate, or its choice goes unmeasured).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import cast

from tokenpace.board import numbers
from tokenpace.board.numbers import percentile_name
from tokenpace.board.regret import Past, Policy, Series
from tokenpace.board.route import BY, NOW_WINDOWS, By, Candidate, Goal, rank
from tokenpace.board.sufficiency import samples_needed
from tokenpace.config.endpoints import endpoint_name
from tokenpace.config.windows import DEFAULT_WINDOW, WINDOWS, Window
from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.stats import figure_sorted, success_rate, tail
from tokenpace.store.series import Placed
from tokenpace.store.tally import TAIL_QUANTILES
from tokenpace.store.windows import NO_FIGURE, EndpointRow

BOARD_WINDOW = WINDOWS[DEFAULT_WINDOW]  # the feed's own default: where its now-windows hold too few values
REPLAYED = (*NOW_WINDOWS, BOARD_WINDOW)
GOAL_OF = {key: cast(By, by) for by, key in BY.items() if key is not None}  # a figure's goal: speed, ttft, e2e


@dataclass(frozen=True, slots=True)
class Outcomes:
    """One endpoint's samples in time order: when each started (epoch s), and running counts of its successes
    and of the samples tokenpace cancelled (``ok[i]``: among the first i)."""

    first: Placed
    at: list[float]
    ok: list[int]
    cancelled: list[int]


def outcomes(samples: Sequence[Placed]) -> dict[str, Outcomes]:
    """Each endpoint's Outcomes, by name (the samples in time order)."""
    found: dict[str, Outcomes] = {}
    for s in samples:
        name = endpoint_name(s.provider, s.plan, s.model)
        o = found.get(name) or found.setdefault(name, Outcomes(s, [], [0], [0]))
        o.at.append(s.point.started_at.timestamp())
        o.ok.append(o.ok[-1] + s.point.ok)
        o.cancelled.append(o.cancelled[-1] + (s.point.error_kind == ErrorKind.CANCELLED.value))
    return found


def row_of(o: Outcomes, values: Series, key: str, window: Window, t: float) -> EndpointRow | None:
    """One endpoint's row over the window up to ``t`` (None without a sample in it): its judged samples and
    success rate, and the figure ``key`` (with its tails) of the values a chart draws; its other figures empty."""
    hi = bisect_left(o.at, t)
    lo = bisect_left(o.at, t - window.seconds, 0, hi)
    if lo == hi:
        return None
    n, ok, cancelled = hi - lo, o.ok[hi] - o.ok[lo], o.cancelled[hi] - o.cancelled[lo]
    ordered = sorted(values.between(t - window.seconds, t))
    figure = figure_sorted(ordered)
    speed, ttft, e2e = (figure if k == key else NO_FIGURE for k in ("output_speed", "ttft_ms", "e2e_ms"))
    first, start, end = o.first, datetime.fromtimestamp(o.at[lo], UTC), datetime.fromtimestamp(o.at[hi - 1], UTC)
    return EndpointRow(
        first.provider, first.plan, first.model, first.point.workload, "", False,
        samples=n, failures=n - ok, success_rate=success_rate(ok, n, cancelled),
        output_speed=speed, ttft_ms=ttft, e2e_ms=e2e, first_at=start, last_at=end, window_s=window.seconds,
        errors=(), cancelled=cancelled, usable=len(ordered), region=first.region,
        tails=tuple((key, tail(ordered, q)) for q in TAIL_QUANTILES),
    )  # fmt: skip


@dataclass
class Replay:
    """What the feed's goals share: each endpoint's Outcomes of the model being scored, and the candidates of
    the hour last asked for (the goals at P50 and P90 read the same rows)."""

    prices: Mapping[str, float]
    group: Sequence[Placed] = ()
    outcomes: dict[str, Outcomes] = field(default_factory=dict)
    kept: tuple[datetime, str] | None = None
    candidates: dict[str, Candidate] = field(default_factory=dict)

    def of(self, past: Past) -> dict[str, Candidate]:
        """Each endpoint's Candidate as of ``past.t``, by name."""
        if past.samples is not self.group:
            self.group, self.outcomes, self.kept = past.samples, outcomes(past.samples), None
        if self.kept != (past.t, past.key):
            t, empty = past.t.timestamp(), Series()
            self.candidates = {
                e: Candidate(
                    tuple((w, row_of(o, past.series.get(e, empty), past.key, w, t)) for w in REPLAYED),
                    None,
                    self.prices.get(e),
                )
                for e, o in self.outcomes.items()
            }
            self.kept = (past.t, past.key)
        return self.candidates


def feed(q: int, replay: Replay, min_samples: int) -> Policy:
    """The feed at P{q}: route.rank's first endpoint in, for the figure scored at P{q}."""
    name = percentile_name(q / 100)

    def pick(candidates: Sequence[str], past: Past) -> str | None:
        found = replay.of(past)
        mine = [c for e in candidates if (c := found.get(e)) and any(row for _, row in c.rows)]
        if not mine:
            return None
        model = next(row.model for _, row in mine[0].rows if row is not None)
        goal = Goal(model, GOAL_OF[past.key], q, min_samples=min_samples)
        chosen = rank(mine, goal, past.t.astimezone(UTC), board_window=BOARD_WINDOW).chosen
        return chosen[0].row.name if chosen else None

    spans = [*(numbers.interval(w.seconds) for w in NOW_WINDOWS), numbers.duration(BOARD_WINDOW.seconds)]
    enough = f"{min_samples} values" + (f" and the {samples_needed(q / 100)} a P90 needs" if q == 90 else "")
    text = (
        f"the routing feed's own ranking (/route) by the figure at {name}, as of the hour's start: each endpoint "
        f"ranked on the freshest of the last {', '.join(spans[:-1])} and {spans[-1]} that holds {enough}, out "
        "without them or when failing; the hour goes to its first endpoint in"
    )
    return Policy(f"the feed at {name}", text, pick)
