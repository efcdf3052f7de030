"""`tokenpace run`: one-shot runs, from the command line's values to the printed summary and exit code."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import click

from tokenpace.cli.kit import Finite, close_store, err
from tokenpace.config.presets import PROTOCOLS
from tokenpace.errors import ConfigError, StoreError

if TYPE_CHECKING:
    from tokenpace import sim
    from tokenpace.board.summary import Summary
    from tokenpace.cli.measuring import Taken
    from tokenpace.config.endpoints import Config, Endpoint

SEED_MAX = 2**31 - 1  # runs.seed is an INTEGER column: 32 bits on PostgreSQL
DEFAULT_WORKLOAD = "1k"  # workload.DEFAULT's name, without loading the prompt builder for --help


def _cli_endpoint(
    base_url: str,
    model: str | None,
    protocol: str,
    key_env: str | None,
    plan: str,
    provider: str | None,
    headers: Sequence[str],
) -> Endpoint:
    from tokenpace.config.endpoints import Endpoint, check_header

    if not model:
        raise ConfigError("--base-url needs --model (the model name the endpoint expects)")
    try:
        parts = urlsplit(base_url)
        host, _ = parts.hostname, parts.port  # each raises ValueError on a broken address
    except ValueError as exc:
        raise ConfigError(f"--base-url {base_url!r}: {exc}; give a URL such as http://127.0.0.1:8080/v1") from None
    if parts.scheme not in ("http", "https") or not host:
        raise ConfigError(f"--base-url {base_url!r}: give a full URL such as http://127.0.0.1:8080/v1")
    pairs = []
    for h in headers:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            raise ConfigError(f"--header {h!r}: write it as 'Name: value'")
        try:
            check_header(name.strip(), value.strip())
        except ValueError as exc:
            raise ConfigError(f"--header: {exc}") from None
        pairs.append((name.strip(), value.strip()))
    return Endpoint(
        provider=provider or host,
        model=model,
        base_url=base_url.rstrip("/"),
        plan=plan,
        protocol=protocol,
        api_key_env=key_env,
        headers=tuple(pairs),
    )


@click.command()
@click.argument("endpoints", nargs=-1)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="TOML file declaring providers and models.",
)
@click.option("--base-url", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1.")
@click.option("--model", help="Model name to request (with --base-url).")
@click.option(
    "--protocol",
    type=click.Choice(PROTOCOLS),
    default="openai-chat",
    show_default=True,
    help="Wire protocol (with --base-url or --sim).",
)
@click.option("--api-key-env", help="Name of the environment variable holding the API key.")
@click.option("--provider", help="Provider label (default: the URL's host).")
@click.option("--plan", default="default", show_default=True, help="Plan label.")
@click.option("--header", "headers", multiple=True, help="Extra request header 'Name: value' (repeatable).")
@click.option(
    "--sim", "use_sim", is_flag=True, help="Measure a built-in simulator started in-process (any --protocol)."
)
@click.option("-n", "--requests", default=10, show_default=True, type=click.IntRange(min=1),
              help="Requests per endpoint (each one a sample).")  # fmt: skip
@click.option("-c", "--concurrency", default=1, show_default=True, type=click.IntRange(1, 4096),
              help="Requests in flight at once, per endpoint.")  # fmt: skip
@click.option(
    "-w", "--workload", "workload_name", default=DEFAULT_WORKLOAD, show_default=True,
    help="Built-in (1k, 10k, 100k, vision, parallel, cached-10k) or declared in --config; see `tokenpace workloads`.",
)  # fmt: skip
@click.option("--max-tokens", type=click.IntRange(min=1), help="Override the workload's output cap.")
@click.option(
    "--corpus", type=click.Path(file_okay=False, path_type=Path),
    help="Folder of .txt/.md/.html files to build prompts from (default: built in).",
)  # fmt: skip
@click.option(
    "--seed", type=click.IntRange(0, SEED_MAX),
    help="Reproduce the prompts of an earlier run (default: fresh prompts); 0 to 2**31-1, as stored.",
)  # fmt: skip
@click.option("--connect-timeout", default=10.0, show_default=True, type=Finite(min=0, min_open=True),
              help="Seconds to open a connection.")  # fmt: skip
@click.option("--first-token-timeout", default=60.0, show_default=True, type=Finite(min=0, min_open=True),
              help="Seconds from sending the request to the first generated text.")  # fmt: skip
@click.option(
    "--idle-timeout",
    default=60.0,
    show_default=True,
    type=Finite(min=0, min_open=True),
    help="Longest silence, before the first token too: keep it >= --first-token-timeout.",
)
@click.option("--total-timeout", default=300.0, show_default=True, type=Finite(min=0, min_open=True),
              help="Seconds a whole request may take.")  # fmt: skip
@click.option("--max-response-bytes", default=32 * 2**20, show_default=True, type=click.IntRange(min=1024),
              help="Bytes a response may bring (decompressed); more fails it as response_too_large.")  # fmt: skip
@click.option("--no-warmup", is_flag=True, help="Do not open connections before measuring.")
@click.option("--keep-prompts", is_flag=True, help="Store each prompt's text with its sample.")
@click.option("--db", help="SQLite file or postgresql:// URL (default: the user data directory).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option(
    "-q", "--quiet", "--no-progress", "quiet", is_flag=True, help="No progress bar or notes; the summary stays."
)
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
    protocol: str,
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
    from tokenpace.cli.measuring import take
    from tokenpace.clients.transport import Limits, Timeouts
    from tokenpace.config.endpoints import Config, load
    from tokenpace.config.workloads import check_requests
    from tokenpace.load.run import RunOptions
    from tokenpace.prompts.corpus import load_corpus
    from tokenpace.store.database import open_store
    from tokenpace.store.export import write_samples

    cfg = load(config_path) if config_path is not None else Config()
    chosen = [e for ref in endpoints for e in cfg.find(ref)]
    if config_path is not None and not endpoints and not base_url and not use_sim:
        chosen = list(cfg.endpoints)
        if not chosen:
            raise ConfigError(f"{cfg.source} declares no endpoints: add a [providers.NAME] table with models")
    if base_url:
        chosen.append(_cli_endpoint(base_url, model, protocol, api_key_env, plan, provider, headers))
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
        warmup=not no_warmup,
        seed=seed,
        keep_prompts=keep_prompts,
        publish=publish,
        limits=Limits(response_bytes=max_response_bytes),
    )
    chosen, scenarios = _simulated(cfg, chosen, use_sim, protocol)
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
    if taken.result is None:
        sys.exit(143 if taken.terminated else 130)
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


def _simulated(
    cfg: Config, chosen: list[Endpoint], use_sim: bool, protocol: str
) -> tuple[list[Endpoint], dict[str, sim.Scenario]]:
    """The endpoints with --sim's in front, and the scenario of each simulated provider among them."""
    from tokenpace import sim
    from tokenpace.config.endpoints import Endpoint
    from tokenpace.config.settings import SIM_BASE_URL

    configured = sim.scenarios(cfg)
    scenarios = {e.provider: configured[e.provider] for e in chosen if e.simulated}
    if use_sim:
        scenarios["sim"] = sim.Scenario(ttft_ms=150, tokens_per_s=120, prefix_cache=True)
        at = SIM_BASE_URL.format(provider="sim")
        chosen = [Endpoint("sim", "sim", at, protocol=protocol, simulated=True), *chosen]
    return chosen, scenarios


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
