"""/agents and /agents.json over a real store: every agent with its state, read afresh (a heartbeat stores no
sample, so the page memo would not see it), and the board links it only once an agent exists."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from starlette.testclient import TestClient

from tokenpace.config.endpoints import Config
from tokenpace.store import agents
from tokenpace.store.agents import AgentRow
from tokenpace.store.database import open_store
from tokenpace.web import create_app

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


def test_the_agents_page_lists_each_agent_and_its_state(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "a.db")) as store, TestClient(create_app(store, Config(), now=lambda: NOW)) as c:
        assert "no probe agents" in c.get("/agents").text.lower()
        assert c.get("/agents.json").json()["agents"] == []
        assert 'href="/agents"' not in c.get("/").text
        up = AgentRow("fra-1", "eu-west", "fra-host", "0.2.0", NOW, NOW - timedelta(seconds=5), 10, None, 12, 1, 0, 1.5)
        down = AgentRow(
            "iad-1", "us-east", "iad-host", "0.2.0", NOW, NOW - timedelta(minutes=5), 10, None, 3, 0, 2, None
        )
        agents.beat(store, up)
        agents.beat(store, down)
        data = c.get("/agents.json").json()
        assert [(a["name"], a["region"], a["state"], a["jobs_done"]) for a in data["agents"]] == [
            ("fra-1", "eu-west", "up", 12), ("iad-1", "us-east", "down", 3)
        ]  # fmt: skip
        page = c.get("/agents").text
        assert 'data-agent="iad-1" class="agent-down"' in page and "1.5 ms" in page and "300 s ago" in page
        # The board's memo is the store's: the next page rendered after a sample links the agents; a fresh app at once.
    with open_store(str(tmp_path / "a.db")) as store, TestClient(create_app(store, Config(), now=lambda: NOW)) as c:
        assert 'href="/agents"' in c.get("/").text
