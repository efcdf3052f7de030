"""An agent as data: the one shape /agents.json and `tokenpace agents --json` write, its state judged at a time."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from tokenpace.board.fleet import agent_dict, fleet_dict
from tokenpace.store.agents import MISSED, AgentRow

T0 = datetime(2026, 12, 1, 12, tzinfo=UTC)


def test_an_agent_is_json_data_with_its_state_and_heartbeat_age() -> None:
    a = AgentRow("fra-1", "eu-west", "fra-host", "0.1.0", T0, T0, 10, None, 7, 1, 2, -3.5)
    d = agent_dict(a, T0 + timedelta(seconds=12))
    assert json.loads(json.dumps(d)) == d
    assert (d["state"], d["heartbeat_age_s"], d["jobs_done"], d["jobs_dropped"], d["clock_offset_ms"]) == (
        "up", 12.0, 7, 2, -3.5
    )  # fmt: skip
    assert agent_dict(a, T0 + timedelta(seconds=MISSED * 10 + 1))["state"] == "down"


def test_the_fleet_says_the_rule_for_down() -> None:
    data = fleet_dict([], T0)
    assert data == {"generated_at": T0.isoformat(), "down_after_missed_heartbeats": MISSED, "agents": [], "queues": {}}
