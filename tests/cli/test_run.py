"""What `tokenpace run` tells the shell and the reader when requests fail, and when it is stopped (issue 9 item 6)."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tests.conftest import SimThread, ctrl_c_reaches_child
from tokenpace import sim
from tokenpace.cli import main
from tokenpace.store.database import open_store


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_nothing_succeeded_exits_1_with_the_commonest_message_and_a_hint(
    tmp_path: Path, sim_thread: Callable[..., SimThread]
) -> None:
    s = sim_thread()
    root = s.url.removesuffix("/v1")  # the usual mistake: a base URL without /v1
    db = str(tmp_path / "t.db")
    result = invoke("run", "--base-url", root, "--model", "m", "-n", "3", "--db", db)
    assert result.exit_code == 1, result.output
    assert "HTTP 404" in result.stdout and "does the base URL end in /v1?" in result.stdout
    assert "http_error (3): HTTP 404" in result.stdout
    doc = json.loads(invoke("run", "--base-url", root, "--model", "m", "-n", "2", "--db", db, "--json").stdout)
    (summary,) = doc["endpoints"]
    (top,) = summary["error_messages"]["http_error"]
    assert top["count"] == 2 and top["message"].startswith("HTTP 404") and "/v1" in top["hint"]
    with open_store(db) as store:
        assert len(store.samples()) == 5  # the failures are stored all the same


def test_exit_code_is_1_when_any_endpoint_had_no_success(tmp_path: Path, sim_thread: Callable[..., SimThread]) -> None:
    good = sim_thread(sim.Scenario(ttft_ms=5, tokens_per_s=500, output_tokens=5))
    bad = sim_thread(sim.Scenario(error="500", ttft_ms=5, tokens_per_s=500, output_tokens=5))
    config = tmp_path / "c.toml"
    config.write_text(f'[providers.good]\nbase_url = "{good.url}"\nmodels = ["m"]\n'
                      f'[providers.bad]\nbase_url = "{bad.url}"\nmodels = ["m"]\n')  # fmt: skip
    db = str(tmp_path / "t.db")
    assert invoke("run", "--config", str(config), "good", "-n", "2", "--db", db).exit_code == 0
    mixed = invoke("run", "--config", str(config), "good", "bad", "-n", "2", "--db", db)
    assert mixed.exit_code == 1, mixed.output
    assert "bad/m" in mixed.output and "no request succeeded" in mixed.output


def test_some_failures_still_exit_0(tmp_path: Path, sim_thread: Callable[..., SimThread]) -> None:
    s = sim_thread(sim.Scenario(error="429", error_rate=0.5, ttft_ms=5, tokens_per_s=500, output_tokens=5, seed=3))
    result = invoke("run", "--base-url", s.url, "--model", "m", "-n", "8", "--db", str(tmp_path / "t.db"), "--json")
    assert result.exit_code == 0, result.output
    (summary,) = json.loads(result.stdout)["endpoints"]
    assert 0 < summary["ok"] < 8
    (top,) = summary["error_messages"]["rate_limited"]
    assert top["count"] == 8 - summary["ok"] and "429" in top["message"]


def test_help_documents_the_exit_codes() -> None:
    text = invoke("run", "--help").output
    for code in ("0", "1", "2", "130", "143"):
        assert f"{code} " in text or f"{code}:" in text or f"{code} =" in text
    assert "Exit codes" in " ".join(text.split())


@pytest.mark.parametrize(
    ("sig", "code", "said", "as_json"),
    [
        (signal.SIGINT, 130, "interrupted", False),
        (signal.SIGTERM, 143, "stopped (SIGTERM)", False),
        (signal.SIGTERM, 143, "stopped (SIGTERM)", True),
    ],
)
def test_ctrl_c_and_sigterm_keep_what_was_measured(
    tmp_path: Path, sim_thread: Callable[..., SimThread], sig: signal.Signals, code: int, said: str, as_json: bool
) -> None:
    s = sim_thread(sim.Scenario(ttft_ms=5, tokens_per_s=20, output_tokens=1000))
    db = tmp_path / "t.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokenpace", "run", "--base-url", s.url, "--model", "m", "-n", "4", "-c", "2",
         "--db", str(db), *(["--json"] if as_json else [])],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_reaches_child,
    )  # fmt: skip
    for _ in range(300):  # until both streams are sending tokens, however slowly the command started
        truths = list(s.simulator.truth.values())
        if len(truths) == 2 and all(t.completion_tokens >= 3 for t in truths):
            break
        time.sleep(0.05)
    proc.send_signal(sig)
    out, errors = proc.communicate(timeout=30)
    assert proc.returncode == code, errors
    assert f"{said}: the 2 samples taken so far" in errors
    with open_store(str(db)) as store:
        samples = store.samples()
        (run,) = store.runs()
    assert [x.error_kind for x in samples] == ["cancelled", "cancelled"]
    assert all(x.metrics.output_tokens > 0 for x in samples) and run.completed == 2
    if as_json:
        doc = json.loads(out)
        assert doc["run_id"] == run.id and doc["endpoints"][0]["errors"] == {"cancelled": 2}
    else:
        assert "cancelled 2" in out and "TTFT" not in out  # the summary, of samples that have no figures


def test_publish_flag(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    assert invoke("run", "--sim", "-n", "1", "--db", db).exit_code == 0
    assert invoke("run", "--sim", "-n", "1", "--db", db, "--publish").exit_code == 0
    with open_store(db) as store:
        samples = sorted(store.samples(), key=lambda s: s.started_at)
    assert [(s.source, s.published) for s in samples] == [("one-shot", False), ("one-shot", True)]
    assert "--publish" in invoke("run", "--help").output


def test_an_idle_timeout_under_the_first_tokens_is_noted_unless_quiet(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    timeouts = ("--first-token-timeout", "90", "--idle-timeout", "30")
    noted = invoke("run", "--sim", "-n", "1", "--db", db, *timeouts)
    assert noted.exit_code == 0, noted.output
    assert "note: --idle-timeout 30 s is shorter than --first-token-timeout 90 s" in " ".join(noted.stderr.split())
    for no_note in (("-q",), ("--first-token-timeout", "30")):
        result = invoke("run", "--sim", "-n", "1", "--db", db, *timeouts, *no_note)
        assert result.exit_code == 0 and "note:" not in result.stderr, result.output


def test_a_servers_message_cannot_steer_the_terminal() -> None:
    import io
    from datetime import UTC, datetime

    from rich.console import Console

    from tokenpace.board import terminal
    from tokenpace.config.endpoints import Endpoint
    from tokenpace.measure.failures import ErrorKind, Failure
    from tokenpace.measure.sample import make_sample
    from tokenpace.measure.timing import Timeline

    hostile = "\x1b[2J\x1b]0;owned\x07[bold red]fake[/] " + "x" * 5000
    timeline = Timeline(t_sent_ns=0, t_headers_ns=1, t_end_ns=2, events=(),
                        failure=Failure(ErrorKind.HTTP_ERROR, hostile, 500))  # fmt: skip
    sample = make_sample("r", Endpoint("p", "m", "http://x/v1"), "1k", datetime.now(UTC), timeline)
    (summary,) = terminal.summaries([sample, sample])
    (top,) = summary.error_messages["http_error"]
    assert top.count == 2 and "\x1b" not in top.message and "\x07" not in top.message and len(top.message) <= 200
    shown = io.StringIO()
    terminal.print_summary(Console(file=shown, width=100, color_system=None), summary)
    assert "[bold red]fake[/]" in shown.getvalue() and "\x1b" not in shown.getvalue()


def test_an_in_process_run_leaves_sigterm_as_it_found_it(tmp_path: Path) -> None:
    # The run's SIGTERM handler belongs to its event loop: left behind (as uvloop leaves it) it pointed at a
    # closed loop, and SIGTERM no longer stopped the process that called the command (a test run, here).
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    assert invoke("run", "--sim", "-n", "1", "--db", str(tmp_path / "t.db")).exit_code == 0
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_a_run_after_an_idle_spell_says_which_samples_were_cold(
    tmp_path: Path, sim_thread: Callable[..., SimThread]
) -> None:
    """The store's last request to the endpoint (an earlier run) makes the next run's first request cold; the
    summary gives its TTFT apart, the simulator's model load in it; --json has the same."""
    s = sim_thread(sim.Scenario(ttft_ms=20, tokens_per_s=2000, output_tokens=5, cold_start_ms=400, cold_after_s=0.3))
    config = tmp_path / "c.toml"
    config.write_text(f'[providers.s]\nbase_url = "{s.url}"\nmodels = ["m"]\n[schedule]\ncold_after = "0.3s"\n')
    db = str(tmp_path / "t.db")
    first = invoke("run", "--config", str(config), "-n", "2", "--db", db)
    assert first.exit_code == 0 and "cold" not in first.stdout  # nothing known before: nothing tagged
    time.sleep(0.7)  # an idle spell past both thresholds
    later = invoke("run", "--config", str(config), "-n", "3", "--db", db)
    assert later.exit_code == 0, later.output
    assert "1 of 3 cold (idle >= 0.3 s): TTFT p50 cold " in later.stdout
    time.sleep(0.7)
    (summary,) = json.loads(invoke("run", "--config", str(config), "-n", "3", "--db", db, "--json").stdout)["endpoints"]
    cold = summary["cold"]
    assert (cold["count"], cold["cold_after_s"]) == (1, 0.3)
    assert (cold["ttft_ms_cold"]["count"], cold["ttft_ms_warm"]["count"]) == (1, 2)
    assert cold["ttft_ms_cold"]["p50"] - cold["ttft_ms_warm"]["p50"] > 400 * 0.8  # the model's load
    # The simulator loaded the model for each later run's first request (the first run's may have met it loading
    # too, after a slow start of the command: unknown to tokenpace, and so untagged).
    assert [t.cold_start_ms for t in s.simulator.truth.values()][2:] == [400, 0, 0] * 2


def test_the_summary_says_the_canary_pass_rate_and_exports_carry_the_verdicts(
    tmp_path: Path, sim_thread: Callable[..., SimThread]
) -> None:
    """Issue 22: a model swapped after 2 requests passes 2 of 4 canaries; the table's title, --json and the
    --output file all say so."""
    s = sim_thread(sim.Scenario(ttft_ms=5, tokens_per_s=2000, output_tokens=30, canary_wrong_after=2))
    out, db = tmp_path / "samples.csv", str(tmp_path / "t.db")
    result = invoke("run", "--base-url", s.url, "--model", "m", "-n", "4", "-c", "1", "--db", db, "--output", str(out))
    assert result.exit_code == 0, result.output
    assert "4/4 ok (100%)" in result.stdout and "canary 2/4 (50%)" in result.stdout
    rows = list(csv.DictReader(out.open()))
    assert [r["canary_ok"] for r in sorted(rows, key=lambda r: r["started_at"])] == ["1", "1", "0", "0"]
    assert all(r["canary"].startswith("CHECK ") for r in rows)
    doc = json.loads(invoke("run", "--base-url", s.url, "--model", "m", "-n", "2", "--db", db, "--json").stdout)
    assert doc["endpoints"][0]["canary"] == {"passed": 0, "checked": 2, "rate": 0.0}  # still swapped
