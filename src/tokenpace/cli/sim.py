"""``tokenpace sim``: the ground-truth streaming simulator as a server of its own (Ctrl-C stops it)."""

from __future__ import annotations

import os

import click

from tokenpace.cli import options as opt
from tokenpace.cli.options import Finite
from tokenpace.cli.signals import run_async
from tokenpace.cli.stderr import err
from tokenpace.errors import ConfigError


@click.command("sim")
@opt.listen_host("Address to listen on.")
@opt.listen_port(8090, "Port to listen on.")
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
@opt.api_key_env("Require the key held in this environment variable.")
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
