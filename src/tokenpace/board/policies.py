"""The routing policies /routing scores (board/regret.py): each a pure function of the candidates and of what was
measured before the hour it picks for.

- cheapest first: the lowest blended price (board/cost.py), whatever its speed;
- fastest over the last 24 h: the best median of the figure over the day before;
- the feed at P50 and at P90: the best percentile of the figure over the last hour (the 24 h where no candidate
  has a sample in the last hour), as the routing feed ranks them.

Ties go to the endpoint first A to Z, so the same samples always give the same picks.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from tokenpace.board.numbers import duration, interval, percentile_name
from tokenpace.board.regret import POLICY_LOOKBACK_S, Past, Pick, Policy
from tokenpace.measure.catalogue import metric
from tokenpace.measure.metrics import percentile_sorted
from tokenpace.store.rollup import HOUR

RECENT_S = HOUR  # the feed's window where its candidates have samples in it
FEED_QUANTILES = (50, 90)


def _best(figures: Mapping[str, float], higher: bool) -> str | None:
    """The endpoint with the best figure (ties: A to Z); None for none."""
    return min(figures, key=lambda e: (-figures[e] if higher else figures[e], e)) if figures else None


def cheapest(prices: Mapping[str, float]) -> Pick:
    """Cheapest first: the candidate with the lowest blended price; None when none has a price."""

    def pick(candidates: Sequence[str], past: Past) -> str | None:
        return _best({e: prices[e] for e in candidates if e in prices}, higher=False)

    return pick


def best_median(span_s: float) -> Pick:
    """The candidate with the best median of the figure over the ``span_s`` before t; None when none has a
    sample in it."""

    def pick(candidates: Sequence[str], past: Past) -> str | None:
        medians = {e: statistics.median(v) for e in candidates if (v := past.values(e, span_s))}
        return _best(medians, metric(past.key).higher_better)

    return pick


def tail(q: float, higher_better: bool) -> float:
    """The percentile that is the figure's P{q} as a bad tail: the q-th of a time, the (100 - q)-th of a speed
    (the speed q % of requests reach)."""
    return 100 - q if higher_better else q


def recent_percentile(q: float) -> Pick:
    """The feed as its ranking reads the samples: the best P{q} (:func:`tail`) of the figure over the last hour,
    else over the last 24 h where no candidate has a sample in the last hour; None when none has one in either."""

    def pick(candidates: Sequence[str], past: Past) -> str | None:
        higher = metric(past.key).higher_better
        for span in (RECENT_S, POLICY_LOOKBACK_S):
            found = {
                e: percentile_sorted(sorted(v), tail(q, higher)) for e in candidates if (v := past.values(e, span))
            }
            figures = {e: f for e, f in found.items() if f is not None}
            if figures:
                return _best(figures, higher)
        return None

    return pick


def feed(q: int) -> Policy:
    """The feed at P{q}, as /routing names it and says how it picks."""
    name, recent, day = percentile_name(q / 100), interval(RECENT_S), duration(POLICY_LOOKBACK_S)
    text = (
        f"the candidate with the best {name} of the figure over the {recent} before the hour (of a speed, the "
        f"speed {q} % of requests reach), over the {day} where none has a sample in that {recent}"
    )
    return Policy(f"the feed at {name}", text, recent_percentile(q))


def policies(prices: Mapping[str, float]) -> list[Policy]:
    """The policies /routing scores, in the order it lists them (each reads the figure it is scored on)."""
    day = duration(POLICY_LOOKBACK_S)  # "24 h", as the issue names the policy
    return [
        Policy("cheapest first", "the candidate with the lowest blended price (3:1 input to output), whatever its "
               "speed", cheapest(prices)),
        Policy(f"fastest over the last {day}", f"the candidate with the best median of the figure over the {day} "
               "before the hour", best_median(POLICY_LOOKBACK_S)),
        *(feed(q) for q in FEED_QUANTILES),
    ]  # fmt: skip
