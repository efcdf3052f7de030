"""`tokenpace compare`: result files written by to_json, the table or JSON printed, and the exit status for CI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tests.loadkit import point, result, steady
from tokenpace.cli.compare import compare_command, parse_threshold
from tokenpace.cli.exits import ExitCodeGroup
from tokenpace.config.traffic import Load
from tokenpace.errors import ConfigError
from tokenpace.load.results import MAX_BYTES, BenchResult, to_json

C1, C4 = Load(concurrency=1), Load(concurrency=4)
CLI = ExitCodeGroup("tokenpace")  # as cli/__init__.py will register it: the group turns a ConfigError into exit 2
CLI.add_command(compare_command)


def write(path: Path, r: BenchResult) -> str:
    path.write_text(to_json(r))
    return str(path)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(CLI, ["compare", *args])


@pytest.fixture
def runs(tmp_path: Path) -> dict[str, str]:
    return {
        "base": write(tmp_path / "a.json", result(point(C1, steady(10, 100, 20)), point(C4, steady(10, 100, 20)))),
        "same": write(tmp_path / "same.json", result(point(C1, steady(10, 104, 20)))),
        "slow": write(tmp_path / "b.json", result(point(C1, steady(10, 150, 20)))),
        "other": write(tmp_path / "o.json", result(point(Load(concurrency=8), steady(10, 100, 20)))),
    }


def test_no_regression_exits_0(runs: dict[str, str]) -> None:
    done = invoke(runs["base"], runs["same"])
    assert done.exit_code == 0, done.output
    assert "TTFT P50" in done.output and "+4.0%" in done.output
    assert "only in run A (not compared): concurrency 4" in done.output
    last = done.output.strip().splitlines()[-1]
    assert last == "same: no headline figure moved beyond 10% and outside its run-to-run noise"


def test_a_regression_exits_1_and_says_what(runs: dict[str, str]) -> None:
    done = invoke(runs["base"], runs["slow"])
    assert done.exit_code == 1, done.output
    assert "regressed beyond 10%" in done.output and "TTFT P50 +50.0%" in done.output


def test_the_threshold_decides(runs: dict[str, str]) -> None:
    assert invoke(runs["base"], runs["slow"], "--threshold", "60%").exit_code == 0
    assert invoke(runs["base"], runs["same"], "--threshold", "0.03").exit_code == 1


def test_json(runs: dict[str, str]) -> None:
    done = invoke(runs["base"], runs["slow"], "--json")
    data = json.loads(done.output)
    assert done.exit_code == 1 and data["verdict"] == "regressed" and data["threshold"] == 0.1
    assert data["only_a"] == ["concurrency 4"] and data["points"][0]["load"] == "concurrency 1"


def assert_one_line(done: Result, message: str) -> None:
    assert done.exit_code == 2, done.output
    assert done.output.strip().startswith("Error: ") and message in done.output, done.output
    assert len(done.output.strip().splitlines()) == 1 and "Traceback" not in done.output


def test_bad_input_exits_2_in_one_line(runs: dict[str, str], tmp_path: Path) -> None:
    assert_one_line(invoke(runs["base"], str(tmp_path / "nope.json")), "nope.json: cannot read it")
    (tmp_path / "bad.json").write_text('{"format": 9}')
    assert_one_line(invoke(runs["base"], str(tmp_path / "bad.json")), "bad.json: result document format 9")
    (tmp_path / "text.json").write_text("hello")
    assert_one_line(invoke(str(tmp_path / "text.json"), runs["base"]), "text.json: result document: not JSON")
    (tmp_path / "big.json").write_bytes(b" " * (MAX_BYTES + 1))
    assert_one_line(invoke(runs["base"], str(tmp_path / "big.json")), "over 64 MiB")
    assert_one_line(invoke(runs["base"], runs["same"], "--threshold", "lots"), "--threshold 'lots'")
    assert_one_line(invoke(runs["base"], runs["other"]), "share no load level (A: concurrency 1, concurrency 4; B:")


@pytest.mark.parametrize(("text", "value"), [("10%", 0.1), ("0.1", 0.1), (" 12.5 % ", 0.125), ("0", 0.0)])
def test_threshold_forms(text: str, value: float) -> None:
    assert parse_threshold(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["-5%", "nan", "inf", "1001%", "11", "ten", ""])
def test_threshold_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="--threshold"):
        parse_threshold(text)


def test_the_module_imports_no_heavy_library() -> None:
    probe = (
        "import sys, tokenpace.cli.compare; print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'rich'))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
