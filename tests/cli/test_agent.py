"""`tokenpace agent` from the command line: one line for each mistake."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cli.test_input import assert_one_line, invoke

REGIONS = '[providers.demo]\nsimulate = { ttft_ms = 5 }\n[schedule]\nworkloads = ["1k"]\n[regions.eu]\n[regions.us]\n'


def test_a_region_name_it_cannot_queue_is_one_line() -> None:
    assert_one_line(invoke("agent", "--region", "EU", "--db", "postgresql://x@127.0.0.1/x"), "--region: region 'EU'")


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


def test_without_the_queue_engine_an_agent_says_which_extra_to_install() -> None:
    hide = "import sys; sys.modules['procrastinate'] = None; from tokenpace.cli import main; main()"
    args = ["agent", "--region", "eu", "--db", "postgresql://x@127.0.0.1:1/x"]
    done = subprocess.run([sys.executable, "-c", hide, *args], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "Error: regions need the queue engine: run with `uv run --extra postgresql ...` "
        "or `pip install 'tokenpace[postgresql]'`"
    )
