"""`tokenpace run`'s options in groups, each parsed into a frozen value: which endpoints, how many requests, the
prompts, how requests are sent, and where the samples and the summary go.

The endpoints', prompts' and sending's types are `bench`'s too (cli/measureoptions.py); the options listed here
are `run`'s, with its words. Only click is imported at the top: `tokenpace --help` stays light.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from tokenpace.cli import options as opt
from tokenpace.cli.measureoptions import MAX_RESPONSE_BYTES, Prompts, Sending, Target
from tokenpace.cli.options import Finite
from tokenpace.cli.stderr import err
from tokenpace.errors import ConfigError, StoreError

RUN_TARGET_OPTIONS = opt.option_group(
    "target", Target,
    click.argument("endpoints", nargs=-1), opt.config(), opt.base_url, opt.model, opt.protocol, opt.api_key_env(),
    opt.provider, click.option("--plan", default="default", show_default=True, help="Plan label."), opt.headers,
    opt.use_sim("Measure a built-in simulator started for the command (any --protocol)."),
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class RunSize:
    """How many requests each endpoint is sent, and how many of them at once (memory follows the second: prompts
    are built just ahead of their release and the summary is kept as samples come, whatever the first)."""

    requests: int
    concurrency: int


RUN_SIZE_OPTIONS = opt.option_group(
    "size", RunSize,
    opt.requests("Requests per endpoint (each one a sample).", click.IntRange(min=1), default=10),
    opt.concurrency("Requests in flight at once, per endpoint.", default=1),
)  # fmt: skip

RUN_PROMPT_OPTIONS = opt.option_group(
    "prompts", Prompts,
    opt.workload(
        "Built-in (1k, 10k, 100k, vision, parallel, cached-10k) or declared in --config; see `tokenpace workloads`."
    ),
    opt.max_tokens,
    opt.corpus("Folder of .txt/.md/.html files to build prompts from (default: built in)."),
    opt.seed("Reproduce the prompts of an earlier run (default: fresh prompts); 0 to 2**31-1, as stored."),
)  # fmt: skip

RUN_SENDING_OPTIONS = opt.option_group(
    "sending", Sending,
    click.option("--connect-timeout", default=10.0, show_default=True, type=Finite(min=0, min_open=True),
                 help="Seconds to open a connection."),
    opt.first_token_timeout("Seconds from sending the request to the first generated text."),
    click.option("--idle-timeout", default=60.0, show_default=True, type=Finite(min=0, min_open=True),
                 help="Longest silence, before the first token too: keep it >= --first-token-timeout."),
    opt.total_timeout,
    click.option("--max-response-bytes", default=MAX_RESPONSE_BYTES, show_default=True, type=click.IntRange(min=1024),
                 help="Bytes a response may bring (decompressed); more fails it as response_too_large."),
    click.option("--no-warmup", "cold", is_flag=True, help="Do not open connections before measuring."),
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class RunOutput:
    """Where the samples go (the store, and --output's file), whether the board ranks them, and how the summary
    shows (text or JSON, with or without progress)."""

    keep_prompts: bool
    db: str | None
    as_json: bool
    quiet: bool
    publish: bool
    output: Path | None

    @property
    def progress(self) -> bool:
        return not (self.as_json or self.quiet)

    def check(self) -> None:
        """An --output file that could not be written is a mistake found before anything is sent."""
        from tokenpace.store.export import SAMPLE_FORMATS

        if self.output is not None and self.output.suffix.lower() not in SAMPLE_FORMATS:
            raise ConfigError(f"--output {self.output}: use a file name ending in .csv or .jsonl")
        if self.output is not None and not self.output.absolute().parent.is_dir():
            raise ConfigError(f"--output {self.output}: the folder {self.output.absolute().parent} does not exist")

    def write(self, run_id: str | None, store_url: str) -> None:
        """--output's file, if given, of the run's samples read back from the store a batch at a time (none were
        kept); one that cannot be written is one line (the samples are stored)."""
        from tokenpace.cli.store import close_store
        from tokenpace.store.database import open_store
        from tokenpace.store.export import run_samples, write_samples

        if self.output is None:
            return
        store = open_store(self.db)
        try:
            write_samples(self.output, run_samples(store, run_id) if run_id is not None else ())
        except OSError as exc:
            raise StoreError(f"--output {self.output}: {exc.strerror or exc}; the samples are in {store_url}") from None
        finally:
            close_store(store)
        err.print(f"wrote {self.output}")


RUN_OUTPUT_OPTIONS = opt.option_group(
    "output", RunOutput,
    click.option("--keep-prompts", is_flag=True, help="Store each prompt's text with its sample."),
    opt.store(),
    opt.as_json("Print the summary as JSON."),
    opt.quiet("No progress bar or notes; the summary stays.", "--no-progress"),
    click.option("--publish", is_flag=True,
                 help="Rank these samples on the leaderboard (one-shot runs are not, by default)."),
    click.option("--output", type=click.Path(dir_okay=False, path_type=Path),
                 help="Also write the samples to FILE.csv or FILE.jsonl."),
)  # fmt: skip
