"""`tokenpace serve --config docs/tokendyno.toml --simulate`: TokenDyno's board offline, as a user runs it."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

from tests.config.test_offline import TOKENDYNO, TOP_TEN
from tests.conftest import free_port
from tests.serve.test_service import Served, _get, _refused

TEN = [f"ollama-cloud:{plan}/{model}" for plan, model, _ in TOP_TEN]  # the published order
# 1,800 times faster: Ollama's hourly plans run every 2 s, so three samples each within about half a minute.
SPEEDUP = "1800"


def _ten_ranked(doc: dict[str, Any]) -> bool:
    return {e["name"] for e in doc["entries"] if e["rank"] is not None} >= set(TEN)


def test_the_offline_tokendyno_board_ranks_the_published_top_ten_in_order(tmp_path: Path) -> None:
    served = Served(tmp_path, "--config", str(TOKENDYNO), "--simulate", "--speedup", SPEEDUP, "--grace", "0.5")
    try:
        # TokenDyno's average, the 24 h mean; client-bound samples included, as a busy test machine has many.
        board = served.wait_for("/leaderboard.json?window=24h&client_bound=include", _ten_ranked, timeout_s=120)
        assert [e["name"] for e in board["entries"] if e["name"] in TEN] == TEN
        assert all(e["simulated"] for e in board["entries"])
        assert {e["provider"] for e in board["entries"]} <= {"ollama-cloud", "opencode-zen", "opencode-go"}

        faq = _get(served.url + "/methodology.json")["faq"]
        every = {p["name"]: (p["every"], p["source"], p["here_every"]) for p in faq["platforms"]}
        assert every["ollama-cloud:free"] == every["ollama-cloud:pro"] == ("1 h", "billing", "2 s")
        assert every["opencode-zen"] == ("4 h", "billing", "8 s") and every["opencode-go"][1] == "limits"
        assert faq["speedup"] == float(SPEEDUP) and "TokenDyno" in faq["about"]
        page = urllib.request.urlopen(served.url + "/methodology", timeout=10).read().decode()
        for said in (
            "Which platforms are measured?",
            "How often is each one sampled?",
            "What are the averages?",
            "This board runs offline",
            "24 h mean",
            "72 h median",
            "$12 per 5h, $30 per 7d, $60 per 30d",
        ):
            assert said in page, said
    finally:
        code = served.stop()
    assert code == 143
    log = served.log.read_text()
    assert "offline (--simulate): every endpoint of" in log and "1800 times faster (an hour every 2 s)" in log
    assert "ollama-cloud:free runs every 1 h, its billing's (capped); here every 2 s" in log
    assert "opencode-go runs every 3 h, the densest its limits allow (10% of $12 per 5h" in log
    assert "Traceback" not in log and "API_KEY" not in log  # no key asked for: none is read


def test_simulate_needs_a_config_and_speedup_needs_simulate(tmp_path: Path) -> None:
    db, port = str(tmp_path / "x.db"), str(free_port())
    assert "--simulate runs a config file's board offline: give it --config FILE" in _refused(
        "--simulate", "--port", port, "--db", db
    )
    assert "--speedup paces --simulate's offline board" in _refused(
        "--config", str(TOKENDYNO), "--speedup", "10", "--port", port, "--db", db
    )
