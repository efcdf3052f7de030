"""Routing regret as /routing reads it: the policies (board/policies.py) scored on the stored samples of one
workload over the last REGRET_DAYS (board/regret.py), each row a policy on one model from one region and one figure.

The samples are read from POLICY_LOOKBACK_S before the span, so the span's first hour is picked as it would have been.
A page lists at most MAX_ROUTING_ROWS rows (models, then regions, then figures, then policies) and says how many there
were: a store holding many models or regions must not make a page of megabytes.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from tokenpace.board import regions
from tokenpace.board.cost import blended
from tokenpace.board.numbers import duration
from tokenpace.board.outages import THIS_SERVER, seen_from
from tokenpace.board.policies import policies
from tokenpace.board.regret import POLICY_LOOKBACK_S, REGRET_DAYS, SCORED, Score, regret, score
from tokenpace.config.endpoints import Config, endpoint_name
from tokenpace.measure.catalogue import metric
from tokenpace.store.database import Store
from tokenpace.store.series import placed_series

MAX_ROUTING_ROWS = 400
FORMULA = " ".join(str(regret.__doc__).split())
HOURS_RULE = (
    "Each whole UTC hour, each policy picks an endpoint of the model from the samples before the hour (at most "
    f"{duration(POLICY_LOOKBACK_S)} of them); the best is, in hindsight, the endpoint with the best median of the "
    "figure over the hour's own samples; the hour's regret sets the chosen endpoint's median over the hour against "
    "the best's. A policy's figure is the mean regret of its hours, with a 95 % interval over hours (mean ± 1.96 "
    "s/√n, the low end cut at 1). An hour where the policy picked nothing, or picked an endpoint with no sample in "
    "it, is left out of the mean and counted apart. Only samples a chart draws count: published, successful, the "
    "figure not client-bound."
)


def read_scores(
    store: Store, config: Config, now: datetime, workload: str, min_samples: int = 3, days: int = REGRET_DAYS
) -> tuple[list[Score], list[str]]:
    """Every policy's score on the samples of ``workload`` over the ``days`` before ``now`` (the feed's goals
    holding to ``min_samples``, the board's), and the workloads the span's samples hold (A to Z)."""
    start = now - timedelta(days=days)
    placed = placed_series(store, since=start - timedelta(seconds=POLICY_LOOKBACK_S))
    workloads = sorted({s.point.workload for s in placed})
    mine = [s for s in placed if s.point.workload == workload]
    prices = {}
    for provider, plan, model in {(s.provider, s.plan, s.model) for s in mine}:
        price = config.price_of(provider, plan, model)
        if price is not None:
            prices[endpoint_name(provider, plan, model)] = blended(price)
    return score(mine, policies(prices, min_samples), start, now), workloads


def policy_dicts(min_samples: int) -> list[dict[str, str]]:
    """The policies as /routing and /methodology list them: name and how each picks (the feed holding to the
    board's ``min_samples``)."""
    return [{"name": p.name, "text": p.text} for p in policies({}, min_samples)]


def score_dict(s: Score, config: Config) -> dict[str, Any]:
    """A row as JSON-able data: the policy, where, which figure (the catalogue's label), the mean regret and its
    interval, and the hours scored and left out."""
    m, place = metric(s.key), regions.name(s.region, config) if s.region else THIS_SERVER
    return {
        "policy": s.policy, "model": s.model, "region": regions.token(s.region), "measured_from": place,
        "seen_from": seen_from(s.region, config), "figure": s.key, "figure_label": m.label, "figure_header": m.header,
        "mean_regret": s.mean, "regret_lo": s.lo, "regret_hi": s.hi, "hours": s.hours, "best_share": s.best_share,
        "no_pick": s.no_pick, "unmeasured": s.unmeasured,
    }  # fmt: skip


def figure_names() -> list[str]:
    """The figures scored, as a sentence names them."""
    return [metric(k).noun for k in SCORED]
