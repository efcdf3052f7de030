"""An endpoint row as data: the one JSON shape of an :class:`EndpointRow`, wherever a row is written out.

The leaderboard's JSON (``/leaderboard.json`` and ``tokenpace leaderboard --json``), the endpoint page's twin
(``rows``) and the model page's (``endpoints``) all write a row with :func:`row_dict`, and the CSV reads its
figures with :func:`figure_dict`: a program reading one of them can read the others. Before, the pages' twins
wrote the dataclass as it is (no name, headline, ok or counted; errors as pairs), a second shape of one row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from tokenpace.board.medians import ModelRow
from tokenpace.board.regions import token
from tokenpace.board.sufficiency import as_shown, tails_withheld
from tokenpace.measure.stats import Figure, with_n
from tokenpace.store.windows import METRICS, EndpointRow

FAILING_BELOW = 0.9  # a success rate under this is marked beside the endpoint's name: more than 1 request in 10 fails
# A canary pass rate under this is marked "fast but wrong" beside the name: more than 1 answer in 20 did not begin
# with the line the prompt asked for. Its speed is of answers that may not be to the question.
WRONG_BELOW = 0.95


def failing(r: EndpointRow) -> bool:
    """Whether the row's success rate is low enough to say so where the eye is (a row without samples: no)."""
    return r.success_rate is not None and r.success_rate < FAILING_BELOW


def fast_but_wrong(r: EndpointRow) -> bool:
    """Whether the row's canary pass rate is below WRONG_BELOW ("fast but wrong"; no verdict yet: no)."""
    return r.canary_rate is not None and r.canary_rate < WRONG_BELOW


def client_bound_only(rows: Sequence[EndpointRow], included: bool) -> int:
    """The rows' successful samples where no row has a figure because every one was client-bound and left out;
    0 otherwise. A page says "N successful samples, all client-bound: include them" rather than draw empty charts
    (whose "no successful samples" contradicted the rows' 100 % ok)."""
    if included or any(r.counted for r in rows) or not any(r.client_bound for r in rows):
        return 0
    return sum(min(r.ok, r.client_bound) for r in rows)  # cached or cold samples are not the client's


def iso(t: datetime | None) -> str | None:
    return None if t is None else t.isoformat()


def figure_dict(f: Figure, statistic: str) -> dict[str, Any]:
    """A metric's figure with its headline (the window's statistic: mean or median) beside n and percentiles;
    a tail too few samples bound is null, and ``withheld`` says why (sufficiency.py)."""
    return {"headline": f.headline(statistic), **with_n(as_shown(f)), "withheld": tails_withheld(f)}


TRUTH_FIELDS = ("cached", "cold", "canary_checked", "canary_passed", "canary_rate", "fast_but_wrong")


def truth_dict(r: EndpointRow) -> dict[str, Any]:
    """What the row says beyond timing (issue 22): samples counted apart, the canary's verdicts and its badge."""
    values = (r.cached, r.cold, r.canary_checked, r.canary_passed, r.canary_rate, fast_but_wrong(r))
    return dict(zip(TRUTH_FIELDS, values, strict=True))


def model_dict(m: ModelRow) -> dict[str, Any]:
    """A model row as JSON-able data, its region as a URL spells it and its pooled canary pass rate."""
    return dataclasses.asdict(m) | {"region": token(m.region), "canary_rate": m.canary_rate}


def row_dict(r: EndpointRow, statistic: str) -> dict[str, Any]:
    """The row as JSON-able data; times are ISO 8601 UTC, errors a kind -> count object, commonest first."""
    return {
        "name": r.name, "provider": r.provider, "plan": r.plan, "model": r.model, "workload": r.workload,
        "region": token(r.region),
        "protocol": r.protocol, "simulated": r.simulated, "samples": r.samples, "ok": r.ok,
        "failures": r.failures, "cancelled": r.cancelled, "success_rate": r.success_rate,
        "rate_limited": r.rate_limited, "availability": r.availability,
        "counted": r.counted, "client_bound": r.client_bound, "one_shot": r.one_shot,
        **truth_dict(r),
        **{m: figure_dict(r.figure(m), statistic) for m in METRICS},
        "cold_ttft_ms": figure_dict(r.cold_ttft_ms, statistic),
        "first_at": iso(r.first_at), "last_at": iso(r.last_at), "window_s": r.window_s,
        "errors": dict(r.errors),
    }  # fmt: skip
