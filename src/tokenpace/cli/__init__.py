"""The ``tokenpace`` command: parse, call, print. Every TokenpaceError becomes one line here.

Each command imports what it needs when it runs: `tokenpace --help` must not pay for aiohttp, tiktoken, the
database drivers, pydantic or rich (tests/cli/test_imports.py checks which modules the help path loads).
`tokenpace run` is in oneshot.py; what the commands share in clikit.py.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from tokenpace.cli import agents, bench, compare, oneshot, regions
from tokenpace.cli.kit import Finite, Group, close_store, err, run_async
from tokenpace.errors import ConfigError, TokenpaceError
from tokenpace.version import __version__


@click.group(cls=Group)
@click.version_option(__version__, prog_name="tokenpace")
def main() -> None:
    """Measure how fast LLM APIs really are."""


main.add_command(oneshot.run)
main.add_command(bench.bench)
main.add_command(compare.compare_command)
main.add_command(agents.agents_command)
main.add_command(regions.agent_command)
main.add_command(regions.db_group)


@main.command("presets")
def presets_command() -> None:
    """List the well-known providers that endpoint names and config tables can refer to."""
    from tokenpace.board import terminal
    from tokenpace.board.console import Console
    from tokenpace.config.presets import PRESETS

    terminal.print_presets(Console(), list(PRESETS.values()))


@main.command("workloads")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), help="Also list these.")
def workloads_command(config_path: Path | None) -> None:
    """List the workloads: built-in ones and those declared in --config."""
    from rich.table import Table

    from tokenpace.board import numbers
    from tokenpace.board.console import Console, shown
    from tokenpace.config import endpoints
    from tokenpace.config.workloads import BUILTIN, Workload

    cfg = endpoints.load(config_path) if config_path is not None else endpoints.Config()
    table = Table()
    for col in ("workload", "input tokens", "max tokens", "tasks", "concurrency", "image"):
        table.add_column(col, no_wrap=col != "tasks")
    listed: dict[str, Workload] = {**BUILTIN, **cfg.workloads}
    for w in listed.values():
        image = "-" if w.image is None else f"{w.image[0]}x{w.image[1]}"
        concurrency = "pairs, in turn" if w.paired else "-" if w.concurrency is None else f"{w.concurrency} at once"
        tokens = (numbers.figure(w.input_tokens, "int"), numbers.figure(w.max_tokens, "int"))
        table.add_row(shown(w.name), *tokens, shown(", ".join(w.tasks)), concurrency, image)
    Console().print(table)


@main.command("sim")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8090, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option("--ttft-ms", default=200.0, show_default=True, type=Finite(min=0),
              help="Time to first token, from the request's arrival.")  # fmt: skip
@click.option(
    "--prefill-tokens-per-s",
    type=Finite(min=0, min_open=True),
    help="Also delay the first token by prompt tokens / this rate, so TTFT grows with the prompt.",
)
@click.option("--tokens-per-s", default=50.0, show_default=True, type=Finite(min=0, min_open=True),
              help="Output speed after the first token.")  # fmt: skip
@click.option("--tokens-per-chunk", default=1, show_default=True, type=click.IntRange(min=1),
              help="Tokens per streamed event.")  # fmt: skip
@click.option("--jitter-ms", default=0.0, show_default=True, type=Finite(min=0),
              help="Uniform +- jitter on each event's time after the first.")  # fmt: skip
@click.option("--output-tokens", default=100, show_default=True, type=click.IntRange(min=1),
              help="Content tokens per answer (capped by the request's max tokens).")  # fmt: skip
@click.option("--reasoning-tokens", default=0, show_default=True, type=click.IntRange(min=0),
              help="Reasoning tokens sent before the content.")  # fmt: skip
@click.option("--usage", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Report token usage: as the request asks (auto), always or never.")  # fmt: skip
@click.option(
    "--error",
    type=click.Choice(["429", "500", "malformed", "cut", "endless", "midstream"]),
    help="Inject this failure.",
)
@click.option("--error-rate", default=1.0, show_default=True, type=Finite(0, 1),
              help="Share of requests that get --error.")  # fmt: skip
@click.option("--max-streams", type=click.IntRange(min=1),
              help="Streams generated at once; more queue for a slot, as on a loaded server.")  # fmt: skip
@click.option("--cold-start-ms", default=0.0, show_default=True, type=Finite(min=0),
              help="Scale to zero: extra TTFT of a request that finds the model unloaded.")  # fmt: skip
@click.option("--cold-after-s", default=900.0, show_default=True, type=Finite(min=0),
              help="Seconds without a request after which the model unloads (with --cold-start-ms).")  # fmt: skip
@click.option("--prefix-cache", is_flag=True,
              help="Cache recent prompts' prefixes: a repeated one is not prefilled again; usage says so.")  # fmt: skip
@click.option("--api-key-env", help="Require the key held in this environment variable.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seeds the text, jitter and error draws.")
def sim_command(
    host: str,
    port: int,
    ttft_ms: float,
    prefill_tokens_per_s: float | None,
    tokens_per_s: float,
    tokens_per_chunk: int,
    jitter_ms: float,
    output_tokens: int,
    reasoning_tokens: int,
    usage: str,
    error: str | None,
    error_rate: float,
    max_streams: int | None,
    cold_start_ms: float,
    cold_after_s: float,
    prefix_cache: bool,
    api_key_env: str | None,
    seed: int,
) -> None:
    """Serve a ground-truth OpenAI-compatible streaming simulator (Ctrl-C stops it)."""
    import contextlib

    from tokenpace import sim

    scenario = sim.Scenario(
        ttft_ms=ttft_ms,
        prefill_tokens_per_s=prefill_tokens_per_s,
        tokens_per_s=tokens_per_s,
        tokens_per_chunk=tokens_per_chunk,
        jitter_ms=jitter_ms,
        output_tokens=output_tokens,
        reasoning_tokens=reasoning_tokens,
        usage=usage,
        error=error,
        error_rate=error_rate,
        seed=seed,
        max_streams=max_streams,
        cold_start_ms=cold_start_ms,
        cold_after_s=cold_after_s,
        prefix_cache=prefix_cache,
    )
    key = os.environ.get(api_key_env) if api_key_env else None
    if api_key_env and not key:
        raise ConfigError(f"--api-key-env: environment variable {api_key_env} is not set")

    def bound(url: str) -> None:  # the port actually bound: --port 0 takes any free one
        err.print(f"tokenpace sim on {url} (TTFT {ttft_ms:g} ms, {tokens_per_s:g} tok/s; Ctrl-C to stop)")

    with contextlib.suppress(KeyboardInterrupt):
        run_async(lambda: sim.serve_forever(sim.Simulator(scenario, api_key=key), host, port, bound))


@main.command("serve")
@click.option(
    "--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
    help="TOML file declaring providers, plans, budgets and cadences (default: discover, else simulate).",
)  # fmt: skip
@click.option("--host", default="127.0.0.1", show_default=True, help="Address the web server listens on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="Port the web server listens on (0: any free one).")  # fmt: skip
@click.option("--db", help="SQLite file or postgresql:// URL (default: the user data directory).")
@click.option(
    "--grace", default=5.0, show_default=True, type=Finite(min=0),
    help="Seconds runs in flight may take to finish after SIGINT/SIGTERM; then they are stored as cancelled "
    "(keep it under your supervisor's stop timeout: docker's is 10 s).",
)  # fmt: skip
def serve_command(config_path: Path | None, host: str, port: int, db: str | None, grace: float) -> None:
    """Measure endpoints on a schedule and publish the leaderboard at http://HOST:PORT (Ctrl-C stops).

    Without --config it measures the providers whose key variables are set (GROQ_API_KEY...), local servers on
    their usual ports (Ollama 11434, llama.cpp 8080, vLLM 8000, SGLang 30000), and, where it finds nothing,
    built-in simulated endpoints, labelled as such everywhere.
    """
    from tokenpace.board.console import log_lines, shown
    from tokenpace.config import endpoints
    from tokenpace.serve import service  # the web stack loads only for the command that serves it
    from tokenpace.store.database import default_db_path, open_store

    log_lines()  # one line per run and per skipped run, so a terminal shows the service at work

    cfg = endpoints.load(config_path) if config_path is not None else None
    if cfg is not None and not cfg.endpoints:
        raise ConfigError(f"{cfg.source} declares no endpoints: add a [providers.NAME] table with models")
    sock = service.listen(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    try:
        store = open_store(db)
    except TokenpaceError:
        sock.close()
        raise

    notes: list[str] = []  # what discovery found, printed after the address: the first line is the address

    def ready(jobs: Sequence[Any]) -> None:
        where = f"[{bound_host}]" if ":" in bound_host else bound_host  # the address bound, not the name asked
        err.print(f"tokenpace serving on http://{where}:{bound_port}", soft_wrap=True)
        for line in (*notes, f"{len(jobs)} scheduled jobs; store {store.url}"):
            err.print(shown(line), soft_wrap=True)  # a note may hold a model name a server chose

    async def go() -> None:
        chosen, found = await service.resolve(cfg, os.environ, skip_ports=(bound_port,))
        notes.extend(found)
        await service.serve(chosen, store, sock, store_url=db or str(default_db_path()), grace_s=grace, ready=ready)

    try:
        run_async(go)
    finally:
        sock.close()
        close_store(store)
    err.print("stopped: every sample taken is in the store")


@main.command("leaderboard")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), help="As served.")
@click.option("--db", help="SQLite file or postgresql:// URL (default: the user data directory).")
@click.option("--window", default="72h", show_default=True, type=click.Choice(["72h", "24h", "7d"]),
              help="72h (median), 24h (mean) or 7d (median).")  # fmt: skip
@click.option("-w", "--workload", help="Default: 1k, or the config's first scheduled workload.")
@click.option("--provider", help="Only this provider.")
@click.option("--plan", help="Only this plan.")
@click.option("--sort", default="speed", show_default=True, help="The column to sort by.",
              type=click.Choice(["speed", "ttft", "e2e", "success", "samples", "name"]))  # fmt: skip
@click.option("--order", type=click.Choice(["asc", "desc"]), help="Default: the column's natural order.")
@click.option("--min-samples", type=click.IntRange(min=0), help="Rank only with this many (default: the config's, 3).")
@click.option("--client-bound", default="exclude", show_default=True, type=click.Choice(["exclude", "include"]),
              help="include: figures also of samples timed while the client lagged.")  # fmt: skip
@click.option("--region", help="A region's name, all (pooled), local or * (a row per region); default: the config's "
              "first region, else all.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the leaderboard as JSON (as /leaderboard.json).")
def leaderboard_command(
    config_path: Path | None,
    db: str | None,
    window: str,
    workload: str | None,
    provider: str | None,
    plan: str | None,
    sort: str,
    order: str | None,
    min_samples: int | None,
    client_bound: str,
    region: str | None,
    as_json: bool,
) -> None:
    """Print the leaderboard from the store: the same table, sorting and filters as the web page.

    With the config `tokenpace serve` runs, staleness, long windows and the ranking minimum are the page's.
    """
    from datetime import UTC, datetime

    from tokenpace.board import ranking, regions, terminal
    from tokenpace.board.console import Console
    from tokenpace.config import endpoints
    from tokenpace.schedule import sampler
    from tokenpace.store.database import open_store

    cfg = endpoints.load(config_path) if config_path is not None else endpoints.Config()
    rules = ranking.rules(cfg, sampler.jobs(cfg, cfg.endpoints))
    given = {"window": window, "workload": workload, "sort": sort, "provider": provider, "plan": plan, "order": order}
    given |= {"client_bound": client_bound, "region": region}
    given |= {"min_samples": str(min_samples)} if min_samples is not None else {}
    query = ranking.Query.from_params(
        {k: v for k, v in given.items() if v}, min_samples=rules.min_samples, workload=rules.workload,
        region=regions.default(cfg),
    )  # fmt: skip
    store = open_store(db)
    try:
        now = datetime.now(UTC)
        board = ranking.read_board(
            store, query, now, stale_after=rules.stale_after, long_workloads=rules.long_workloads, config=cfg
        )
    finally:
        close_store(store)
    if as_json:
        click.echo(json.dumps(ranking.as_dict(board), indent=2))
    else:
        terminal.print_leaderboard(Console(), board)
