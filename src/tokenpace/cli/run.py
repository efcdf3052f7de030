"""`tokenpace run`: one-shot runs, from the command line's values to the printed summary and exit code.

Its measuring shows a progress bar, starts a simulator per simulated provider for the run, and stops on Ctrl-C
or SIGTERM with what was taken stored and summarised. Each sample goes to the store and into its endpoint's
summary as it ends (board/summary.py's SummaryTally), never into a list: memory follows the concurrency, not
``-n``; ``--output`` reads the run's samples back from the store.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from tokenpace.cli.measureoptions import Prompts, Sending, Target
from tokenpace.cli.runoptions import (
    RUN_OUTPUT_OPTIONS,
    RUN_PROMPT_OPTIONS,
    RUN_SENDING_OPTIONS,
    RUN_SIZE_OPTIONS,
    RUN_TARGET_OPTIONS,
    RunOutput,
    RunSize,
)
from tokenpace.cli.signals import Stop
from tokenpace.cli.stderr import err, stderr
from tokenpace.cli.store import close_store

if TYPE_CHECKING:
    from rich.progress import Progress

    from tokenpace import sim
    from tokenpace.board.summary import Summary, SummaryTally
    from tokenpace.config.endpoints import Config, Endpoint
    from tokenpace.config.workloads import Workload
    from tokenpace.load.engine import RunOptions, RunResult
    from tokenpace.load.figures import Done
    from tokenpace.prompts.corpus import Corpus
    from tokenpace.store.database import Store
    from tokenpace.store.prefixturns import Turn


@click.command()
@RUN_TARGET_OPTIONS
@RUN_SIZE_OPTIONS
@RUN_PROMPT_OPTIONS
@RUN_SENDING_OPTIONS
@RUN_OUTPUT_OPTIONS
def run(target: Target, size: RunSize, prompts: Prompts, sending: Sending, output: RunOutput) -> None:
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

    cfg = target.config()
    asked = _asked(cfg, target, size, prompts, sending, output)
    taken, store_url = _measure(asked, output)
    after = {e.name: cfg.cold_after_of(e) for e in asked.chosen}
    summaries = [t.summary(asked.truth.get(name), after.get(name, 0.0)) for name, t in taken.tallies.items()]
    _report(summaries, taken, store_url, output.as_json)
    output.write(taken.run_id, store_url)  # last, so a file that cannot be written costs neither summary nor samples
    _exit(taken, summaries)


@dataclasses.dataclass(frozen=True)
class _Asked:
    """What the command line asked for, checked before anything is sent: the endpoints, what they are sent, how."""

    cfg: Config
    chosen: list[Endpoint]
    scenarios: dict[str, sim.Scenario]
    truth: dict[str, dict[str, float]]  # each simulated endpoint's, by name: what its simulator was set to
    workload: Workload
    texts: Corpus | None
    options: RunOptions


def _asked(cfg: Config, target: Target, size: RunSize, prompts: Prompts, sending: Sending, output: RunOutput) -> _Asked:
    """The groups' values checked together, each mistake one line, in the order a reader fixes them."""
    from tokenpace.cli.target import with_sim
    from tokenpace.load.engine import RunOptions

    chosen = target.many(cfg)
    output.check()
    workload = prompts.workload(cfg)
    texts = prompts.texts(cfg)
    if (note := sending.idle_note()) is not None and not output.quiet:
        err.print(note)
    options = RunOptions(size.requests, size.concurrency, sending.timeouts(), warm_connections=not sending.cold,
                         seed=prompts.seed, keep_prompts=output.keep_prompts, publish=output.publish,
                         limits=sending.limits(), keep_done=False)  # fmt: skip
    chosen, scenarios = with_sim(cfg, chosen, target.use_sim, target.protocol)
    truth = {e.name: _truth(scenarios[e.provider]) for e in chosen if e.simulated and e.provider in scenarios}
    return _Asked(cfg, chosen, scenarios, truth, workload, texts, options)


def _measure(asked: _Asked, output: RunOutput) -> tuple[Taken, str]:
    """What the run took, stored as it came; and where it was stored."""
    from tokenpace.store.database import open_store

    store = open_store(output.db)
    try:
        taken = take(asked.chosen, asked.scenarios, asked.workload, asked.options, store, asked.texts,
                     show_progress=output.progress, cold_after=asked.cfg.cold_after_of)  # fmt: skip
    finally:
        close_store(store)
    return taken, store.url


def _exit(taken: Taken, summaries: list[Summary]) -> None:
    """A stopped run's signal's code; else 1 when an endpoint had no successful sample (0 when returning)."""
    if taken.stopped is not None:
        sys.exit(taken.stopped.code)
    if failed := [s.endpoint for s in summaries if s.ok == 0]:
        from tokenpace.board.console import shown

        names = shown(", ".join(failed))
        err.print(f"[bold red]no request succeeded[/] on {names}: see the errors above", soft_wrap=True)
        sys.exit(1)


def _report(summaries: list[Summary], taken: Taken, store_url: str, as_json: bool) -> None:
    """Each endpoint's summary, as text or JSON; a finished run's line with its id and seed."""
    from tokenpace.board import terminal, warmcold
    from tokenpace.board.console import Console

    result = taken.result
    cache = warmcold.table(taken.turns)  # a paired workload's (cached-10k): warm vs cold TTFT
    if as_json:
        doc = {  # an interrupted run's id is on its samples (the run record was stored all the same)
            "run_id": result.run.id if result is not None else taken.run_id,
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
    """What a run took: its result (None when it was stopped), each endpoint's summary in the order they were
    measured, and the paired turns (warm vs cold), also of a stopped run."""

    result: RunResult | None
    tallies: dict[str, SummaryTally]
    turns: list[Turn]
    run_id: str | None  # the samples' run (None: no sample came)
    count: int  # samples taken
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

    from tokenpace import sim
    from tokenpace.board.summary import SummaryTally
    from tokenpace.board.warmcold import RUN_TURNS, of_samples
    from tokenpace.cli.commandline import safe_command
    from tokenpace.cli.signals import run_stoppable
    from tokenpace.load.coldstart import ColdStarts, default_cold_after
    from tokenpace.load.engine import run_workload
    from tokenpace.load.send import Refusals
    from tokenpace.store import recent

    options = dataclasses.replace(options, command=safe_command(sys.argv[1:], store.url))
    progress = _progress_bar(show_progress)
    burst = workload.concurrency or (2 if workload.paired else None)  # a whole burst's (a pair's) members
    # Also what survives a Ctrl-C: each endpoint's summary, the paired turns, the count and the run.
    tallies = {e.name: SummaryTally(e.name, burst) for e in chosen}
    turns: list[Turn] = []
    seen: list[str] = []  # the run's id once a sample came

    async def go() -> RunResult:
        task = progress.add_task("measuring", total=options.requests * len(chosen))

        def keep(done: Done) -> None:
            s = done.sample
            if not seen:
                seen.append(s.run_id)
            tallies.setdefault(s.endpoint.name, SummaryTally(s.endpoint.name, burst)).add(s)
            if len(turns) < RUN_TURNS:
                turns.extend(of_samples([s]))
            progress.advance(task)

        async with contextlib.AsyncExitStack() as stack:
            targets = await sim.started_for(chosen, scenarios, stack)
            # What endpoints refuse is learnt for this command only: the next one asks afresh.
            cold = ColdStarts(cold_after or default_cold_after, partial(recent.last_ended, store))
            return await run_workload(targets, workload, options, store, keep, texts, refusals=Refusals(), cold=cold)

    with progress:  # a signal cancels go(), whose cleanup stores what was taken (cancelled samples included)
        done = run_stoppable(go)
    taken = {name: t for name, t in tallies.items() if t.samples}  # the endpoints that sent, in their order
    count, run_id = sum(t.samples for t in taken.values()), seen[0] if seen else None
    if isinstance(done, Stop):
        err.print(f"{done.said}: the {count} samples taken so far (cancelled ones included) are kept")
        return Taken(None, taken, turns, run_id, count, done)
    return Taken(done, taken, turns, run_id, count, None)


def _progress_bar(show: bool) -> Progress:
    """Requests done of all, on stderr, gone when the run ends; off (``show`` False) for JSON and --quiet."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=stderr(), transient=True, disable=not show,
    )  # fmt: skip
