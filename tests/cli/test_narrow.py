"""Output that reads whole in 80 columns and through a pipe: nothing cut to an ellipsis, ids on one line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tokenpace.config.presets import PRESETS


def tokenpace(*args: str, columns: int = 80) -> str:
    """The command's stdout through a pipe, the terminal COLUMNS wide."""
    env = {**os.environ, "COLUMNS": str(columns)}
    done = subprocess.run([sys.executable, "-m", "tokenpace", *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def assert_fits(text: str, columns: int = 80) -> None:
    assert "…" not in text
    assert max(len(line.rstrip()) for line in text.splitlines()) <= columns, text


def test_presets_in_80_columns() -> None:
    text = tokenpace("presets")
    assert_fits(text)
    for p in PRESETS.values():
        shown = p.protocol if p.routes is None else "per model"
        assert re.search(rf"^{re.escape(p.name)}\s+{shown}\s+{p.api_key_env or '.*local'}", text, re.M), p.name
        assert p.base_url in text


def test_a_run_and_the_leaderboard_in_80_columns(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    out = tokenpace("run", "--sim", "-n", "2", "--publish", "--db", db, "-q")
    assert re.search(r"^saved 2 samples to .* \(run [0-9a-f]{12}, --seed \d+;", out, re.M), out
    text = tokenpace("leaderboard", "--db", db, "--min-samples", "1")
    assert_fits(text)
    # (A sample timed while this busy machine's loop lagged is counted apart, not ranked: n may be below 2.)
    assert re.search(r"^\s*(1|-|too few \S+)\s+sim/sim \(simulated\)", text, re.M), text
    assert re.search(r"tok/s \(n=\d\)  ·  \S+ ms TTFT \(n=\d\)", text) and "success 100%" in text, text
    # Client-bound samples (on a loaded machine), a canary and a date make the lines long: 60 columns still fit.
    assert_fits(tokenpace("leaderboard", "--db", db, "--min-samples", "1", columns=60), columns=60)
    wide = tokenpace("leaderboard", "--db", db, "--min-samples", "1", columns=200)
    assert "Output speed (tok/s)" in wide and "sim/sim (simulated)" in wide  # the table, where it fits
    said = "Output speed: after the first chunk, o200k tok/s"  # what the speed's header leaves out, as a line
    assert said in wide and said in " ".join(text.split())
