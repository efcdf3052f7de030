"""`tokenpace agents`: the same list as /agents, a clear line when there is none, exit 0 either way."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner

from tokenpace.cli import main
from tokenpace.store import agents
from tokenpace.store.agents import AgentRow
from tokenpace.store.database import open_store


def test_no_agents_is_one_line_and_exit_0(tmp_path: Path) -> None:
    db = str(tmp_path / "a.db")
    done = CliRunner().invoke(main, ["agents", "--db", db])
    assert done.exit_code == 0 and done.output.strip().startswith("no probe agents")
    done = CliRunner().invoke(main, ["agents", "--db", db, "--json"])
    assert done.exit_code == 0 and json.loads(done.output)["agents"] == []


def test_agents_are_listed_as_a_table_and_as_json(tmp_path: Path) -> None:
    db = str(tmp_path / "a.db")
    now = datetime.now(UTC)
    with open_store(db) as store:
        agents.beat(store, AgentRow("fra-1", "eu-west", "fra-host", "0.2.0", now, now, 10, None, 5, 1, 0, 2.0))
        agents.beat(store, AgentRow("iad-1", "us-east", "iad-host", "0.2.0", now, now, 10, now, 1, 0, 3, None))
    done = CliRunner().invoke(main, ["agents", "--db", db])
    assert done.exit_code == 0
    assert "fra-1" in done.output and "eu-west" in done.output and "up" in done.output and "stopped" in done.output
    data = json.loads(CliRunner().invoke(main, ["agents", "--db", db, "--json"]).output)
    assert [(a["name"], a["state"], a["jobs_dropped"]) for a in data["agents"]] == [
        ("fra-1", "up", 0), ("iad-1", "stopped", 3)
    ]  # fmt: skip


def test_an_agent_that_names_itself_with_a_newline_forges_no_row(tmp_path: Path) -> None:
    db = str(tmp_path / "a.db")
    now = datetime.now(UTC)
    with open_store(db) as store:
        agents.beat(store, AgentRow("x\nfake-1", "eu\u202ewest", "h", "0.2.0", now, now, 10, None, 5, 1, 0, None))
    done = CliRunner().invoke(main, ["agents", "--db", db])
    assert done.exit_code == 0
    assert "x␤fake-1" in done.output and "eu{U+202E}west" in done.output
    assert not [line for line in done.output.splitlines() if "fake-1" in line and "x␤" not in line], done.output
