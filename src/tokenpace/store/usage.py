"""What a plan has spent: requests and tokens since a time, as a budget counts them; per day; per request.

Only sane counts are summed (finite, 0 to ``MAX_TOKEN_COUNT``, as :func:`timing.token_count` says): a
provider's impossible count gives way to tokenpace's own, so a stored Inf cannot stop the sampler and a
negative one cannot refund. Input is the provider's count, else o200k's; output the larger of the two.

Samples whose write failed (a full disk) or that the database refused (rescued to a file) were spent all the
same, so they are counted here too, the same way, in Python.

The same counts give what each endpoint spent per UTC day (:func:`daily`, which the board prices) and the tokens
a typical request of an endpoint's workload takes (:func:`typical`, the mean over its successful published
samples in a window: what a request costs, times its price).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from tokenpace.config.settings import Spend
from tokenpace.measure.sample import Sample
from tokenpace.measure.timing import MAX_TOKEN_COUNT, token_count
from tokenpace.store.database import Store


def _sane(column: str) -> str:
    """SQL for the column's value where it is a sane count (as timing.token_count says), NULL elsewhere."""
    return f"CASE WHEN {column} BETWEEN 0 AND {MAX_TOKEN_COUNT} THEN {column} END"


_SPENT_IN = f"COALESCE({_sane('provider_input_tokens')}, {_sane('input_tokens')}, 0)"
_OWN_OUT = f"COALESCE({_sane('output_tokens')}, 0)"
_SPENT_OUT = f"CASE WHEN {_sane('provider_output_tokens')} > {_OWN_OUT} THEN provider_output_tokens ELSE {_OWN_OUT} END"
_SQL = (
    f"SELECT COUNT(*), SUM({_SPENT_IN}), SUM({_SPENT_OUT})"  # noqa: S608 (no values: constants only)
    " FROM samples WHERE provider = ? AND plan = ? AND started_at >= ?"
)


def _one(s: Sample) -> tuple[int, int, int]:
    """One sample's use, counted as the SQL counts a stored one."""
    m = s.metrics
    provider_in, own_in = token_count(m.provider_input_tokens), token_count(s.input_tokens)
    input_tokens = provider_in if provider_in is not None else own_in or 0
    return 1, input_tokens, max(token_count(m.output_tokens) or 0, token_count(m.provider_output_tokens) or 0)


def spent(store: Store, provider: str, plan: str, since: float) -> Spend:
    """A plan's samples since ``since`` (UTC epoch seconds), stored or not: count, input and output tokens."""
    # fresh: on the writer thread, so every sample queued so far is in the database or in the lists below
    ((count, input_tokens, output_tokens),) = store.query(_SQL, (provider, plan, since), fresh=True)
    totals = [int(count), int(input_tokens or 0), int(output_tokens or 0)]
    # Read after the query, which ran after every write queued before it, so every lost sample is known by now.
    for s in (*store.unsaved, *store.rescued):
        if s.endpoint.provider == provider and s.endpoint.plan == plan and s.started_at.timestamp() >= since:
            totals = [a + b for a, b in zip(totals, _one(s), strict=True)]
    return Spend(*totals)


DAY = 86400
MAX_DAYS = 31  # a daily table longer than a month is a report, not a notice


@dataclass(frozen=True, slots=True)
class DaySpend:
    """An endpoint's use over one UTC day (day = floor(epoch seconds / 86400)), as budgets count it."""

    provider: str
    plan: str
    model: str
    day: int
    spend: Spend


def daily(store: Store, days: int, now: float) -> list[DaySpend]:
    """Each endpoint's use per UTC day, over the ``days`` days up to the one holding now; oldest day first.

    Published samples only (the schedule's, and one-shot runs published on purpose): pages show this, and a
    private one-shot run is nobody else's business. A budget counts those too (:func:`spent`).
    """
    today = int(now // DAY)
    first = today - max(1, min(days, MAX_DAYS)) + 1
    selects = [  # one indexed range per day: portable, where FLOOR and integer casts differ between databases
        f"SELECT {day}, provider, plan, model, COUNT(*), SUM({_SPENT_IN}), SUM({_SPENT_OUT}) FROM samples"  # noqa: S608
        " WHERE published = 1 AND started_at >= ? AND started_at < ? GROUP BY provider, plan, model"
        for day in range(first, today + 1)
    ]
    params = [t for day in range(first, today + 1) for t in (day * DAY, (day + 1) * DAY)]
    totals: dict[tuple[int, str, str, str], Spend] = defaultdict(Spend)
    for day, provider, plan, model, count, tokens_in, tokens_out in store.query(" UNION ALL ".join(selects), params):
        totals[(int(day), provider, plan, model)] += Spend(int(count), int(tokens_in or 0), int(tokens_out or 0))
    for s in (*store.unsaved, *store.rescued):  # spent all the same
        day, e = int(s.started_at.timestamp() // DAY), s.endpoint
        if first <= day <= today and s.published:
            totals[(day, e.provider, e.plan, e.model)] += Spend(*_one(s))
    return [DaySpend(p, plan, m, day, spend) for (day, p, plan, m), spend in sorted(totals.items())]


Key = tuple[str, str, str, str]  # provider, plan, model, workload


def typical(store: Store, since: float, until: float, workload: str | None = None) -> dict[Key, tuple[float, float]]:
    """Per endpoint x workload: the mean input and output tokens billed of its successful published samples."""
    sql = (
        f"SELECT provider, plan, model, workload, AVG({_SPENT_IN}), AVG({_SPENT_OUT}) FROM samples"  # noqa: S608
        " WHERE published = 1 AND ok = 1 AND started_at >= ? AND started_at <= ?"
    )
    params: list[object] = [since, until]
    if workload is not None:
        sql, params = sql + " AND workload = ?", [*params, workload]
    rows = store.query(sql + " GROUP BY provider, plan, model, workload", params)
    return {(p, plan, m, w): (float(i), float(o)) for p, plan, m, w, i, o in rows if i is not None and o is not None}
