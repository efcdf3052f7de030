"""Raw samples as CSV, and ``/health``: the routes for programs rather than people.

The CSV has the columns every export has (``store.columns.EXPORTED``, as ``run --output`` writes them), which
leave out what could leak or bloat. Cells are also scrubbed of every secret this process knows (key variables'
values, header values), in case a provider echoed one in an error, and made safe for a spreadsheet (text.csv_row).
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from tokenpace.config.endpoints import Config
from tokenpace.errors import BadRequest, StoreError
from tokenpace.store import recent
from tokenpace.store.columns import EXPORTED
from tokenpace.store.database import Store, epoch
from tokenpace.store.export import Filter, sample_batches
from tokenpace.text import csv_row

RAW_COLUMNS = EXPORTED  # raw means every sample: source, published and client_bound say which the board counts
_STARTED = RAW_COLUMNS.index("started_at")


def secrets(config: Config) -> list[str]:
    """Every secret value this process could know: API keys from the environment and header values."""
    found = {os.environ.get(e.api_key_env, "") for e in config.endpoints if e.api_key_env}
    found |= {value for e in config.endpoints for _, value in e.headers}
    return sorted((s for s in found if len(s) >= 4), key=len, reverse=True)  # shorter ones would mangle text


def parse_since(value: str) -> float:
    """``since`` as UTC epoch seconds: epoch seconds or an ISO 8601 time (naive means UTC)."""
    try:
        return float(value)
    except ValueError:
        pass
    # An unencoded "+00:00" reaches us as " 00:00" (a "+" in a query string is a space): put it back.
    value = re.sub(r" (\d\d:?\d\d)$", r"+\1", value)
    try:
        return epoch(datetime.fromisoformat(value))
    except ValueError:
        raise BadRequest(f"since {value!r}: give epoch seconds or an ISO 8601 time such as 2025-01-31T12:00Z") from None


def _filter(params: Mapping[str, str]) -> Filter:
    # An empty value (a form's "all") means no filter.
    picked = {name: params.get(name) or None for name in ("provider", "plan", "model", "workload")}
    since = parse_since(params["since"]) if params.get("since") else None
    return Filter(**picked, since=since)


def _clean(value: Any, hidden: Sequence[str], column: int) -> Any:
    if column == _STARTED and value is not None:
        return datetime.fromtimestamp(value, UTC).isoformat()
    if isinstance(value, str):
        for secret in hidden:
            value = value.replace(secret, "***")
    return value


def samples_csv(store: Store, config: Config, params: Mapping[str, str]) -> Iterator[str]:
    """CSV text, header first, oldest sample first, read in batches by (started_at, id)."""
    where = _filter(params)  # raises BadRequest before the response starts
    hidden = secrets(config)

    def lines() -> Iterator[str]:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(RAW_COLUMNS)
        for rows in sample_batches(store, where):
            for row in rows:
                writer.writerow(csv_row(_clean(v, hidden, i) for i, v in enumerate(row)))
            yield buf.getvalue()
            buf.seek(0)
            buf.truncate()

    return lines()


def health(store: Store, scheduler: Mapping[str, Any] | None, now: datetime) -> tuple[bool, dict[str, Any]]:
    """Whether the service is well, and the facts that say so: store reachable and not locked by another
    process, samples, scheduler. It waits on no queued write, so it answers while the store is locked."""
    facts: dict[str, Any] = {"store": {"reachable": False}, "scheduler": scheduler or {"running": False}}
    busy = False
    try:
        held = recent.totals(store)
        busy = store.busy()
    except StoreError as exc:  # its message never holds a password
        facts["store"]["error"] = str(exc)
    else:
        age = None if held.last_started is None else round(epoch(now) - held.last_started, 3)
        facts["store"] = {"reachable": True, "samples": held.samples, "last_sample_age_s": age, "busy": busy}
        if busy:  # reads go on (WAL), writes queue: said at once rather than after the queue's busy timeouts
            facts["store"]["error"] = "the store is busy: another process holds its write lock, so writes wait"
    # Samples whose write failed are held in memory, not lost, but a store that refuses writes is not well.
    facts["store"]["unsaved"] = len(store.unsaved)
    facts["store"]["rescued"] = len(store.rescued)  # refused for their data, kept in the rescue file: not lost
    ok = (
        facts["store"]["reachable"]
        and not busy
        and not store.unsaved
        and (scheduler is None or bool(scheduler.get("running")))
    )
    return ok, {"ok": ok, **facts}
