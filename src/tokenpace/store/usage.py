"""What a plan has spent: requests, tokens and dollars since a time, as a budget counts them; per day; per request.

Only sane counts are summed (finite, 0 to ``MAX_TOKEN_COUNT``, as :func:`timing.token_count` says): a
provider's impossible count gives way to tokenpace's own, so a stored Inf cannot stop the sampler and a
negative one cannot refund. Input is the provider's count, else o200k's; output the larger of the two.

Samples whose write failed (a full disk) or that the database refused (rescued to a file) were spent all the
same, so they are counted here too, the same way, in Python.

The same counts give what each endpoint spent per UTC hour (:func:`hourly`, which the board sums per day and
prices) and the tokens a typical request of an endpoint's workload takes (:func:`typical`, the mean over its
last successful published samples in a window: what a request costs, times its price).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tokenpace.config.prices import Price
from tokenpace.config.settings import Spend
from tokenpace.config.windows import RowKey
from tokenpace.measure.sample import Sample
from tokenpace.measure.timing import MAX_TOKEN_COUNT, token_count
from tokenpace.store.database import Store
from tokenpace.store.rollup import HOUR


def _sane(column: str) -> str:
    """SQL for the column's value where it is a sane count (as timing.token_count says), NULL elsewhere."""
    return f"CASE WHEN {column} BETWEEN 0 AND {MAX_TOKEN_COUNT} THEN {column} END"


_SPENT_IN = f"COALESCE({_sane('provider_input_tokens')}, {_sane('input_tokens')}, 0)"
_OWN_OUT = f"COALESCE({_sane('output_tokens')}, 0)"
_SPENT_OUT = f"CASE WHEN {_sane('provider_output_tokens')} > {_OWN_OUT} THEN provider_output_tokens ELSE {_OWN_OUT} END"
_SPENT_SQL = (
    "SELECT model, {bucket}, COUNT(*), SUM(" + _SPENT_IN + "), SUM(" + _SPENT_OUT + ")"  # noqa: S608 (no values)
    " FROM samples WHERE provider = ? AND plan = ? AND started_at >= ? GROUP BY model, 2"
)


def _one(s: Sample) -> tuple[int, int, int]:
    """One sample's use, counted as the SQL counts a stored one."""
    m = s.metrics
    provider_in, own_in = token_count(m.provider_input_tokens), token_count(s.input_tokens)
    input_tokens = provider_in if provider_in is not None else own_in or 0
    return 1, input_tokens, max(token_count(m.output_tokens) or 0, token_count(m.provider_output_tokens) or 0)


def spent(store: Store, provider: str, plan: str, since: float, prices: Mapping[str, Price] | None = None) -> Spend:
    """A plan's samples since ``since`` (UTC epoch seconds), stored or not: count, input and output tokens, and
    dollars at each model's price in ``prices`` (a model without one adds no dollars)."""
    return spent_since(store, provider, plan, (since,), prices)[0]


def spent_since(
    store: Store, provider: str, plan: str, sinces: Sequence[float], prices: Mapping[str, Price] | None = None
) -> tuple[Spend, ...]:
    """:func:`spent` since each of ``sinces`` (each window of a plan's budgets), read in one query."""
    latest = sorted(set(sinces), reverse=True)  # bucket i: since latest[i], before latest[i - 1]
    bucket = "CASE " + " ".join(f"WHEN started_at >= ? THEN {i}" for i in range(len(latest))) + " END"
    buckets: dict[tuple[int, str], Spend] = defaultdict(Spend)
    # fresh: on the writer thread, so every sample queued so far is in the database or in the lists below
    sql, params = _SPENT_SQL.format(bucket=bucket), (*latest, provider, plan, latest[-1])
    for model, i, count, input_tokens, output_tokens in store.query(sql, params, fresh=True):
        buckets[int(i), model] += Spend(int(count), int(input_tokens or 0), int(output_tokens or 0))
    # Read after the query, which ran after every write queued before it, so every lost sample is known by now.
    for s in (*store.unsaved, *store.rescued):
        at = s.started_at.timestamp()
        if s.endpoint.provider == provider and s.endpoint.plan == plan and at >= latest[-1]:
            buckets[next(i for i, t in enumerate(latest) if at >= t), s.endpoint.model] += Spend(*_one(s))
    found = prices or {}
    priced = [(i, used.priced(found.get(model))) for (i, model), used in buckets.items()]
    totals = {t: sum((used for i, used in priced if i <= latest.index(t)), Spend()) for t in latest}
    return tuple(totals[t] for t in sinces)


_HOURS_PER_STATEMENT = 48  # a week's first read is 168 hours: a few statements, each a UNION of indexed ranges


@dataclass(frozen=True, slots=True)
class HourSpend:
    """An endpoint's use over one UTC hour (hour = floor(epoch seconds / 3600)), as budgets count it."""

    provider: str
    plan: str
    model: str
    hour: int
    spend: Spend


def hourly(store: Store, hours: Iterable[int]) -> list[HourSpend]:
    """Each endpoint's use in each of the given UTC hours, sorted by hour, provider, plan and model.

    Published samples only (the schedule's, and one-shot runs published on purpose): pages show this, and an
    unpublished one-shot run is nobody else's business. A budget counts those too (:func:`spent`).
    """
    wanted = sorted(set(hours))
    totals: dict[tuple[int, str, str, str], Spend] = defaultdict(Spend)
    for first in range(0, len(wanted), _HOURS_PER_STATEMENT):
        chunk = wanted[first : first + _HOURS_PER_STATEMENT]
        selects = [  # one indexed range per hour: portable, where FLOOR and integer casts differ between databases
            f"SELECT {hour}, provider, plan, model, COUNT(*), SUM({_SPENT_IN}), SUM({_SPENT_OUT}) FROM samples"  # noqa: S608
            " WHERE published = 1 AND started_at >= ? AND started_at < ? GROUP BY provider, plan, model"
            for hour in chunk
        ]
        params = [t for hour in chunk for t in (hour * HOUR, (hour + 1) * HOUR)]
        for hour, provider, plan, model, n, tokens_in, tokens_out in store.query(" UNION ALL ".join(selects), params):
            totals[(int(hour), provider, plan, model)] += Spend(int(n), int(tokens_in or 0), int(tokens_out or 0))
    asked = set(wanted)
    for s in (*store.unsaved, *store.rescued):  # spent all the same
        hour, e = int(s.started_at.timestamp() // HOUR), s.endpoint
        if hour in asked and s.published:
            totals[(hour, e.provider, e.plan, e.model)] += Spend(*_one(s))
    return [HourSpend(p, plan, m, hour, spend) for (hour, p, plan, m), spend in sorted(totals.items())]


TYPICAL = 20  # the last this many successful samples make a typical request: its prompt size and output cap
_CHUNK = 100  # keys per statement: 700 parameters, well under SQLite's limit


def typical(store: Store, keys: Iterable[RowKey], since: float, until: float) -> dict[RowKey, tuple[float, float]]:
    """Per endpoint x workload: the mean input and output tokens billed of its last TYPICAL successful
    published samples in [since, until] (each an indexed read of a few rows, not a scan of the window)."""
    keys, found = list(dict.fromkeys(keys)), {}
    for first in range(0, len(keys), _CHUNK):
        chunk = keys[first : first + _CHUNK]
        one = (
            f"SELECT {{i}}, AVG(i), AVG(o) FROM (SELECT {_SPENT_IN} AS i, {_SPENT_OUT} AS o FROM samples"  # noqa: S608
            " WHERE provider = ? AND model = ? AND workload = ? AND started_at >= ? AND started_at <= ?"
            f" AND plan = ? AND published = 1 AND ok = 1 ORDER BY started_at DESC LIMIT {TYPICAL}) AS t"
        )
        sql = " UNION ALL ".join(one.format(i=i) for i in range(len(chunk)))
        params = [v for p, plan, m, w in chunk for v in (p, m, w, since, until, plan)]
        for i, tokens_in, tokens_out in store.query(sql, params):
            if tokens_in is not None and tokens_out is not None:
                found[chunk[int(i)]] = (float(tokens_in), float(tokens_out))
    return found
