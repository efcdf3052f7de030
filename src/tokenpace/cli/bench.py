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

from tokenpace.cli.kit import Finite, close_store, err
from tokenpace.cli.oneshot import DEFAULT_WORKLOAD, SEED_MAX
from tokenpace.config.presets import PROTOCOLS
from tokenpace.errors import ConfigError, StoreError

if TYPE_CHECKING:
    from tokenpace import sim
    from tokenpace.cli.benchlive import Live
    from tokenpace.clients.transport import Timeouts
    from tokenpace.config.endpoints import Config, Endpoint
    from tokenpace.config.load import Load, Slo, Sweep
    from tokenpace.load.chains import Dataset
    from tokenpace.load.figures import Done
    from tokenpace.load.results import BenchResult
    from tokenpace.load.run import SampleSink
    from tokenpace.load.sweep import Sweeper

MAX_REPEAT = 64  # runs of one level; with a sweep, all points must still fit a result document (256)


@click.command("bench")
@click.argument("endpoint", required=False)
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="TOML file declaring providers and models.")  # fmt: skip
@click.option("--base-url", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1.")
@click.option("--model", help="Model name to request (with --base-url).")
@click.option("--protocol", type=click.Choice(PROTOCOLS), default="openai-chat", show_default=True,
              help="Wire protocol (with --base-url or --sim).")  # fmt: skip
@click.option("--api-key-env", help="Name of the environment variable holding the API key.")
@click.option("--provider", help="Provider label (default: the URL's host).")
@click.option("--header", "headers", multiple=True, help="Extra request header 'Name: value' (repeatable).")
@click.option("--sim", "use_sim", is_flag=True, help="Load-test a built-in simulator started in-process.")
@click.option("-c", "--concurrency", type=click.IntRange(1, 4096),
              help="Closed loop: requests in flight at once [default: 1].")  # fmt: skip
@click.option("--rate", type=Finite(min=0, max=10_000, min_open=True),
              help="Open loop: requests started per second, whatever the server does.")  # fmt: skip
@click.option("--arrival", type=click.Choice(["poisson", "constant", "gamma"]), default="poisson",
              show_default=True, help="How --rate's arrivals are spaced.")  # fmt: skip
@click.option("--burstiness", default=1.0, show_default=True, type=Finite(min=0, max=100, min_open=True),
              help="Gamma arrivals' shape: below 1 burstier, above 1 more regular (1: Poisson).")  # fmt: skip
@click.option("--max-concurrency", type=click.IntRange(1, 4096), help="Open loop: cap on requests in flight.")
@click.option("-n", "--requests", type=click.IntRange(1, 1_000_000),
              help="Measured requests per level [default: 100, or no cap with --duration].")  # fmt: skip
@click.option("--duration", help="Stop releasing requests after this long per level (60s, 5m).")
@click.option("--warmup", default=0, show_default=True, type=click.IntRange(0, 100_000),
              help="Requests sent first under the same load, stored, and left out of the figures.")  # fmt: skip
@click.option("--sweep", "sweep_text", help="concurrency=1,4,16 | rate=1,2,4 | auto (find the saturation rate).")
@click.option("--repeat", default=1, show_default=True, type=click.IntRange(1, MAX_REPEAT),
              help="Run each level this many times back to back, a point each (for `tokenpace compare`).")  # fmt: skip
@click.option("--max-dispatch-p99", "max_dispatch_ms", default=100.0, show_default=True,
              type=Finite(min=0, max=3_600_000, min_open=True),
              help="Invalid level: its dispatch delay (sent - scheduled start) P99 is over this, ms.")  # fmt: skip
@click.option("--slo", "slo_text", help="Per-request objective for goodput, e.g. ttft=500ms,tpot=50ms.")
@click.option("--data", "data_spec", help="Dataset instead of fresh prompts: jsonl:F, sharegpt:F[,turns=N], "
              "synthetic:input=N,output=N, prefix:..., multiturn:... (see README).")  # fmt: skip
@click.option("-w", "--workload", "workload_name", default=DEFAULT_WORKLOAD, show_default=True,
              help="Fresh-prompt workload when --data is not given.")  # fmt: skip
@click.option("--max-tokens", type=click.IntRange(min=1), help="Override the workload's output cap.")
@click.option("--corpus", type=click.Path(file_okay=False, path_type=Path), help="Folder of texts for prompts.")
@click.option("--seed", type=click.IntRange(0, SEED_MAX), help="Reproduce prompts and arrivals of an earlier run.")
@click.option("--first-token-timeout", default=60.0, show_default=True, type=Finite(min=0, min_open=True),
              help="Seconds from sending a request to its first generated text.")  # fmt: skip
@click.option("--total-timeout", default=300.0, show_default=True, type=Finite(min=0, min_open=True),
              help="Seconds a whole request may take.")  # fmt: skip
@click.option("--cold", is_flag=True, help="Do not open connections before the first request.")
@click.option("--db", help="SQLite file or postgresql:// URL (default: the user data directory).")
@click.option("--out", "out_dir", default="tokenpace-bench", show_default=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the result (.json) and report (.html).")  # fmt: skip
@click.option("-q", "--quiet", is_flag=True, help="No live progress; the table stays.")
def bench(
    endpoint: str | None,
    config_path: Path | None,
    base_url: str | None,
    model: str | None,
    protocol: str,
    api_key_env: str | None,
    provider: str | None,
    headers: tuple[str, ...],
    use_sim: bool,
    concurrency: int | None,
    rate: float | None,
    arrival: str,
    burstiness: float,
    max_concurrency: int | None,
    requests: int | None,
    duration: str | None,
    warmup: int,
    sweep_text: str | None,
    repeat: int,
    max_dispatch_ms: float,
    slo_text: str | None,
    data_spec: str | None,
    workload_name: str,
    max_tokens: int | None,
    corpus: Path | None,
    seed: int | None,
    first_token_timeout: float,
    total_timeout: float,
    cold: bool,
    db: str | None,
    out_dir: Path,
    quiet: bool,
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

    from tokenpace import sim
    from tokenpace.clients.transport import Timeouts
    from tokenpace.config import load as loadcfg
    from tokenpace.config.endpoints import Config, load

    if concurrency is not None and rate is not None:
        raise ConfigError("give -c (closed loop) or --rate (open loop), not both")
    if max_concurrency is not None and rate is None:
        raise ConfigError("--max-concurrency caps an open loop: give --rate too (or use -c)")
    seconds = loadcfg.parse_seconds(duration, "--duration") if duration is not None else None
    base = loadcfg.Load(
        concurrency=None if rate is not None else concurrency or 1,
        rate=rate,
        arrival=arrival,  # type: ignore[arg-type]  # click.Choice checked it
        burstiness=burstiness,
        requests=requests if requests is not None or seconds is not None else 100,
        duration_s=seconds,
        warmup=warmup,
        max_concurrency=max_concurrency,
    )
    sweep = loadcfg.parse_sweep(sweep_text) if sweep_text else None
    _check_repeat(repeat, sweep)
    slo = loadcfg.parse_slo(slo_text) if slo_text else None
    cfg = load(config_path) if config_path is not None else Config()
    target = _endpoint(endpoint, cfg, base_url, model, protocol, api_key_env, provider, headers, use_sim)
    seed = seed if seed is not None else random.SystemRandom().randrange(SEED_MAX)
    dataset = _dataset(data_spec, cfg, workload_name, max_tokens, corpus, seed)
    if not out_dir.absolute().parent.is_dir():
        raise ConfigError(f"--out {out_dir}: the folder {out_dir.absolute().parent} does not exist")
    scenarios = {"sim": sim.Scenario(ttft_ms=150, tokens_per_s=120)} if use_sim else sim.scenarios(cfg)
    # A stream may be silent as long as its first token may take, and never less than a minute.
    idle = max(60.0, first_token_timeout)
    timeouts = Timeouts(10.0, first_token_timeout, idle, total_timeout)
    job = _Job(target, scenarios, dataset, base, sweep, slo, seed, timeouts, cold, out_dir, quiet, repeat,
               max_dispatch_ms)  # fmt: skip
    _measure_and_report(job, db)


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


def _check_repeat(repeat: int, sweep: Sweep | None) -> None:
    """--repeat runs given levels again: not an auto sweep's (each of its levels is chosen from the last)."""
    from tokenpace.load.results import MAX_POINTS

    if repeat > 1 and sweep is not None and sweep.auto:
        raise ConfigError("--repeat runs given levels again: give --sweep concurrency=... or rate=..., not auto")
    if sweep is not None and len(sweep.values) * repeat > MAX_POINTS:
        raise ConfigError(f"--sweep with --repeat {repeat}: {len(sweep.values) * repeat} levels, at most {MAX_POINTS}")


def _endpoint(
    ref: str | None, cfg: Config, base_url: str | None, model: str | None, protocol: str,
    key_env: str | None, provider: str | None, headers: tuple[str, ...], use_sim: bool,
) -> Endpoint:  # fmt: skip
    """The one endpoint to load: --sim's, --base-url's, or the one the name finds in --config or the presets."""
    from tokenpace.cli.oneshot import _cli_endpoint
    from tokenpace.config.endpoints import Endpoint
    from tokenpace.config.settings import SIM_BASE_URL

    chosen = list(cfg.find(ref)) if ref else []
    if base_url:
        chosen.append(_cli_endpoint(base_url, model, protocol, key_env, "default", provider, headers))
    if use_sim:
        chosen.append(Endpoint("sim", "sim", SIM_BASE_URL.format(provider="sim"), protocol=protocol, simulated=True))
    if len(chosen) != 1:
        what = "nothing" if not chosen else ", ".join(e.name for e in chosen)
        raise ConfigError(f"a load test drives one endpoint, not {what}: name one, or give --base-url or --sim")
    chosen[0].api_key()  # a missing key variable is reported before anything is sent
    return chosen[0]


def _dataset(
    spec: str | None, cfg: Config, workload_name: str, max_tokens: int | None, corpus: Path | None,
    seed: int,
) -> Dataset:  # fmt: skip
    from tokenpace.load.datasets import open_dataset
    from tokenpace.prompts.corpus import load_corpus

    workload = cfg.workload(workload_name)
    if max_tokens is not None:
        workload = dataclasses.replace(workload, max_tokens=max_tokens)
    folder = corpus or cfg.corpus
    return open_dataset(spec, workload, seed, load_corpus(folder) if folder is not None else None)


def _measure_and_report(job: _Job, db: str | None) -> None:
    """Run the levels with live progress, then print the table and write the result and report, even if stopped."""
    from tokenpace.board.console import Console
    from tokenpace.board.loadtable import print_result
    from tokenpace.cli.benchlive import Live, progress
    from tokenpace.cli.measuring import _safe_command
    from tokenpace.store.database import open_store

    store = open_store(db)
    command = _safe_command(sys.argv[1:], store.url)
    started = datetime.now(UTC)
    live, held = Live(progress(job.quiet)), list["Sweeper"]()
    stopped: int | None = None
    result: BenchResult | None = None
    try:
        stopped = _run(job, store, command, live, held)
    finally:  # also when a dataset's file turned out bad mid-way: what was measured is written
        close_store(store)
        sweeper = held[0] if held else None
        if live.current or (sweeper is not None and sweeper.levels):
            result = _result(job, sweeper, live, command, started)
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
    import asyncio
    import contextlib
    import signal

    from tokenpace import sim
    from tokenpace.cli.kit import run_async
    from tokenpace.load.engine import Settings
    from tokenpace.load.sweep import Sweeper

    settings = Settings(job.timeouts, warm_connections=not job.cold, seed=job.seed, command=command)
    terminated: list[bool] = []

    async def go() -> None:
        loop, main_task = asyncio.get_running_loop(), asyncio.current_task()
        assert main_task is not None

        def on_sigterm() -> None:
            terminated.append(True)
            main_task.cancel()  # as asyncio.Runner does on SIGINT: each level's cleanup keeps what was taken

        async with contextlib.AsyncExitStack() as stack:
            loop.add_signal_handler(signal.SIGTERM, on_sigterm)
            stack.callback(loop.remove_signal_handler, signal.SIGTERM)  # as cli/measuring.py does, and why
            (target,) = await sim.started_for([job.endpoint], job.scenarios, stack)
            sweeper = Sweeper(target, job.dataset, settings, job.slo, store, live.done, live.level,
                              job.max_dispatch_ms, job.repeat)  # fmt: skip
            held.append(sweeper)
            if job.sweep is not None and job.sweep.auto:
                await sweeper.auto(job.base)
            else:
                await sweeper.given(job.base, job.sweep)

    try:
        with live.progress:
            run_async(go)
        return None
    except (KeyboardInterrupt, asyncio.CancelledError):
        err.print(f"{'stopped (SIGTERM)' if terminated else 'interrupted'}: what was measured is kept")
        return 143 if terminated else 130


def _result(job: _Job, sweeper: Sweeper | None, live: Live, command: str, started: datetime) -> BenchResult:
    """The result document: a point per finished level, and the level in progress if the run was stopped."""
    from tokenpace.load.figures import dispatch_problem, figures
    from tokenpace.load.results import BenchResult, Point, rows_of
    from tokenpace.load.sweep import released_rate
    from tokenpace.version import __version__

    points = []
    for level in sweeper.levels if sweeper is not None else []:
        run, done = level.result.run, level.result.done
        points.append(Point(level.result.load, level.figures, run.id, run.client_bound, run.cpu_us_per_event,
                            run.loop_lag_p99_ms, rows_of(done, _first_sent(done)),
                            released_rate(done) if level.result.load.rate else None, level.repeat,
                            level.invalid))  # fmt: skip
    finished = {p.run_id for p in points}
    if live.load is not None and live.current and live.current[0].sample.run_id not in finished:
        done, load = live.current, live.load
        f = figures(done, job.slo, load.rate)
        points.append(Point(load, f, done[0].sample.run_id, rows=rows_of(done, _first_sent(done)),
                            released_rate=released_rate(done) if load.rate else None,
                            repeat=sweeper.running_repeat if sweeper is not None else 0,
                            invalid=dispatch_problem(f, job.max_dispatch_ms)))  # fmt: skip
    e = job.endpoint
    return BenchResult(
        endpoint=e.name, model=e.model, protocol=e.protocol, dataset=job.dataset.name,
        started_at=started.isoformat(timespec="seconds"), tool_version=__version__, command=command, slo=job.slo,
        sweep=None if job.sweep is None else "auto" if job.sweep.auto else job.sweep.over,
        saturation=None if sweeper is None else sweeper.saturation, points=tuple(points),
        max_dispatch_p99_ms=job.max_dispatch_ms, repeat=job.repeat,
    )  # fmt: skip


def _first_sent(done: list[Done]) -> int:
    measured = [d.sample.timeline.t_sent_ns for d in done if not d.warmup]
    return min(measured, default=0)


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
