"""Hostile files given to the real CLI: each is a one-line error naming the file, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tokenpace.cli import main


def one_line_error(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0]


def test_a_lone_surrogate_in_a_prompt(tmp_path: Path) -> None:
    data = tmp_path / "s.jsonl"
    data.write_text('{"prompt": "fine"}\n{"prompt": "hi \\ud800 there"}\n')
    line = one_line_error("bench", "--sim", "--data", f"jsonl:{data}", "--db", str(tmp_path / "t.db"), "-q")
    assert f"{data}:2" in line and "surrogate" in line


def test_a_lone_surrogate_in_a_sharegpt_turn(tmp_path: Path) -> None:
    data = tmp_path / "s.json"
    data.write_text('[{"conversations": [{"from": "human", "value": "\\udfff"}]}]')
    line = one_line_error("bench", "--sim", "--data", f"sharegpt:{data}", "--db", str(tmp_path / "t.db"), "-q")
    assert f"{data}:1" in line and "surrogate" in line


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux's /proc")
@pytest.mark.parametrize("kind", ["jsonl", "sharegpt"])
def test_a_file_that_fails_to_read(tmp_path: Path, kind: str) -> None:
    """/proc/self/mem passes as a regular file of size 0, then its first read fails (EIO)."""
    line = one_line_error("bench", "--sim", "--data", f"{kind}:/proc/self/mem", "--db", str(tmp_path / "t.db"), "-q")
    assert "/proc/self/mem: cannot read it" in line


@pytest.mark.parametrize("command", ["run", "leaderboard", "workloads"])
def test_a_config_nested_ten_thousand_deep(tmp_path: Path, command: str) -> None:
    config = tmp_path / "deep.toml"
    config.write_text("x = " + "[" * 10_000 + "]" * 10_000 + "\n")
    db = () if command == "workloads" else ("--db", str(tmp_path / "t.db"))
    line = one_line_error(command, "--config", str(config), *db)
    assert f"{config}: " in line and "nested too deep" in line
