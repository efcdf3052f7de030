"""Probe agents as the database knows them: one row each, written by the agent, read by the board and the CLI.

An agent upserts its row when it starts and on every heartbeat (its counts of jobs done, failed and dropped,
and its clock's offset from the database's), and stamps ``stopped_at`` when it stops cleanly. An agent whose
heartbeat is older than :data:`MISSED` of its own intervals without a stop is down: killed, cut off, or its
machine gone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

from tokenpace.store.database import Store, utc

MISSED = 3  # heartbeats missed before an agent is listed down (and its running job retried)
AGENT_COLUMNS = (
    "name", "region", "host", "version", "started_at", "heartbeat_at", "heartbeat_s", "stopped_at",
    "jobs_done", "jobs_failed", "jobs_dropped", "clock_offset_ms",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class AgentRow:
    """One agent's row: who, where, which version, when it last beat, what it did."""

    name: str
    region: str
    host: str
    version: str
    started_at: datetime
    heartbeat_at: datetime
    heartbeat_s: float  # how often it beats
    stopped_at: datetime | None = None
    jobs_done: int = 0
    jobs_failed: int = 0
    jobs_dropped: int = 0  # taken after their deadline: counted, not run late
    clock_offset_ms: float | None = None  # the database's clock minus the agent's

    def state(self, now: datetime) -> str:
        """``stopped`` (cleanly), ``down`` (no heartbeat for MISSED x heartbeat_s) or ``up``."""
        if self.stopped_at is not None:
            return "stopped"
        return "down" if (now - self.heartbeat_at).total_seconds() > MISSED * self.heartbeat_s else "up"


def beat(store: Store, agent: AgentRow) -> None:
    """Insert or update the agent's row (the whole row: the agent holds its own counts)."""
    values = [
        agent.name, agent.region, agent.host, agent.version, agent.started_at.timestamp(),
        agent.heartbeat_at.timestamp(), agent.heartbeat_s,
        None if agent.stopped_at is None else agent.stopped_at.timestamp(),
        agent.jobs_done, agent.jobs_failed, agent.jobs_dropped, agent.clock_offset_ms,
    ]  # fmt: skip
    cols = ", ".join(AGENT_COLUMNS)
    # role: the writer's, by the column's default on PostgreSQL (NULL on SQLite); a row written before roles
    # were recorded becomes its agent's own role's on its next beat (grants.py lets it, in its region only).
    update = ", ".join(f"{c} = excluded.{c}" for c in (*AGENT_COLUMNS[1:], "role"))
    marks = ", ".join("?" * len(AGENT_COLUMNS))
    store.execute(f"INSERT INTO agents ({cols}) VALUES ({marks}) ON CONFLICT (name) DO UPDATE SET {update}", values)  # noqa: S608


def read_all(store: Store) -> list[AgentRow]:
    """Every agent, by region then name."""
    rows = store.query(f"SELECT {', '.join(AGENT_COLUMNS)} FROM agents ORDER BY region, name")  # noqa: S608
    out = []
    for row in rows:
        d = dict(zip(AGENT_COLUMNS, row, strict=True))
        times = {c: utc(d[c]) for c in ("started_at", "heartbeat_at", "stopped_at")}
        out.append(AgentRow(**d | times))
    return out


QUEUE_STATES = ("todo", "doing", "succeeded", "failed", "cancelled", "aborted")


def queues(store: Store) -> dict[str, dict[str, int]]:
    """Jobs per region and procrastinate status (``cancelled``: no agent took it by its deadline); {} without
    region queues (SQLite, or serve never ran with ``[regions]``)."""
    if store.dialect != "postgresql" or not store.query("SELECT to_regclass('procrastinate_jobs')")[0][0]:
        return {}
    rows = store.query(
        "SELECT queue_name, status::text, COUNT(*) FROM procrastinate_jobs"
        " WHERE LEFT(queue_name, 10) = 'tokenpace-' GROUP BY queue_name, status"
    )
    found: dict[str, dict[str, int]] = {}
    for queue, status, count in rows:
        found.setdefault(queue.removeprefix("tokenpace-"), dict.fromkeys(QUEUE_STATES, 0))[status] = int(count)
    return dict(sorted(found.items()))


def clock_offset_ms(store: Store) -> float:
    """database clock - (our clock before + after) / 2, in ms: the database's time read between two of ours."""
    now = (
        "SELECT EXTRACT(EPOCH FROM clock_timestamp())"
        if store.dialect == "postgresql"
        else ("SELECT (julianday('now') - 2440587.5) * 86400.0")
    )
    before = time.time()
    ((theirs,),) = store.query(now, fresh=True)
    after = time.time()
    return (float(theirs) - (before + after) / 2) * 1000


def stored_requests(store: Store, job_id: str) -> set[int]:
    """Which requests of a region job (their ``job_seq``) the database holds: a retried job whose requests are
    all stored is not run again (issue 29: a cut connection had a job run twice)."""
    return {seq for (seq,) in store.query("SELECT job_seq FROM samples WHERE job_id = ?", (job_id,), fresh=True)}
