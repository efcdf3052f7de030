"""The routing policies /routing scores (board/regret.py): each a pure function of the candidates and of what was
measured before the hour it picks for.

- cheapest first: the lowest blended price (board/cost.py), whatever its speed;
- fastest over the last 24 h: the best median of the figure over the day before;
- the feed at P50 and at P90: the routing feed's own ranking (board/route.py) as of the hour's start, replayed
  from the samples before it (board/replay.py).

Ties go to the endpoint first A to Z, so the same samples always give the same picks.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from tokenpace.board.numbers import duration
from tokenpace.board.regret import Chooser, Past, Policy
from tokenpace.board.replay import Replay, feed
from tokenpace.measure.catalogue import metric
from tokenpace.store.rollup import HOUR

FASTEST_SPAN_S = 24 * HOUR  # "fastest over the last 24 h"
FEED_QUANTILES = (50, 90)


def _best(figures: Mapping[str, float], higher: bool) -> str | None:
    """The endpoint with the best figure (ties: A to Z); None for none."""
    return min(figures, key=lambda e: (-figures[e] if higher else figures[e], e)) if figures else None


def cheapest(prices: Mapping[str, float]) -> Chooser:
    """Cheapest first: the candidate with the lowest blended price; None when none has a price."""

    def pick(candidates: Sequence[str], past: Past) -> str | None:
        return _best({e: prices[e] for e in candidates if e in prices}, higher=False)

    return pick


def best_median(span_s: float) -> Chooser:
    """The candidate with the best median of the figure over the ``span_s`` before t; None when none has a
    sample in it."""

    def pick(candidates: Sequence[str], past: Past) -> str | None:
        medians = {e: statistics.median(v) for e in candidates if (v := past.values(e, span_s))}
        return _best(medians, metric(past.key).higher_better)

    return pick


def policies(prices: Mapping[str, float], min_samples: int = 3) -> list[Policy]:
    """The policies /routing scores, in the order it lists them (each reads the figure it is scored on); the
    feed's goals hold to ``min_samples`` (the board's minimum)."""
    day = duration(FASTEST_SPAN_S)  # "24 h", as the issue names the policy
    replay = Replay(prices)
    return [
        Policy("cheapest first", "the candidate with the lowest blended price (3:1 input to output), whatever its "
               "speed", cheapest(prices)),
        Policy(f"fastest over the last {day}", f"the candidate with the best median of the figure over the {day} "
               "before the hour", best_median(FASTEST_SPAN_S)),
        *(feed(q, replay, min_samples) for q in FEED_QUANTILES),
    ]  # fmt: skip
