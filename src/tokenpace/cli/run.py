"""`tokenpace run`: one-shot runs, from the command line's values to the printed summary and exit code.

Its measuring shows a progress bar, starts a simulator per simulated provider for the run, and stops on Ctrl-C
or SIGTERM with what was taken stored and summarised.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tokenpace.cli import options as opt
from tokenpace.cli.options import Finite
from tokenpace.cli.signals import Stop
from tokenpace.cli.stderr import err, stderr
from tokenpace.cli.store import close_store
from tokenpace.errors import ConfigError, StoreError

if TYPE_CHECKING:
    from tokenpace import sim
    from tokenpace.board.summary import Summary
    from tokenpace.config.endpoints import Endpoint
    from tokenpace.config.presets import ProtocolName
    from tokenpace.config.workloads import Workload
    from tokenpace.load.engine import RunOptions, RunResult
    from tokenpace.load.figures import Done
    from tokenpace.measure.sample import Sample
    from tokenpace.prompts.corpus import Corpus
    from tokenpace.store.database import Store


@click.command()
@click.argument("endpoints", nargs=-1)
@opt.config()
@opt.base_url
@opt.model
@opt.protocol
@opt.api_key_env()
@opt.provider
@click.option("--plan", default="default", show_default=True, help="Plan label.")
@opt.headers
@opt.use_sim("Measure a built-in simulator started in-process (any --protocol).")
@opt.requests("Requests per endpoint (each one a sample).", click.IntRange(min=1), default=10)
@opt.concurrency("Requests in flight at once, per endpoint.", default=1)
@opt.workload(
    "Built-in (1k, 10k, 100k, vision, parallel, cached-10k) or declared in --config; see `tokenpace workloads`."
)
@opt.max_tokens
@opt.corpus("Folder of .txt/.md/.html files to build prompts from (default: built in).")
@opt.seed("Reproduce the prompts of an earlier run (default: fresh prompts); 0 to 2**31-1, as stored.")
@click.option("--connect-timeout", default=10.0, show_default=True, type=Finite(min=0, min_open=True),
              help="Seconds to open a connection.")  # fmt: skip
@opt.first_token_timeout("Seconds from sending the request to the first generated text.")
@click.option(
    "--idle-timeout",
    default=60.0,
    show_default=True,
    type=Finite(min=0, min_open=True),
    help="Longest silence, before the first token too: keep it >= --first-token-timeout.",
)
@opt.total_timeout
@click.option("--max-response-bytes", default=32 * 2**20, show_default=True, type=click.IntRange(min=1024),
              help="Bytes a response may bring (decompressed); more fails it as response_too_large.")  # fmt: skip
@click.option("--no-warmup", is_flag=True, help="Do not open connections before measuring.")
@click.option("--keep-prompts", is_flag=True, help="Store each prompt's text with its sample.")
@opt.store()
@opt.as_json("Print the summary as JSON.")
@opt.quiet("No progress bar or notes; the summary stays.", "--no-progress")
@click.option(
    "--publish", is_flag=True, help="Rank these samples on the leaderboard (one-shot runs are not, by default)."
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the samples to FILE.csv or FILE.jsonl.",
)
def run(
    endpoints: tuple[str, ...],
    config_path: Path | None,
    base_url: str | None,
    model: str | None,
    protocol: ProtocolName,
    api_key_env: str | None,
    provider: str | None,
    plan: str,
    headers: tuple[str, ...],
    use_sim: bool,
    requests: int,
    concurrency: int,
    workload_name: str,
    max_tokens: int | None,
    corpus: Path | None,
    seed: int | None,
    connect_timeout: float,
    first_token_timeout: float,
    idle_timeout: float,
    total_timeout: float,
    max_response_bytes: int,
    no_warmup: bool,
    keep_prompts: bool,
    db: str | None,
    as_json: bool,
    quiet: bool,
    publish: bool,
    output: Path | None,
) -> None:
    """Stream completions from endpoints and summarise how fast they were.

    ENDPOINTS are names from --config (provider/model, provider:plan/model or provider; none: every endpoint
    the file declares), or PRESET/MODEL for a well-known provider (groq/llama-3.1-8b-instant); `tokenpace
    presets` lists them.

    \b
    Exit codes:
      0    every endpoint measured had at least one successful sample
      1    an endpoint had no successful sample (the summary says why)
      2    a mistake in the command or config file: nothing was sent
      3    tokenpace could not work (database, vocabulary): the message says what
      130  interrupted by Ctrl-C (SIGINT): what was measured is stored and summarised
      143  stopped by SIGTERM: the same
    """
    from tokenpace.board import terminal
    from tokenpace.cli.target import from_url, with_sim
    from tokenpace.clients.transport import Limits, Timeouts
    from tokenpace.config.endpoints import Config, read_config
    from tokenpace.config.workloads import check_requests
    from tokenpace.load.engine import RunOptions
    from tokenpace.prompts.corpus import load_corpus
    from tokenpace.store.database import open_store
    from tokenpace.store.export import write_samples

    cfg = read_config(config_path) if config_path is not None else Config()
    chosen = [e for ref in endpoints for e in cfg.find(ref)]
    if config_path is not None and not endpoints and not base_url and not use_sim:
        chosen = list(cfg.endpoints)
        if not chosen:
            raise ConfigError(f"{cfg.source} declares no endpoints: add a [providers.NAME] table with models")
    if base_url:
        chosen.append(from_url(base_url, model, protocol, api_key_env, plan, provider, headers))
    if not chosen and not use_sim:
        raise ConfigError("nothing to measure: name endpoints from --config, give --base-url, or use --sim")
    for e in chosen:
        e.api_key()  # a missing key variable is reported before anything is sent
    _check_output(output)
    workload = cfg.workload(workload_name)
    if max_tokens is not None:
        workload = dataclasses.replace(workload, max_tokens=max_tokens)
    corpus_dir = corpus or cfg.corpus
    texts = load_corpus(corpus_dir) if corpus_dir is not None else None
    if idle_timeout < first_token_timeout and not quiet:
        err.print(
            f"[yellow]note:[/] --idle-timeout {idle_timeout:g} s is shorter than --first-token-timeout "
            f"{first_token_timeout:g} s: a slow first token will fail as idle_timeout"
        )
    options = RunOptions(
        requests,
        concurrency,
        Timeouts(connect_timeout, first_token_timeout, idle_timeout, total_timeout),
        warm_connections=not no_warmup,
        seed=seed,
        keep_prompts=keep_prompts,
        publish=publish,
        limits=Limits(response_bytes=max_response_bytes),
    )
    chosen, scenarios = with_sim(cfg, chosen, use_sim, protocol)
    # An endpoint's prompts are all built before its first is sent, and every sample is kept to the summary.
    check_requests(
        workload, requests * len(chosen), "-n" if len(chosen) == 1 else f"-n {requests} x {len(chosen)} endpoints ="
    )
    truth = {e.name: _truth(scenarios[e.provider]) for e in chosen if e.simulated}
    store = open_store(db)
    try:
        bar, cold_after = not (as_json or quiet), cfg.cold_after_of
        taken = take(chosen, scenarios, workload, options, store, texts, show_progress=bar, cold_after=cold_after)
    finally:
        close_store(store)
    summaries = terminal.summaries(taken.samples, truth, {e.name: cfg.cold_after_of(e) for e in chosen})
    _report(summaries, taken, store.url, as_json)
    if output is not None:  # last, so a file that cannot be written costs neither the summary nor the samples
        try:
            write_samples(output, taken.samples)
        except OSError as exc:
            raise StoreError(f"--output {output}: {exc.strerror or exc}; the samples are in {store.url}") from None
        err.print(f"wrote {output}")
    if taken.stopped is not None:
        sys.exit(taken.stopped.code)
    if failed := [s.endpoint for s in summaries if s.ok == 0]:
        from tokenpace.board.console import shown

        names = shown(", ".join(failed))
        err.print(f"[bold red]no request succeeded[/] on {names}: see the errors above", soft_wrap=True)
        sys.exit(1)


def _check_output(output: Path | None) -> None:
    """An --output file that could not be written is a mistake found before anything is sent."""
    from tokenpace.store.export import SAMPLE_FORMATS

    if output is not None and output.suffix.lower() not in SAMPLE_FORMATS:
        raise ConfigError(f"--output {output}: use a file name ending in .csv or .jsonl")
    if output is not None and not output.absolute().parent.is_dir():
        raise ConfigError(f"--output {output}: the folder {output.absolute().parent} does not exist")


def _report(summaries: list[Summary], taken: Taken, store_url: str, as_json: bool) -> None:
    """Each endpoint's summary, as text or JSON; a finished run's line with its id and seed."""
    from tokenpace.board import terminal, warmcold
    from tokenpace.board.console import Console

    result, kept = taken.result, taken.samples
    cache = warmcold.table(warmcold.of_samples(kept))  # a paired workload's (cached-10k): warm vs cold TTFT
    if as_json:
        doc = {  # an interrupted run's id is on its samples (the run record was stored all the same)
            "run_id": result.run.id if result is not None else kept[0].run_id if kept else None,
            "client_bound": None if result is None else result.run.client_bound,
            "seed": None if result is None else result.run.seed,
            "endpoints": [s.as_dict() for s in summaries],
            **({"prompt_cache": [dataclasses.asdict(r) for r in cache]} if cache else {}),
        }
        click.echo(json.dumps(doc, indent=2))
        return
    out = Console()
    for s in summaries:
        terminal.print_summary(out, s)
    if cache:
        terminal.print_warm_cold(out, cache)
    if result is not None:
        terminal.print_run(out, err, result, store_url)


def _truth(scenario: sim.Scenario) -> dict[str, float]:
    """What a simulator was set to, by figure: its output speed, and its TTFT unless that grows with prompts."""
    truth = {"output_speed": scenario.tokens_per_s}
    if scenario.prefill_tokens_per_s is None:
        truth["ttft_ms"] = scenario.ttft_ms
    return truth


@dataclasses.dataclass(frozen=True)
class Taken:
    """What a run took: its result (None when it was stopped), and every sample, also those of a stopped run."""

    result: RunResult | None
    samples: list[Sample]
    stopped: Stop | None  # by Ctrl-C or SIGTERM (then result is None)


def take(
    chosen: list[Endpoint],
    scenarios: dict[str, sim.Scenario],
    workload: Workload,
    options: RunOptions,
    store: Store,
    texts: Corpus | None,
    *,
    show_progress: bool,
    cold_after: Callable[[Endpoint], float] | None = None,
) -> Taken:
    """Measure with a progress bar, each simulated provider's simulator started for the run; SIGTERM stops as
    Ctrl-C does: what was taken is stored (as cancelled samples where a request was cut) and returned.
    ``cold_after``: each endpoint's idle time that makes a request cold (the default's when None); the first
    request's idle time is the store's to say."""
    import contextlib
    from functools import partial

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from tokenpace import sim
    from tokenpace.cli.commandline import safe_command
    from tokenpace.cli.signals import run_stoppable
    from tokenpace.load.coldstart import ColdStarts, default_cold_after
    from tokenpace.load.engine import run_workload
    from tokenpace.load.send import Refusals
    from tokenpace.store import recent

    options = dataclasses.replace(options, command=safe_command(sys.argv[1:], store.url))
    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=stderr(), transient=True, disable=not show_progress,
    )  # fmt: skip
    kept: list[Sample] = []  # also what survives a Ctrl-C

    async def go() -> RunResult:
        task = progress.add_task("measuring", total=options.requests * len(chosen))

        def keep(done: Done) -> None:
            kept.append(done.sample)
            progress.advance(task)

        async with contextlib.AsyncExitStack() as stack:
            targets = await sim.started_for(chosen, scenarios, stack)
            # What endpoints refuse is learnt for this command only: the next one asks afresh.
            cold = ColdStarts(cold_after or default_cold_after, partial(recent.last_ended, store))
            return await run_workload(targets, workload, options, store, keep, texts, refusals=Refusals(), cold=cold)

    with progress:  # a signal cancels go(), whose cleanup stores what was taken (cancelled samples included)
        done = run_stoppable(go)
    if isinstance(done, Stop):
        err.print(f"{done.said}: the {len(kept)} samples taken so far (cancelled ones included) are kept")
        return Taken(None, kept, done)
    return Taken(done, kept, None)
