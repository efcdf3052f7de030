"""What a plan has spent: requests and tokens since a time, as a budget counts them.

Only sane counts are summed (finite, 0 to ``MAX_TOKEN_COUNT``, as :func:`timing.token_count` says): a
provider's impossible count gives way to tokenpace's own, so a stored Inf cannot stop the sampler and a
negative one cannot refund. Input is the provider's count, else o200k's; output the larger of the two.

Samples whose write failed (a full disk) or that the database refused (rescued to a file) were spent all the
same, so they are counted here too, the same way, in Python.
"""

from __future__ import annotations

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
