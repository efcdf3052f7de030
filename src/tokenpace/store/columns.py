"""A sample's columns: the one ordered list that the database, ``run --output`` and ``/samples.csv`` all take.

The database stores every column. Exports (``run --output`` as CSV or JSON Lines, the web's ``/samples.csv``)
show the same ones, in the same order, for whoever reads them: a file shared or a public page. They hide what
could leak or bloat, the same everywhere:

- ``base_url``: some users put a key in its query string, and a private gateway's host is no reader's business;
- ``api_key_env``: the key variable's name says how a deployment is set up;
- ``prompt_text``: up to a long-context workload's whole prompt, kept only with ``--keep-prompts`` (the
  fingerprint identifies the prompt without it);
- ``timeline``: the raw events; JSON Lines adds them decoded, under the same name.

Endpoint headers are never stored at all. The schema itself is history (``migrations``), written out as each
database was given it; ``tests/store/test_database.py`` checks that it and this list agree.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from typing import Any

from tokenpace.config.endpoints import Endpoint
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.metrics import Metrics
from tokenpace.measure.sample import Network, RunRecord, Sample
from tokenpace.measure.timing import Timeline
from tokenpace.measure.verdict import Bound

# Metrics fields added after migration 1 sit where their migration put them: at the end, among the truth columns.
LATER_METRICS = ("provider_cached_tokens",)
METRIC_COLUMNS = tuple(f.name for f in dataclasses.fields(Metrics) if f.name not in LATER_METRICS)
ENDPOINT_COLUMNS = ("provider", "plan", "model", "base_url", "protocol", "api_key_env", "simulated")
PROMPT_COLUMNS = ("input_tokens", "prompt_fingerprint", "image_bytes", "image_pixels", "group_id", "prompt_text")
# Which samples the board counts; client_bound holds which of a sample's figures it leaves out (measure/verdict.py)
ORIGIN_COLUMNS = ("source", "published", "client_bound")
REGION_COLUMNS = ("region", "agent", "job_id", "job_seq")  # where it was measured from, by which queued job
NETWORK_COLUMNS = ("net_connect_ms", "net_tls_ms", "net_rtt_ms")  # clients/network.py, before the run
SAMPLE_TRUTH = ("canary", "canary_ok", "idle_s", "cold", "prefix_turn")
TRUTH_COLUMNS = (*LATER_METRICS, *SAMPLE_TRUTH)  # what was timed, beyond timing (migration 12)
LAG_COLUMNS = ("client_lag_ms",)  # how late its timestamps may be (migration 15)
# A 429's Retry-After in seconds and its rate-limit headers as a JSON object (migration 16, clients/ratelimits.py)
RATE_LIMIT_COLUMNS = ("retry_after_s", "ratelimits")
COPY_COLUMNS = ("copy_ratio",)  # the share of its answer's 8-grams found in its prompt (measure/copying.py)
SAMPLE_COLUMNS = (
    *("id", "run_id", *ENDPOINT_COLUMNS, "workload", "started_at"),
    *("ok", "error_kind", "error_message", "http_status", *METRIC_COLUMNS, "timeline", "tool_version"),
    *PROMPT_COLUMNS,
    *ORIGIN_COLUMNS,
    *REGION_COLUMNS,
    *NETWORK_COLUMNS,
    *TRUTH_COLUMNS,
    *LAG_COLUMNS,
    *RATE_LIMIT_COLUMNS,
    *COPY_COLUMNS,
)
HIDDEN = frozenset({"base_url", "api_key_env", "prompt_text", "timeline"})  # stored, never exported
EXPORTED = tuple(c for c in SAMPLE_COLUMNS if c not in HIDDEN)


def sample_values(s: Sample) -> dict[str, Any]:
    """Every column's value, in ``SAMPLE_COLUMNS`` order, as Python holds it: datetimes, bools, the timeline's
    JSON text and the error kind's name. The database turns times into epoch seconds and bools into 0/1."""
    values: dict[str, Any] = {"id": s.id, "run_id": s.run_id}
    values |= {c: getattr(s.endpoint, c) for c in ENDPOINT_COLUMNS}
    values |= {"workload": s.workload, "started_at": s.started_at, "ok": s.ok}
    values |= {"error_kind": None if s.error_kind is None else s.error_kind.value}
    values |= {"error_message": s.error_message, "http_status": s.http_status}
    values |= {c: getattr(s.metrics, c) for c in METRIC_COLUMNS}
    values |= {"timeline": s.timeline.to_json(), "tool_version": s.tool_version}
    values |= {c: getattr(s, c) for c in (*PROMPT_COLUMNS, *ORIGIN_COLUMNS, *REGION_COLUMNS)}
    values["client_bound"] = int(s.client_bound)  # its bits, as any database stores an integer
    net = s.network
    values |= dict(zip(NETWORK_COLUMNS, (None, None, None) if net is None else dataclasses.astuple(net), strict=True))
    values |= {c: getattr(s.metrics, c) for c in LATER_METRICS} | {
        c: getattr(s, c) for c in (*SAMPLE_TRUTH, *LAG_COLUMNS)
    }
    values |= {"retry_after_s": s.retry_after_s, "ratelimits": json.dumps(dict(s.ratelimits)) if s.ratelimits else None}
    values |= {c: getattr(s, c) for c in COPY_COLUMNS}
    return values


def _ratelimits(stored: str | None) -> tuple[tuple[str, str], ...]:
    """The rate-limit headers a row's JSON object holds; none where it holds no object of strings (a row any
    agent's role could have written is read, not trusted)."""
    try:
        doc = json.loads(stored or "{}")
    except (ValueError, RecursionError):
        return ()
    return tuple((k, v) for k, v in doc.items() if isinstance(v, str)) if isinstance(doc, dict) else ()


def sample_from(row: dict[str, Any]) -> Sample:
    """The Sample a database row holds (by column name, times in epoch seconds): ``sample_values`` undone."""
    kind = row["error_kind"]
    failure = None
    if kind is not None:
        limits = _ratelimits(row["ratelimits"])
        failure = Failure(ErrorKind(kind), row["error_message"], row["http_status"], row["retry_after_s"], limits)
    endpoint = Endpoint(**{f: row[f] for f in ENDPOINT_COLUMNS} | {"simulated": bool(row["simulated"])})
    net = [row[f] for f in NETWORK_COLUMNS]
    return Sample(
        id=row["id"],
        run_id=row["run_id"],
        endpoint=endpoint,
        workload=row["workload"],
        started_at=datetime.fromtimestamp(row["started_at"], UTC),
        metrics=Metrics(**{f: row[f] for f in (*METRIC_COLUMNS, *LATER_METRICS)}),
        timeline=Timeline.from_json(row["timeline"], failure),
        tool_version=row["tool_version"],
        **{f: row[f] for f in PROMPT_COLUMNS},
        source=row["source"],
        published=bool(row["published"]),
        client_bound=Bound(row["client_bound"]),
        **{f: row[f] for f in REGION_COLUMNS},
        network=None if all(v is None for v in net) else Network(*net),
        canary=row["canary"],
        canary_ok=None if row["canary_ok"] is None else bool(row["canary_ok"]),
        idle_s=row["idle_s"],
        cold=bool(row["cold"]),
        prefix_turn=row["prefix_turn"],
        client_lag_ms=row["client_lag_ms"],
        **{f: row[f] for f in COPY_COLUMNS},
    )


def run_from(row: dict[str, Any]) -> RunRecord:
    """The RunRecord a database row of ``runs`` holds, times in epoch seconds."""
    when = {f: datetime.fromtimestamp(row[f], UTC) for f in ("started_at", "finished_at")}
    return RunRecord(**row | when | {"client_bound": bool(row["client_bound"])})
