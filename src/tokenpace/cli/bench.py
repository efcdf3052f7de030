"""`tokenpace bench`: a load test of one endpoint, one level or a sweep, with live figures, a result file and a report.

Why a command of its own rather than options of `run`: `run` takes samples of many endpoints for the board,
a few requests each; a load test drives one deployment, at a load it chooses, and answers with run-level
figures (throughput, percentiles, goodput) over hundreds of requests. Its samples are stored all the same
(never published on the board), and its result document is what `tokenpace compare` reads.
"""

from __future__ import annotations

import dataclasses
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tokenpace.cli.benchoptions import (
    LEVEL_OPTIONS,
    LOAD_OPTIONS,
    OBJECTIVE_OPTIONS,
    OUTPUT_OPTIONS,
    PROMPT_OPTIONS,
    SENDING_OPTIONS,
    TARGET_OPTIONS,
)
from tokenpace.cli.options import SEED_MAX
from tokenpace.cli.stderr import err
from tokenpace.cli.store import close_store
from tokenpace.errors import StoreError

if TYPE_CHECKING:
    from tokenpace import sim
    from tokenpace.cli.benchlive import Live
    from tokenpace.cli.benchoptions import Levels, LoadShape, Objectives, Output
    from tokenpace.cli.measureoptions import Prompts, Sending, Target
    from tokenpace.clients.transport import Timeouts
    from tokenpace.config.endpoints import Endpoint
    from tokenpace.config.traffic import Load, Slo, Sweep
    from tokenpace.load.engine import RunResult, SampleSink
    from tokenpace.load.figures import Figures
    from tokenpace.load.results import BenchPoint, BenchResult
    from tokenpace.load.running import RunningFigures
    from tokenpace.load.sweep import Sweeper
    from tokenpace.prompts.chains import Dataset


@click.command("bench")
@TARGET_OPTIONS
@LOAD_OPTIONS
@LEVEL_OPTIONS
@OBJECTIVE_OPTIONS
@PROMPT_OPTIONS
@SENDING_OPTIONS
@OUTPUT_OPTIONS
def bench(
    target: Target,
    shape: LoadShape,
    levels: Levels,
    objectives: Objectives,
    prompts: Prompts,
    sending: Sending,
    output: Output,
) -> None:
    """Load-test one endpoint: a closed loop (-c) or an open loop (--rate), one level or a --sweep.

    ENDPOINT is a name from --config or PRESET/MODEL, as for `tokenpace run`; or give --base-url, or --sim.
    Writes OUT/<time>.json (what `tokenpace compare` reads) and OUT/<time>.html (a report that reads offline).

    \b
    Exit codes: 0 done; 1 a level had no successful request, or was invalid (--max-dispatch-p99; not in auto);
    2 a mistake in the command or a file; 3 tokenpace could not work; 130/143 interrupted (what was measured
    is stored and written).
    """
    import random

    base = shape.load()
    sweep = levels.sweep()
    workers = shape.workers_for(base, sweep)
    slo = objectives.slo()
    cfg = target.config()
    endpoint = target.one(cfg)
    seed = prompts.seed if prompts.seed is not None else random.SystemRandom().randrange(SEED_MAX)
    dataset = prompts.dataset(cfg, seed)
    output.check()
    job = _Job(endpoint, target.scenarios(cfg), dataset, base, sweep, slo, seed, sending.timeouts(), sending.cold,
               output.out_dir, output.quiet, levels.repeat, objectives.max_dispatch_ms, workers)  # fmt: skip
    _measure_and_report(job, output.db)


@dataclasses.dataclass(frozen=True)
class _Job:
    """What the command line asked for, checked: one endpoint, its dataset and load, and where to write."""

    endpoint: Endpoint
    scenarios: dict[str, sim.Scenario]  # the simulated providers' (a real endpoint has none)
    dataset: Dataset
    base: Load
    sweep: Sweep | None
    slo: Slo | None
    seed: int
    timeouts: Timeouts
    cold: bool
    out_dir: Path
    quiet: bool
    repeat: int = 1
    max_dispatch_ms: float | None = None
    workers: int = 1  # processes sharing each level (load/workers.py)


def _measure_and_report(job: _Job, db: str | None) -> None:
    """Run the levels with live progress, then print the table and write the result and report, even if stopped."""
    from tokenpace.board.console import Console
    from tokenpace.board.loadtable import print_result
    from tokenpace.cli.benchlive import Live, progress
    from tokenpace.cli.commandline import safe_command
    from tokenpace.store.database import open_store

    store = open_store(db)
    command = safe_command(sys.argv[1:], store.url)
    started = datetime.now(UTC)
    live, held = Live(progress(job.quiet)), list["Sweeper"]()
    stopped: int | None = None
    result: BenchResult | None = None
    try:
        stopped = _run(job, store, command, live, held)
    finally:  # also when a dataset's file turned out bad mid-way: what was measured is written
        close_store(store)
        sweeper = held[0] if held else None
        if sweeper is not None and (sweeper.levels or (sweeper.running is not None and sweeper.running.run_id)):
            result = _result(job, sweeper, command, started)
            print_result(Console(), result)
            json_path, html_path = _write(job.out_dir, result, started)
            err.print(f"wrote {json_path} and {html_path}; samples in {store.url}")
    if stopped is not None:
        sys.exit(stopped)
    if result is not None and any(p.figures.ok == 0 for p in result.points):
        err.print("[bold red]a level had no successful request[/]: see the errors above")
        sys.exit(1)
    # An auto sweep climbs until something gives, the client included: its invalid level is where it stopped.
    if result is not None and result.sweep != "auto" and any(p.invalid for p in result.points):
        err.print("[bold red]a level is invalid[/]: the client sent late (see above); not the load asked")
        sys.exit(1)


def _run(job: _Job, store: SampleSink, command: str, live: Live, held: list[Sweeper]) -> int | None:
    """The levels of the job against its endpoint (its simulator started if it is one); SIGTERM stops as Ctrl-C.

    Returns None when every level ran, else the exit code of the signal that stopped it (130, 143).
    """
    import contextlib

    from tokenpace import sim
    from tokenpace.cli.signals import Stop, run_stoppable
    from tokenpace.load.engine import RunOptions
    from tokenpace.load.sweep import Sweeper

    # Only the running figures of each level are kept: a million requests hold what a hundred do.
    options = RunOptions(
        timeouts=job.timeouts, warm_connections=not job.cold, seed=job.seed, command=command, keep_done=False
    )

    async def go() -> None:
        # A signal cancels this task: each level's cleanup keeps what was taken.
        async with contextlib.AsyncExitStack() as stack:
            (target,) = await sim.started_for([job.endpoint], job.scenarios, stack)
            sweeper = Sweeper(target, job.dataset, options, job.slo, store, live.done, live.level,
                              job.max_dispatch_ms, job.repeat, job.workers)  # fmt: skip
            held.append(sweeper)
            if job.sweep is not None and job.sweep.auto:
                await sweeper.auto(job.base)
            else:
                await sweeper.given(job.base, job.sweep)

    with live.progress:
        done = run_stoppable(go)
    if isinstance(done, Stop):
        err.print(f"{done.said}: what was measured is kept")
        return done.code
    return None


def _result(job: _Job, sweeper: Sweeper, command: str, started: datetime) -> BenchResult:
    """The result document: a point per finished level, and the level in progress if the run was stopped."""
    from tokenpace.load.figures import dispatch_problem
    from tokenpace.load.results import BenchResult
    from tokenpace.version import __version__

    points = [
        _bench_point(lv.result.load, lv.result.summary, lv.figures, lv.repeat, lv.invalid, lv.result)
        for lv in sweeper.levels
    ]
    finished = {p.run_id for p in points}
    running, load = sweeper.running, sweeper.running_load
    if running is not None and load is not None and running.run_id and running.run_id not in finished:
        f = running.figures(load.rate)
        points.append(_bench_point(load, running, f, sweeper.running_repeat, dispatch_problem(f, job.max_dispatch_ms)))
    e, bracket = job.endpoint, sweeper.bracket
    return BenchResult(
        endpoint=e.name, model=e.model, protocol=e.protocol, dataset=job.dataset.name,
        started_at=started.isoformat(timespec="seconds"), tool_version=__version__, command=command, slo=job.slo,
        sweep=None if job.sweep is None else "auto" if job.sweep.auto else job.sweep.over,
        saturation=bracket.low if bracket is not None and bracket.high is not None else None,
        points=tuple(points), max_dispatch_p99_ms=job.max_dispatch_ms, repeat=job.repeat, bracket=bracket,
    )  # fmt: skip


def _bench_point(
    load: Load, summary: RunningFigures, f: Figures, repeat: int, invalid: str, result: RunResult | None = None
) -> BenchPoint:
    """A level's point: its figures, rows and released rate, and the client's health from its run's record and
    each worker process's verdict (a level stopped in progress has none yet: its samples' run id, no health)."""
    from tokenpace.load.results import BenchPoint

    run = None if result is None else result.run
    return BenchPoint(
        load, f, summary.run_id if run is None else run.id,
        client_bound=run is not None and run.client_bound,
        cpu_us_per_event=None if run is None else run.cpu_us_per_event,
        loop_lag_p99_ms=None if run is None else run.loop_lag_p99_ms,
        rows=summary.rows(), released_rate=summary.released_rate() if load.rate else None,
        repeat=repeat, invalid=invalid, workers=() if result is None else result.workers,
    )  # fmt: skip


def _write(out_dir: Path, result: BenchResult, started: datetime) -> tuple[Path, Path]:
    """OUT/<UTC time>.json and .html; a file that cannot be written is one line (the samples are stored)."""
    from tokenpace.load.results import to_json
    from tokenpace.web.report import render_report

    stem = out_dir / started.strftime("%Y%m%d-%H%M%S")
    json_path, html_path = stem.with_suffix(".json"), stem.with_suffix(".html")
    try:
        out_dir.mkdir(exist_ok=True)
        json_path.write_text(to_json(result))
        html_path.write_text(render_report(result))
    except OSError as exc:
        raise StoreError(f"--out {out_dir}: {exc.strerror or exc}; the samples are stored") from None
    return json_path, html_path
