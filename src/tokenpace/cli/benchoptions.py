"""`tokenpace bench`'s options in groups, each parsed into a frozen value: which endpoint, the load's shape, the
levels, the objectives, the prompts, how requests are sent, and the output.

The command takes one value per group (``opt.option_group``); the endpoint's, the prompts' and the sending's are
the types `run` takes too (cli/measureoptions.py). Each group checks itself in one line per mistake, in the order
the command calls them. Only click is imported at the top: `tokenpace --help` stays light.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tokenpace.cli import options as opt
from tokenpace.cli.measureoptions import Prompts, Sending, Target, one_endpoint
from tokenpace.cli.options import Finite
from tokenpace.errors import ConfigError

if TYPE_CHECKING:
    from tokenpace.config.traffic import Load, Slo, Sweep

MAX_REPEAT = 64  # runs of one level; with a sweep, all points must still fit a result document (256)

TARGET_OPTIONS = opt.option_group(
    "target", Target,
    click.argument("endpoints", metavar="[ENDPOINT]", required=False, callback=one_endpoint),
    opt.config(), opt.base_url, opt.model, opt.protocol,
    opt.api_key_env(), opt.provider, opt.headers, opt.use_sim("Load-test a built-in simulator started for it."),
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class LoadShape:
    """How requests are released: a closed loop (-c) or an open loop (--rate), and how many."""

    concurrency: int | None
    rate: float | None
    arrival: str
    burstiness: float
    max_concurrency: int | None
    requests: int | None
    duration: str | None
    warmup: int
    workers: int = 1

    def load(self) -> Load:
        from tokenpace.config import traffic as loadcfg

        if self.concurrency is not None and self.rate is not None:
            raise ConfigError("give -c (closed loop) or --rate (open loop), not both")
        if self.max_concurrency is not None and self.rate is None:
            raise ConfigError("--max-concurrency caps an open loop: give --rate too (or use -c)")
        seconds = loadcfg.parse_seconds(self.duration, "--duration") if self.duration is not None else None
        return loadcfg.Load(
            concurrency=None if self.rate is not None else self.concurrency or 1,
            rate=self.rate,
            arrival=self.arrival,  # type: ignore[arg-type]  # click.Choice checked it
            burstiness=self.burstiness,
            requests=self.requests if self.requests is not None or seconds is not None else 100,
            duration_s=seconds,
            warmup=self.warmup,
            max_concurrency=self.max_concurrency,
        )

    def workers_for(self, base: Load, sweep: Sweep | None) -> int:
        """--workers, checked against the CPUs here and each level it must split (an auto sweep's concurrency-1
        level runs in this process)."""
        from tokenpace.load.sharing import split_problem
        from tokenpace.load.sweep import levels
        from tokenpace.load.workers import usable_cpus

        given = levels(base, sweep) if sweep is not None and sweep.values else [base]
        for load in given:
            if why := split_problem(load, self.workers, usable_cpus()):
                raise ConfigError(f"--workers {self.workers}: {why}")
        return self.workers


LOAD_OPTIONS = opt.option_group(
    "shape", LoadShape,
    opt.concurrency("Closed loop: requests in flight at once [default: 1]."),
    click.option("--rate", type=Finite(min=0, max=10_000, min_open=True),
                 help="Open loop: requests started per second, whatever the server does."),
    click.option("--arrival", type=click.Choice(["poisson", "constant", "gamma"]), default="poisson",
                 show_default=True, help="How --rate's arrivals are spaced."),
    click.option("--burstiness", default=1.0, show_default=True, type=Finite(min=0, max=100, min_open=True),
                 help="Gamma arrivals' shape: below 1 burstier, above 1 more regular (1: Poisson)."),
    click.option("--max-concurrency", type=click.IntRange(1, 4096), help="Open loop: cap on requests in flight."),
    opt.requests("Measured requests per level [default: 100, or no cap with --duration].",
                 click.IntRange(1, 1_000_000)),
    click.option("--duration", help="Stop releasing requests after this long per level (60s, 5m)."),
    click.option("--warmup", default=1, show_default=True, type=click.IntRange(0, 100_000),
                 help="Requests sent first under the same load, per level, with prompts of their own: stored, "
                      "and left out of the figures (0: none)."),
    click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 1024),
                 help="Processes sharing each level's streams, each timing its own on a loop of its own "
                      "(for loads past one core: see docs/load-tests.md)."),
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Levels:
    """One level, or a sweep of them (given, or auto: up to saturation), each run ``repeat`` times."""

    sweep_text: str | None
    repeat: int

    def sweep(self) -> Sweep | None:
        """--sweep parsed; --repeat runs given levels again: not an auto sweep's (each is chosen from the last)."""
        from tokenpace.config import traffic as loadcfg
        from tokenpace.load.results import MAX_BENCH_POINTS

        sweep = loadcfg.parse_sweep(self.sweep_text) if self.sweep_text else None
        if self.repeat > 1 and sweep is not None and sweep.auto:
            raise ConfigError("--repeat runs given levels again: give --sweep concurrency=... or rate=..., not auto")
        if sweep is not None and len(sweep.values) * self.repeat > MAX_BENCH_POINTS:
            count = len(sweep.values) * self.repeat
            raise ConfigError(f"--sweep with --repeat {self.repeat}: {count} levels, at most {MAX_BENCH_POINTS}")
        return sweep


LEVEL_OPTIONS = opt.option_group(
    "levels", Levels,
    click.option("--sweep", "sweep_text",
                 help="concurrency=1,4,16 | rate=1,2,4 | auto (bracket the saturation rate within 5 %)."),
    click.option("--repeat", default=1, show_default=True, type=click.IntRange(1, MAX_REPEAT),
                 help="Run each level this many times back to back, a point each (for `tokenpace compare`)."),
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Objectives:
    """What makes a level valid (the client's dispatch delay) and a request good (the SLO, for goodput)."""

    max_dispatch_ms: float
    slo_text: str | None

    def slo(self) -> Slo | None:
        from tokenpace.config import traffic as loadcfg

        return loadcfg.parse_slo(self.slo_text) if self.slo_text else None


OBJECTIVE_OPTIONS = opt.option_group(
    "objectives", Objectives,
    click.option("--max-dispatch-p99", "max_dispatch_ms", default=100.0, show_default=True,
                 type=Finite(min=0, max=3_600_000, min_open=True),
                 help="Invalid level: its dispatch delay (sent - scheduled start) P99 is over this, ms."),
    click.option("--slo", "slo_text", help="Per-request objective for goodput, e.g. ttft=500ms,tpot=50ms."),
)  # fmt: skip


PROMPT_OPTIONS = opt.option_group(
    "prompts", Prompts,
    click.option("--data", "data_spec", help="Dataset instead of fresh prompts: jsonl:F, sharegpt:F[,turns=N], "
                 "synthetic:input=N,output=N, prefix:..., multiturn:... (see README)."),
    opt.workload("Fresh-prompt workload when --data is not given."),
    opt.max_tokens,
    opt.corpus("Folder of texts for prompts."),
    opt.seed("Reproduce prompts and arrivals of an earlier run."),
)  # fmt: skip


SENDING_OPTIONS = opt.option_group(
    "sending", Sending,
    opt.first_token_timeout("Seconds from sending a request to its first generated text."),
    opt.total_timeout,
    click.option("--cold", is_flag=True, help="Do not open connections before the first request."),
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Output:
    """Where the samples go (the store) and the result and report (a folder), and whether progress shows."""

    db: str | None
    out_dir: Path
    quiet: bool

    def check(self) -> None:
        if not self.out_dir.absolute().parent.is_dir():
            raise ConfigError(f"--out {self.out_dir}: the folder {self.out_dir.absolute().parent} does not exist")


OUTPUT_OPTIONS = opt.option_group(
    "output", Output,
    opt.store(),
    click.option("--out", "out_dir", default="tokenpace-bench", show_default=True,
                 type=click.Path(file_okay=False, path_type=Path),
                 help="Folder for the result (.json) and report (.html)."),
    opt.quiet("No live progress; the table stays."),
)  # fmt: skip
