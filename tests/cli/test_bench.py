"""`tokenpace bench` end to end against simulators: one level, a sweep, the automatic sweep, mistakes, a stop."""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tests.conftest import SimThread
from tokenpace import sim
from tokenpace.board.numbers import rate
from tokenpace.cli import main
from tokenpace.load.results import BenchResult, read_result
from tokenpace.load.sweep import TTFT_GROWTH, kept_up
from tokenpace.store.database import open_store

QUICK = sim.Scenario(ttft_ms=20, tokens_per_s=500, output_tokens=10)
SMALL = ("--data", "synthetic:input=100,output=10")  # prompts the simulator counts quickly


def invoke(*args: str) -> Result:
    return CliRunner(env={"COLUMNS": "160"}).invoke(main, list(args), catch_exceptions=False)


def result_in(out: Path) -> BenchResult:
    (path,) = out.glob("*.json")
    assert path.with_suffix(".html").is_file()
    return read_result(path)


def test_one_level_writes_result_and_report_and_stores_every_request(
    tmp_path: Path, sim_thread: Callable[..., SimThread]
) -> None:
    s = sim_thread(QUICK)
    out, db = tmp_path / "out", str(tmp_path / "t.db")
    run = invoke("bench", "--base-url", s.url, "--model", "m", "-c", "3", "-n", "12", "--warmup", "2",
                 "--slo", "ttft=10s", "--db", db, "--out", str(out), *SMALL, "-q")  # fmt: skip
    assert run.exit_code == 0, run.output
    result = result_in(out)
    (point,) = result.points
    assert point.load.concurrency == 3 and point.figures.requests == 12 and point.figures.ok == 12
    assert point.figures.goodput == pytest.approx(point.figures.request_rate)  # every request met a 10 s TTFT
    assert result.endpoint == "127.0.0.1/m" and result.dataset.startswith("synthetic")
    assert s.url not in (out / next(out.glob("*.json")).name).read_text()  # never the URL
    with open_store(db) as store:
        samples = store.samples()
    assert len(samples) == 14 and {x.run_id for x in samples} == {point.run_id}  # warm-up stored too
    assert not any(x.published for x in samples)
    assert "concurrency 3" in run.output and "12/12" in run.output


def test_a_concurrency_sweep_has_a_point_per_level(tmp_path: Path, sim_thread: Callable[..., SimThread]) -> None:
    s = sim_thread(QUICK)
    out = tmp_path / "out"
    run = invoke("bench", "--base-url", s.url, "--model", "m", "--sweep", "concurrency=1,4", "-n", "8",
                 "--db", str(tmp_path / "t.db"), "--out", str(out), *SMALL, "-q")  # fmt: skip
    assert run.exit_code == 0, run.output
    result = result_in(out)
    assert result.sweep == "concurrency" and [p.load.concurrency for p in result.points] == [1, 4]
    assert all(p.figures.ok == 8 for p in result.points)


def test_auto_sweep_brackets_a_servers_known_capacity(tmp_path: Path, sim_thread: Callable[..., SimThread]) -> None:
    # The simulator begins at most 25 requests/s, on its own schedule (exact however loaded the machine), each
    # ~55 ms long (20 ms TTFT, 7 gaps of 5 ms): concurrency 1 gets ~17 req/s, the doubling overloads it, and
    # the bisection closes in on 25 from both sides. Constant arrivals: no Poisson queue below capacity.
    capacity, n = 25.0, 80
    s = sim_thread(sim.Scenario(ttft_ms=20, tokens_per_s=200, output_tokens=8, max_requests_per_s=capacity))
    out = tmp_path / "out"
    # A client on a loaded 2-core machine may send an overloaded level's requests late (an invalid level stops
    # the sweep: tests/load/test_sweep.py); the simulator's schedule absorbs that lateness, so allow a second.
    # No warm-up: its request would take a slot of the simulator's schedule ahead of each level's first.
    run = invoke("bench", "--base-url", s.url, "--model", "m", "--sweep", "auto", "-n", str(n), "--arrival",
                 "constant", "--max-dispatch-p99", "1000", "--db", str(tmp_path / "t.db"), "--out", str(out),
                 "--data", "synthetic:input=32,output=8", "--warmup", "0", "-q")  # fmt: skip
    assert run.exit_code == 0, run.output
    result = result_in(out)
    bracket = result.bracket
    rates = [(p.load.rate, p.figures.request_rate, p.figures.ttft.p50, p.loop_lag_p99_ms) for p in result.points]
    assert bracket is not None and bracket.low is not None and bracket.high is not None, (bracket, rates)
    assert bracket.stopped == "the bracket is within 5%" and bracket.high <= bracket.low * 1.05, (bracket, rates)
    # The truth is inside, up to the judgement's resolution: a level over capacity by a share e queues its median
    # request n e / 2 / capacity seconds, which passes for keeping up until TTFT_GROWTH x the unloaded TTFT.
    unloaded_ttft = result.points[0].figures.ttft.p50
    assert unloaded_ttft is not None
    resolution = 2 * (TTFT_GROWTH - 1) * unloaded_ttft / 1000 * capacity / n  # ~3 %
    # (1 % more for the unloaded TTFT's own noise on a loaded machine: 25.7 req/s at 2.7 % once, in a full run)
    assert bracket.low <= capacity * (1 + resolution) * 1.01, (bracket, resolution, rates)
    # Below, a client whose own loop lagged sends in bunches, and near capacity (a 1.7 ms slack per request at
    # 24/s) a bunch queues: a client-bound level may look saturated up to a step (5 %) under the truth.
    (above,) = [p for p in result.points if p.load.rate == bracket.high]
    assert capacity <= bracket.high * (1.05 if above.client_bound else 1), (bracket, above.loop_lag_p99_ms, rates)
    assert result.saturation == bracket.low  # what an older tokenpace reads
    said = f"saturation between {rate(bracket.low)} and {rate(bracket.high)} req/s"
    assert said in " ".join(run.output.split()), run.output
    # Each level judged as the sweeper judged it: every rate above the bracket not kept up with, none below it.
    for p in result.points[1:]:
        assert p.load.rate is not None and p.released_rate is not None
        held = kept_up(p.figures, p.released_rate, unloaded_ttft)
        assert held == (p.load.rate <= bracket.low), (p.load.rate, bracket)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["-c", "2", "--rate", "3"], "not both"),
        (["--max-concurrency", "4"], "give --rate too"),
        (["--sweep", "speed=1,2"], "--sweep 'speed=1,2': write concurrency=1,4,16"),
        (["--slo", "ttft=fast"], "--slo 'ttft=fast': write it as"),
        (["--duration", "forever"], "--duration 'forever': give a time"),
        (["--data", "nonsense:x=1"], "nonsense"),
    ],
)
def test_mistakes_are_one_line_and_send_nothing(
    tmp_path: Path, sim_thread: Callable[..., SimThread], args: list[str], said: str
) -> None:
    s = sim_thread(QUICK)
    run = invoke("bench", "--base-url", s.url, "--model", "m", *args, "--db", str(tmp_path / "t.db"),
                 "--out", str(tmp_path / "out"))  # fmt: skip
    assert run.exit_code == 2 and said in run.output, run.output
    assert not s.simulator.truth and not (tmp_path / "out").exists()


def test_an_in_process_bench_leaves_sigterm_as_it_found_it(tmp_path: Path) -> None:
    # As `run` (tests/cli/test_run.py): the handler of a closed loop left behind would swallow SIGTERM.
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    db, out = str(tmp_path / "t.db"), str(tmp_path / "o")
    run = invoke("bench", "--sim", "-n", "2", "--db", db, "--out", out, "-q", *SMALL)
    assert run.exit_code == 0, run.output
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_two_endpoints_are_refused(tmp_path: Path) -> None:
    run = invoke("bench", "--sim", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--db", str(tmp_path / "t"))
    assert run.exit_code == 2 and "drives one endpoint" in run.output


@pytest.mark.parametrize("load", [("--rate", "20"), ("-c", "2")])  # -c 2: decoding held back till the end
def test_sigterm_mid_level_writes_what_was_measured(
    tmp_path: Path, sim_thread: Callable[..., SimThread], load: tuple[str, str]
) -> None:
    s = sim_thread(sim.Scenario(ttft_ms=10, tokens_per_s=100, output_tokens=20))
    out, db = tmp_path / "out", tmp_path / "t.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokenpace", "bench", "--base-url", s.url, "--model", "m", *load,
         "--duration", "60s", "--db", str(db), "--out", str(out), "-q", *SMALL],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    for _ in range(400):
        if len(s.simulator.truth) >= 20:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, errors = proc.communicate(timeout=60)
    assert proc.returncode == 143, errors
    (point,) = result_in(out).points
    with open_store(str(db)) as store:
        stored = len(store.samples())
    # Every request sent is in the file and the database; the warm-up request (bench's default 1) in the database.
    assert point.figures.requests + 1 == stored >= 20
    stored_load = json.loads(next(out.glob("*.json")).read_text())["points"][0]["load"]
    assert (stored_load["rate"], stored_load["concurrency"]) == ((20, None) if load[0] == "--rate" else (None, 2))


def test_compare_exits_1_when_the_second_run_regressed(tmp_path: Path, sim_thread: Callable[..., SimThread]) -> None:
    # The slow server's TTFT and TPOT are four times the fast one's (100 and 20 ms), far beyond what a loaded
    # machine adds. A second run of the fast server is no fixture: on a loaded machine one stalled request moves
    # a P99 of 20 requests by more than any threshold worth testing, so "the same" is the same file.
    fast = sim_thread(sim.Scenario(ttft_ms=100, tokens_per_s=50, output_tokens=4))
    slow = sim_thread(sim.Scenario(ttft_ms=400, tokens_per_s=12.5, output_tokens=4))
    for name, s in (("a", fast), ("b", slow)):
        run = invoke("bench", "--base-url", s.url, "--model", "m", "-c", "2", "-n", "20", "--seed", "7", *SMALL,
                     "--db", str(tmp_path / "t.db"), "--out", str(tmp_path / name), "-q")  # fmt: skip
        assert run.exit_code == 0, run.output
    a, b = (str(next((tmp_path / n).glob("*.json"))) for n in "ab")
    worse = invoke("compare", a, b)
    assert worse.exit_code == 1 and "regressed" in worse.output and "TTFT P50" in worse.output
    assert invoke("compare", b, a).exit_code == 0  # faster is no regression
    assert invoke("compare", a, a).exit_code == 0  # the same figures are no regression


def test_the_live_line_shows_requests_done_rate_and_running_ttft() -> None:
    import io

    from rich.console import Console
    from rich.progress import Progress

    from tests.loadkit import steady
    from tokenpace.cli.benchlive import Live
    from tokenpace.config.traffic import Load

    progress = Progress(console=Console(file=io.StringIO()))
    live = Live(progress)
    live.level(Load(concurrency=2, requests=5, warmup=1))
    requests = steady(6, ttft_ms=100, gap_ms=10)
    live.done(dataclasses.replace(requests[0], warmup=True))
    assert "(warm-up)" in progress.tasks[0].fields["live"] and "TTFT p50 -" in progress.tasks[0].fields["live"]
    for d in requests[1:]:
        live.done(d)
    (task,) = progress.tasks
    assert task.total == 6 and task.completed == 6 and task.description == "concurrency 2"
    assert "req/s" in task.fields["live"] and "TTFT p50 100 ms" in task.fields["live"]
