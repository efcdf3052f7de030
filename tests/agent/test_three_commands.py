"""The README's multi-region run: `serve` with docs/regions.toml and two agents fill a board per region in a minute."""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.request
from pathlib import Path

from tests.agentkit import AgentProcess, command

CONFIG = Path(__file__).resolve().parents[2] / "docs" / "regions.toml"


def test_serve_and_two_agents_fill_a_board_per_region_within_a_minute(pg_url: str, tmp_path: Path) -> None:
    started = time.monotonic()
    log = (tmp_path / "serve.log").open("w+")
    serve = subprocess.Popen(
        command("serve", "--config", str(CONFIG), "--db", pg_url, "--port", "0"), stderr=log, stdout=log, text=True
    )
    agents = [AgentProcess(pg_url, r, CONFIG, r, tmp_path / f"{r}.log") for r in ("eu-west", "us-east")]
    try:
        while not (found := re.search(r"tokenpace serving on (http://\S+)\n", Path(log.name).read_text())):
            assert serve.poll() is None and time.monotonic() - started < 60, Path(log.name).read_text()
            time.sleep(0.2)
        board = found.group(1)
        rows: list[dict[str, object]] = []
        while {r["region"] for r in rows if r["ok"]} != {"eu-west", "us-east"}:
            assert time.monotonic() - started < 60, (rows, Path(log.name).read_text())
            time.sleep(1)
            with urllib.request.urlopen(f"{board}/leaderboard.json?region=*", timeout=10) as answer:
                rows = json.load(answer)["entries"]
        with urllib.request.urlopen(board, timeout=10) as answer:
            page = answer.read().decode()
        assert "Measured from eu-west (Frankfurt)" in page
    finally:
        for agent in agents:
            agent.stop()
        serve.terminate()
        serve.wait(30)
