"""The probe agents as pages and the CLI list them: one row of data per agent, its state judged at one time.

``/agents``, ``/agents.json`` and ``tokenpace agents`` all write an agent with :func:`agent_dict`, so a program
reading one reads the others. The state is :meth:`store.agents.AgentRow.state`'s: ``up``, ``down`` (no heartbeat for
``MISSED`` of its own heartbeat intervals: killed, cut off, its machine gone) or ``stopped`` (cleanly).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tokenpace.store.agents import MISSED, AgentRow

NONE_YET = "no probe agents: every sample so far was measured by the process that stored it"


def agent_dict(a: AgentRow, now: datetime) -> dict[str, Any]:
    """An agent as JSON-able data: times ISO 8601 UTC, its state at ``now`` and its heartbeat's age."""
    return {
        "name": a.name, "region": a.region, "version": a.version, "host": a.host, "state": a.state(now),
        "started_at": a.started_at.isoformat(), "heartbeat_at": a.heartbeat_at.isoformat(),
        "heartbeat_s": a.heartbeat_s,
        "heartbeat_age_s": (now - a.heartbeat_at).total_seconds(),
        "stopped_at": None if a.stopped_at is None else a.stopped_at.isoformat(),
        "jobs_done": a.jobs_done, "jobs_failed": a.jobs_failed, "jobs_dropped": a.jobs_dropped,
        "clock_offset_ms": a.clock_offset_ms,
    }  # fmt: skip


def fleet_dict(
    agents: list[AgentRow], now: datetime, queues: dict[str, dict[str, int]] | None = None
) -> dict[str, Any]:
    """Every agent, the rule that says one is down, and each region's jobs by status (``cancelled``: dropped at
    its deadline, no agent having taken it)."""
    return {
        "generated_at": now.isoformat(),
        "down_after_missed_heartbeats": MISSED,
        "agents": [agent_dict(a, now) for a in agents],
        "queues": queues or {},
    }
