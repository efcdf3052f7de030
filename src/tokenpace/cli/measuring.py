"""A one-shot run's measuring: a progress bar, a simulator per simulated provider, SIGTERM stopping as Ctrl-C does."""

from __future__ import annotations

import dataclasses
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tokenpace.cli.kit import err, run_async, stderr

if TYPE_CHECKING:
    from tokenpace import sim
    from tokenpace.config.endpoints import Endpoint
    from tokenpace.config.workloads import Workload
    from tokenpace.load.run import RunOptions, RunResult
    from tokenpace.measure.sample import Sample
    from tokenpace.prompts.corpus import Corpus
    from tokenpace.store.database import Store


@dataclasses.dataclass(frozen=True)
class Taken:
    """What a run took: its result (None when it was stopped), and every sample, also those of a stopped run."""

    result: RunResult | None
    samples: list[Sample]
    terminated: bool  # stopped by SIGTERM (else by Ctrl-C, when result is None)


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
    import asyncio
    import contextlib
    from functools import partial

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from tokenpace import sim
    from tokenpace.load.coldstart import ColdStarts, default_cold_after
    from tokenpace.load.run import Refusals, run_workload
    from tokenpace.store import recent

    command = _safe_command(sys.argv[1:], store.url)
    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=stderr(), transient=True, disable=not show_progress,
    )  # fmt: skip
    kept: list[Sample] = []  # also what survives a Ctrl-C
    terminated: list[bool] = []

    async def go() -> RunResult:
        task = progress.add_task("measuring", total=options.requests * len(chosen))
        loop, main_task = asyncio.get_running_loop(), asyncio.current_task()
        assert main_task is not None  # the runner's main task

        def on_sigterm() -> None:
            terminated.append(True)
            main_task.cancel()  # as asyncio.Runner does on SIGINT: the run's cleanup stores what was taken

        def keep(sample: Sample) -> None:
            kept.append(sample)
            progress.advance(task)

        async with contextlib.AsyncExitStack() as stack:
            loop.add_signal_handler(signal.SIGTERM, on_sigterm)
            # Removed as the command ends: left behind (uvloop does) it points at a closed loop, and SIGTERM would
            # no longer stop a process that ran the command in-process (a test run).
            stack.callback(loop.remove_signal_handler, signal.SIGTERM)
            targets = await sim.started_for(chosen, scenarios, stack)
            # What endpoints refuse is learnt for this command only: the next one asks afresh.
            cold = ColdStarts(cold_after or default_cold_after, partial(recent.last_ended, store))
            return await run_workload(
                targets, workload, options, store, keep, command, texts, refusals=Refusals(), cold=cold
            )

    try:
        with progress:
            return Taken(run_async(go), kept, False)
    except (KeyboardInterrupt, asyncio.CancelledError):
        how = "stopped (SIGTERM)" if terminated else "interrupted"
        err.print(f"{how}: the {len(kept)} samples taken so far (cancelled ones included) are kept")
        return Taken(None, kept, bool(terminated))


def _safe_command(args: Sequence[str], store_url: str) -> str:
    """The command line as stored with the run: header values and the database password masked."""

    def masked(option: str, value: str) -> str:
        return store_url if option == "--db" else value.partition(":")[0] + ": ***"

    out, pending = ["tokenpace"], ""
    for arg in args:
        name, eq, value = arg.partition("=")
        if pending:
            out.append(masked(pending, arg))
            pending = ""
        elif eq and name in _SECRET_OPTIONS:
            out.append(f"{name}={masked(name, value)}")
        else:
            out.append(arg)
            pending = arg if arg in _SECRET_OPTIONS else ""
    return " ".join(out)


_SECRET_OPTIONS = ("--header", "--db")
