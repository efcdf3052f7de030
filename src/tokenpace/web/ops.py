"""Raw samples as CSV, and ``/health``: the routes for programs rather than people.

The CSV leaves out what could leak or bloat: the base URL (some users put a key in its query string), the key
variable's name, headers (never stored), the prompt text and the raw timeline. Cells are also scrubbed of every
secret this process knows (key variables' values, header values), in case a provider echoed one in an error.
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
from tokenpace.store.database import Store, epoch

COLUMNS = (
    *("id", "run_id", "provider", "plan", "model", "protocol", "simulated", "workload", "started_at"),
    *("ok", "error_kind", "error_message", "http_status", "ttft_ms", "ttfb_ms", "output_speed", "e2e_ms"),
    *("t100_ms", "output_tokens", "reasoning_tokens", "input_tokens", "provider_input_tokens"),
    *("provider_output_tokens", "prompt_fingerprint", "group_id", "tool_version"),
    *("source", "published", "client_bound"),  # raw means every sample: these say which the board counts
)
FILTERS = ("provider", "plan", "model", "workload")
BATCH = 5000  # rows per query: memory stays flat however many samples there are
_STARTED = COLUMNS.index("started_at")
_ID = COLUMNS.index("id")


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


def _query(params: Mapping[str, str]) -> tuple[str, list[Any]]:
    where: list[str] = ["1 = 1"]
    args: list[Any] = []
    for name in FILTERS:
        if params.get(name):
            where.append(f"{name} = ?")
            args.append(params[name])
    if params.get("since"):
        where.append("started_at >= ?")
        args.append(parse_since(params["since"]))
    return " AND ".join(where), args


def _clean(value: Any, hidden: Sequence[str], column: int) -> Any:
    if column == _STARTED and value is not None:
        return datetime.fromtimestamp(value, UTC).isoformat()
    if isinstance(value, str):
        for secret in hidden:
            value = value.replace(secret, "***")
    return value


def samples_csv(store: Store, config: Config, params: Mapping[str, str]) -> Iterator[str]:
    """CSV text, header first, oldest sample first, read in batches by (started_at, id)."""
    where, args = _query(params)  # raises BadRequest before the response starts
    hidden = secrets(config)
    sql = f"SELECT {', '.join(COLUMNS)} FROM samples WHERE {where} AND (started_at > ? OR (started_at = ? AND id > ?))"  # noqa: S608
    sql += f" ORDER BY started_at, id LIMIT {BATCH}"

    def lines() -> Iterator[str]:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(COLUMNS)
        after: tuple[float, str] = (float("-inf"), "")
        while True:
            rows = store.query(sql, [*args, after[0], after[0], after[1]])
            for row in rows:
                writer.writerow([_clean(v, hidden, i) for i, v in enumerate(row)])
            yield buf.getvalue()
            buf.seek(0)
            buf.truncate()
            if len(rows) < BATCH:
                return
            after = (rows[-1][_STARTED], rows[-1][_ID])

    return lines()


def health(store: Store, scheduler: Mapping[str, Any] | None, now: datetime) -> tuple[bool, dict[str, Any]]:
    """Whether the service is well, and the facts that say so: store reachable, samples, scheduler."""
    facts: dict[str, Any] = {"store": {"reachable": False}, "scheduler": scheduler or {"running": False}}
    try:
        ((count, last),) = store.query("SELECT COUNT(*), MAX(started_at) FROM samples")
    except StoreError as exc:  # its message never holds a password
        facts["store"]["error"] = str(exc)
    else:
        age = None if last is None else round(epoch(now) - float(last), 3)
        facts["store"] = {"reachable": True, "samples": int(count), "last_sample_age_s": age}
    # Samples whose write failed are held in memory, not lost, but a store that refuses writes is not well.
    facts["store"]["unsaved"] = len(store.unsaved)
    ok = facts["store"]["reachable"] and not store.unsaved and (scheduler is None or bool(scheduler.get("running")))
    return ok, {"ok": ok, **facts}
