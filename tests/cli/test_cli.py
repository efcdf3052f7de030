"""The ``tokenpace`` command driven in-process, against simulators, SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tests.conftest import SimThread
from tokenpace import sim
from tokenpace.cli import main
from tokenpace.store.database import open_store


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_run_sim_prints_json_summary_and_stores_every_sample(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    result = invoke("run", "--sim", "-n", "6", "-c", "3", "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    (summary,) = doc["endpoints"]
    assert summary["endpoint"] == "sim/sim"
    assert (summary["samples"], summary["ok"], summary["success_rate"]) == (6, 6, 1.0)
    assert summary["figures"]["ttft_ms"]["count"] == 6
    assert summary["figures"]["ttft_ms"]["p50"] >= 150  # the --sim scenario's TTFT
    with open_store(str(db)) as store:
        samples = store.samples()
        (run,) = store.runs()
    assert len(samples) == 6 and {s.run_id for s in samples} == {doc["run_id"]} == {run.id}
    assert all(s.endpoint.simulated for s in samples)
    assert run.concurrency == 3 and run.completed == 6


def test_run_table_and_sample_files(tmp_path: Path, sim_thread: Callable[..., SimThread]) -> None:
    s = sim_thread()
    for name in ("samples.csv", "samples.jsonl"):
        out = tmp_path / name
        result = invoke("run", "--base-url", s.url, "--model", "m", "-n", "3", "--db", str(tmp_path / "t.db"),
                        "--output", str(out))  # fmt: skip
        assert result.exit_code == 0, result.output
        assert "TTFT" in result.stdout and "3/3 ok (100%)" in result.stdout
        if name.endswith(".csv"):
            rows = list(csv.DictReader(out.open()))
            assert len(rows) == 3 and all(r["ok"] == "1" and float(r["ttft_ms"]) > 0 for r in rows)
        else:
            docs = [json.loads(line) for line in out.read_text().splitlines()]
            assert len(docs) == 3 and all(d["timeline"]["events"] for d in docs)


def test_endpoints_by_name_from_config(tmp_path: Path, sim_thread: Callable[..., SimThread]) -> None:
    s = sim_thread()
    config = tmp_path / "tokenpace.toml"
    config.write_text(f'[providers.local]\nbase_url = "{s.url}"\nmodels = ["a", "b"]\n')
    result = invoke("run", "local/b", "--config", str(config), "-n", "2", "--db", str(tmp_path / "t.db"), "--json")
    assert result.exit_code == 0, result.output
    assert [e["endpoint"] for e in json.loads(result.stdout)["endpoints"]] == ["local/b"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "nothing to measure"),
        (("local/x",), "no endpoint matches 'local/x' (known: openai/MODEL"),
        (("--base-url", "http://127.0.0.1:9/v1"), "--base-url needs --model"),
        (("--base-url", "127.0.0.1:9", "--model", "m"), "give a full URL"),
        (
            ("--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--api-key-env", "TOKENPACE_UNSET_VAR"),
            "environment variable TOKENPACE_UNSET_VAR is not set",
        ),
        (
            ("--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--output", "x.txt"),
            "ending in .csv or .jsonl",
        ),
        (
            ("--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--protocol", "smoke"),
            "'smoke' is not one of 'openai-chat'",
        ),
        (("--sim", "--db", "mysql://x"), "unsupported store"),
        (("--sim", "--output", "/no/such/folder/x.csv"), "does not exist"),
        (("--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--header", "X-A: b\r\nX-B: c"), "one line"),
    ],
)
def test_bad_input_is_one_line_that_says_what_to_fix(args: tuple[str, ...], message: str) -> None:
    result = CliRunner().invoke(main, ["run", *args])
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("Error: ") and message in lines[-1], result.output
    assert "Traceback" not in result.output


def test_failures_are_counted_not_fatal(tmp_path: Path, sim_thread: Callable[..., SimThread]) -> None:
    s = sim_thread(sim.Scenario(error="429", error_rate=0.5, ttft_ms=5, tokens_per_s=500, seed=3))
    result = invoke("run", "--base-url", s.url, "--model", "m", "-n", "8", "--db", str(tmp_path / "t.db"), "--json")
    assert result.exit_code == 0, result.output
    (summary,) = json.loads(result.stdout)["endpoints"]
    assert 0 < summary["ok"] < 8
    assert summary["errors"] == {"rate_limited": 8 - summary["ok"]}


def test_postgresql_store(pg_url: str, sim_thread: Callable[..., SimThread]) -> None:
    s = sim_thread()
    result = invoke("run", "--base-url", s.url, "--model", "m", "-n", "3", "--db", pg_url, "--json")
    assert result.exit_code == 0, result.output
    with open_store(pg_url) as store:
        assert [x.ok for x in store.samples()] == [True, True, True]


def test_api_key_never_leaks(
    tmp_path: Path,
    sim_thread: Callable[..., SimThread],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    canary = "sk-canary-5f3e9a1c7d"
    monkeypatch.setenv("CANARY_API_KEY", canary)
    caplog.set_level(logging.DEBUG)
    good = sim_thread(api_key=canary)
    wrong = sim_thread(api_key="sk-something-else")
    db, out = tmp_path / "t.db", tmp_path / "s.jsonl"
    outputs = []
    for s, code in ((good, 0), (wrong, 1)):  # 1: no request succeeded
        result = invoke("run", "--base-url", s.url, "--model", "m", "-n", "2", "--api-key-env", "CANARY_API_KEY",
                        "--db", str(db), "--output", str(out))  # fmt: skip
        assert result.exit_code == code, result.output
        outputs.append(result.output + out.read_text())
    with open_store(str(db)) as store:
        samples = store.samples()
    assert [x.ok for x in samples] == [True, True, False, False]  # the key was sent, and refused where wrong
    assert samples[-1].http_status == 401
    everything = "".join(outputs) + caplog.text + str(samples)
    everything += "".join(p.read_bytes().decode("latin-1") for p in tmp_path.iterdir())
    assert canary not in everything


@pytest.mark.parametrize("protocol", ["anthropic", "ollama", "gemini"])
def test_sim_in_any_protocol(tmp_path: Path, protocol: str) -> None:
    result = invoke("run", "--sim", "--protocol", protocol, "-n", "2", "--db", str(tmp_path / "t.db"), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["endpoints"][0]["ok"] == 2
    with open_store(str(tmp_path / "t.db")) as store:
        assert {s.endpoint.protocol for s in store.samples()} == {protocol}
