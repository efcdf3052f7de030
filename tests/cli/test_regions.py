"""`tokenpace agent` and `tokenpace db grant-agent` from the command line: one line for each mistake."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.cli.test_input import assert_one_line, invoke
from tests.conftest import free_port
from tests.serve.test_service import _refused
from tests.store.test_windows import GROQ, stream
from tokenpace.measure.sample import Origin, make_sample
from tokenpace.store.database import open_store

REGIONS = '[providers.demo]\nsimulate = { ttft_ms = 5 }\n[schedule]\nworkloads = ["1k"]\n[regions.eu]\n[regions.us]\n'


def test_grant_agent_prints_the_statements_for_one_region() -> None:
    result = invoke("db", "grant-agent", "agent_eu", "--region", "eu")
    assert result.exit_code == 0, result.output
    assert 'GRANT INSERT, SELECT (job_id, job_seq) ON samples TO "agent_eu";' in result.stdout
    assert "USING (queue_name = 'tokenpace-eu')" in result.stdout
    assert "DELETE ON samples" not in result.stdout and "UPDATE ON samples" not in result.stdout
    assert result.stdout.index("REVOKE ALL ON ALL TABLES") < result.stdout.index("GRANT INSERT")
    assert "sample_hours" not in result.stdout and "sample_days" not in result.stdout  # the trigger counts


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("db", "grant-agent", "Agent-EU", "--region", "eu"), "role 'Agent-EU': use lower-case letters"),
        (("db", "grant-agent", "agent_eu", "--region", "EU West"), "region 'EU West': use lower-case letters"),
        (("agent", "--region", "EU", "--db", "postgresql://x@127.0.0.1/x"), "--region: region 'EU'"),
    ],
)
def test_mistakes_are_assert_one_line(args: tuple[str, ...], message: str) -> None:
    assert_one_line(invoke(*args), message)


def test_an_agent_needs_postgresql_and_a_declared_region(tmp_path: Path) -> None:
    config = tmp_path / "r.toml"
    config.write_text(REGIONS)
    assert_one_line(
        invoke("agent", "--region", "eu", "--db", str(tmp_path / "x.db")), "regions need a PostgreSQL store"
    )
    assert_one_line(
        invoke("agent", "--region", "asia", "--db", "postgresql://x@127.0.0.1/x", "--config", str(config)),
        f"--region asia: {config} declares no such region (known: eu, us)",
    )


def test_serve_with_regions_needs_postgresql(tmp_path: Path) -> None:
    config = tmp_path / "r.toml"
    config.write_text(REGIONS)
    message = _refused("--config", str(config), "--port", str(free_port()), "--db", str(tmp_path / "x.db"))
    assert "regions need a PostgreSQL store: give --db postgresql://" in message


def test_without_the_queue_engine_an_agent_says_which_extra_to_install() -> None:
    hide = "import sys; sys.modules['procrastinate'] = None; from tokenpace.cli import main; main()"
    args = ["agent", "--region", "eu", "--db", "postgresql://x@127.0.0.1:1/x"]
    done = subprocess.run([sys.executable, "-c", hide, *args], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "Error: regions need the queue engine: run with `uv run --extra postgresql ...` "
        "or `pip install 'tokenpace[postgresql]'`"
    )


def test_the_terminal_leaderboard_shows_a_region_or_each(tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")
    with open_store(db) as store:
        for region in ("eu", "us"):
            for k in range(3):
                at = datetime.now(UTC) - timedelta(minutes=5 + k)
                store.add_sample(make_sample("run", GROQ, "1k", at, stream(100, 10), origin=Origin(region, region)))
    each = invoke("leaderboard", "--db", db, "--region", "*", "--json")
    assert each.exit_code == 0, each.output
    assert sorted(e["region"] for e in json.loads(each.stdout)["entries"]) == ["eu", "us"]
    one = json.loads(invoke("leaderboard", "--db", db, "--region", "us", "--json").stdout)
    assert [e["region"] for e in one["entries"]] == ["us"] and one["region"] == "us"
    assert "@eu" in invoke("leaderboard", "--db", db, "--region", "*").stdout
    assert_one_line(invoke("leaderboard", "--db", db, "--region", "nope"), "region 'nope': use one of eu, us")
