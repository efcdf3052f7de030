"""When samples last started: an endpoint's, so the schedule resumes after a restart, and anyone's, for /health;
when an endpoint's last request ended, so its idle time, and so cold starts, survive a restart; and a plan's
recent 429s, so its back-off (schedule/backoff.py) does too."""

from __future__ import annotations

from dataclasses import dataclass

from tokenpace.config.endpoints import Endpoint
from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.sample import LOCAL
from tokenpace.store.database import Store


@dataclass(frozen=True, slots=True)
class Totals:
    """How many samples the store holds, and when the latest started (UTC epoch seconds; None if none)."""

    samples: int
    last_started: float | None


def last_started(
    store: Store, *, provider: str, plan: str, model: str, workload: str, region: str = LOCAL
) -> float | None:
    """When the endpoint's latest sample of a workload started, or None if it has none.

    One cancelled at shutdown is left out, so that a run cut short is retried soon rather than an interval later.
    """
    rows = store.query(  # walks the (provider, model, workload, started_at) index backwards
        "SELECT started_at FROM samples WHERE provider = ? AND model = ? AND workload = ? AND plan = ? AND region = ?"
        " AND (error_kind IS NULL OR error_kind <> ?) ORDER BY started_at DESC LIMIT 1",
        (provider, model, workload, plan, region, ErrorKind.CANCELLED.value),
    )
    return float(rows[0][0]) if rows else None


def last_ended(store: Store, endpoint: Endpoint, region: str = LOCAL) -> float | None:
    """When the latest request to the endpoint's model at its address ended (start + end-to-end), any workload
    or plan of its provider, measured from the region; None if the store has none.

    One query per workload, each walking the (provider, model, workload, started_at) index backwards to its
    first row at the address, rather than every row of the endpoint: a store keeps years of them.
    """
    provider, model = endpoint.provider, endpoint.model
    rows = store.query("SELECT DISTINCT workload FROM samples WHERE provider = ? AND model = ?", (provider, model))
    ends = []
    for (workload,) in rows:
        found = store.query(
            "SELECT started_at, e2e_ms FROM samples WHERE provider = ? AND model = ? AND workload = ?"
            " AND base_url = ? AND region = ? ORDER BY started_at DESC LIMIT 1",
            (provider, model, workload, endpoint.base_url, region),
        )
        ends += [float(started) + (e2e or 0.0) / 1000 for started, e2e in found]
    return max(ends, default=None)


def rate_limited(
    store: Store, since: float, provider: str | None = None, plan: str | None = None
) -> list[tuple[str, str, float, float | None, float | None]]:
    """(provider, plan, started_at, e2e_ms, retry_after_s) of the rate-limited samples that started at ``since``
    or later: one plan's (every model and region of it: a plan is one account's quota), or every plan's."""
    sql = "SELECT provider, plan, started_at, e2e_ms, retry_after_s FROM samples"
    sql += " WHERE started_at >= ? AND error_kind = ?"
    params: list[object] = [since, ErrorKind.RATE_LIMITED.value]
    if provider is not None and plan is not None:
        sql, params = sql + " AND provider = ? AND plan = ?", [*params, provider, plan]
    return [(p, name, float(t), e2e, after) for p, name, t, e2e, after in store.query(sql, params)]


def totals(store: Store) -> Totals:
    """Every sample counted, and the latest start, read at once: not behind writes queued on a locked store."""
    ((count, last),) = store.query("SELECT COUNT(*), MAX(started_at) FROM samples", ordered=False)
    return Totals(int(count), None if last is None else float(last))
