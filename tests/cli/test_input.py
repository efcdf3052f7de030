"""The command line refuses what it cannot use in one line, and says what it did (issue 9 items 15 and 16)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from tests.conftest import SimThread
from tokenpace.cli import main
from tokenpace.store.database import open_store

URL = ("--base-url", "http://127.0.0.1:9/v1", "--model", "m")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def assert_one_line(result: Result, message: str, code: int = 2) -> None:
    assert result.exit_code == code, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("Error: ") and message in last, result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("option", ["--connect-timeout", "--first-token-timeout", "--idle-timeout", "--total-timeout"])
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_timeouts_are_finite_and_positive(option: str, value: str) -> None:
    assert_one_line(invoke("run", *URL, option, value), option)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("sim", "--ttft-ms", "nan"), "--ttft-ms"),
        (("sim", "--error-rate", "nan"), "--error-rate"),
        (("serve", "--grace", "inf"), "--grace"),
    ],
)
def test_other_numbers_are_finite(args: tuple[str, ...], message: str) -> None:
    assert_one_line(invoke(*args), message)


@pytest.mark.parametrize("url", ["http://[::1/v1", "http://127.0.0.1:99999/v1", "http:///v1"])
def test_a_broken_base_url_is_one_line(url: str) -> None:
    assert_one_line(invoke("run", "--base-url", url, "--model", "m"), f"--base-url {url!r}")


@pytest.mark.parametrize("seed", [str(2**70), str(2**31), "-1"])
def test_seed_is_what_the_database_holds(seed: str, tmp_path: Path) -> None:
    assert_one_line(invoke("run", "--sim", "-n", "1", "--db", str(tmp_path / "t.db"), "--seed", seed), "--seed")


def test_largest_seed_is_stored(tmp_path: Path, pg_url: str) -> None:
    result = invoke("run", "--sim", "-n", "2", "--db", pg_url, "--seed", str(2**31 - 1), "--json")
    assert result.exit_code == 0, result.output
    with open_store(pg_url) as store:
        assert [r.seed for r in store.runs()] == [2**31 - 1]


def test_exit_code_2_for_mistakes_3_when_tokenpace_cannot_work(tmp_path: Path) -> None:
    assert invoke("run").exit_code == 2
    assert invoke("run", "--config", str(tmp_path / "nope.toml")).exit_code == 2
    store_dir = tmp_path / "a-file"
    store_dir.write_text("")
    result = invoke("run", "--sim", "-n", "1", "--db", str(store_dir / "t.db"))
    assert result.exit_code == 3, result.output


def test_config_without_names_measures_every_endpoint(tmp_path: Path, sim_thread: Callable[..., SimThread]) -> None:
    s = sim_thread()
    config = tmp_path / "c.toml"
    demo = "simulate = { ttft_ms = 20, tokens_per_s = 400, output_tokens = 10 }"
    config.write_text(f'[providers.local]\nbase_url = "{s.url}"\nmodels = ["a", "b"]\n[providers.demo]\n{demo}\n')
    result = invoke("run", "--config", str(config), "-n", "1", "--db", str(tmp_path / "t.db"), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert sorted(e["endpoint"] for e in doc["endpoints"]) == ["demo/sim", "local/a", "local/b"]
    (demo,) = [e for e in doc["endpoints"] if e["endpoint"] == "demo/sim"]
    assert demo["ok"] == 1 and demo["truth"] == {"output_speed": 400, "ttft_ms": 20}
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    assert_one_line(invoke("run", "--config", str(empty)), "declares no endpoints")


def test_sim_prints_its_true_values_beside_the_measured_ones(tmp_path: Path) -> None:
    result = invoke("run", "--sim", "-n", "2", "--db", str(tmp_path / "t.db"))
    assert result.exit_code == 0, result.output
    header = next(line for line in result.stdout.splitlines() if "P50" in line)
    assert header.rstrip("┃│ ").endswith("set")
    ttft = next(line for line in result.stdout.splitlines() if "TTFT" in line)
    speed = next(line for line in result.stdout.splitlines() if "Output speed" in line)
    assert ttft.rstrip("│ ").endswith("150") and speed.rstrip("│ ").endswith("120")
    doc = json.loads(invoke("run", "--sim", "-n", "1", "--db", str(tmp_path / "t.db"), "--json").stdout)
    assert doc["endpoints"][0]["truth"] == {"output_speed": 120, "ttft_ms": 150}


def _pty_run(args: list[str]) -> tuple[str, str]:
    """Run tokenpace with stderr on a terminal (where a progress bar shows) and stdout on a pipe."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "tokenpace", *args], stdout=subprocess.PIPE, stderr=follower,
                            text=True, env={**os.environ, "COLUMNS": "100"})  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the terminal closed: the command ended
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read() if proc.stdout else ""
    proc.wait(60)
    os.close(leader)
    return out, b"".join(chunks).decode(errors="replace")


def test_quiet_keeps_the_summary_and_drops_the_progress_bar(tmp_path: Path) -> None:
    flags = ("", "--quiet", "--no-progress", "-q")
    # The four runs at once: each spends its seconds waiting on its simulator.
    with ThreadPoolExecutor(len(flags)) as pool:
        runs = dict(zip(flags, pool.map(lambda f: _pty_run(_run_args(tmp_path, f)), flags), strict=True))
    out, terminal = runs[""]
    assert "measuring" in terminal and "TTFT" in out
    for flag in flags[1:]:
        out, terminal = runs[flag]
        assert "measuring" not in terminal and "TTFT" in out and "3/3 ok" in out, flag


def _run_args(tmp_path: Path, flag: str) -> list[str]:
    return ["run", "--sim", "-n", "3", "--db", str(tmp_path / f"t{flag}.db"), *([flag] if flag else [])]


def test_every_option_has_help() -> None:
    missing = []
    for name, command in main.commands.items():
        for param in command.params:
            if isinstance(param, click.Option) and not param.help and param.name != "help":
                missing.append(f"{name} {param.opts[-1]}")
    assert not missing
