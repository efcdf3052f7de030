"""``tokenpace sim``: the ground-truth streaming simulator as a server of its own (Ctrl-C stops it)."""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING

import click

from tokenpace.cli import options as opt
from tokenpace.cli.options import Finite
from tokenpace.cli.signals import run_async
from tokenpace.cli.stderr import err
from tokenpace.errors import ConfigError

if TYPE_CHECKING:
    from tokenpace import sim


@dataclasses.dataclass(frozen=True)
class SimSettings:
    """What the simulator does (its scenario's figures, failures and seed), and the key it requires if any."""

    ttft_ms: float
    prefill_tokens_per_s: float | None
    tokens_per_s: float
    tokens_per_chunk: int
    jitter_ms: float
    output_tokens: int
    reasoning_tokens: int
    usage: str
    error: str | None
    error_rate: float
    max_streams: int | None
    max_requests_per_s: float | None
    cold_start_ms: float
    cold_after_s: float
    prefix_cache: bool
    api_key_env: str | None
    seed: int

    def scenario(self) -> sim.Scenario:
        """The scenario: every field but the key's (a Scenario's field of the same name each)."""
        from tokenpace import sim

        return sim.Scenario(
            **{f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "api_key_env"}
        )

    def key(self) -> str | None:
        """The key requests must bring: --api-key-env's variable's value, which must be set (None: no key)."""
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if self.api_key_env and not key:
            raise ConfigError(f"--api-key-env: environment variable {self.api_key_env} is not set")
        return key


SIM_SETTINGS_OPTIONS = opt.option_group(
    "settings", SimSettings,
    click.option("--ttft-ms", default=200.0, show_default=True, type=Finite(min=0),
                 help="Time to first token, from the request's arrival."),
    click.option("--prefill-tokens-per-s", type=Finite(min=0, min_open=True),
                 help="Also delay the first token by prompt tokens / this rate, so TTFT grows with the prompt."),
    click.option("--tokens-per-s", default=50.0, show_default=True, type=Finite(min=0, min_open=True),
                 help="Output speed after the first token."),
    click.option("--tokens-per-chunk", default=1, show_default=True, type=click.IntRange(min=1),
                 help="Tokens per streamed event."),
    click.option("--jitter-ms", default=0.0, show_default=True, type=Finite(min=0),
                 help="Uniform +- jitter on each event's time after the first."),
    click.option("--output-tokens", default=100, show_default=True, type=click.IntRange(min=1),
                 help="Content tokens per answer (capped by the request's max tokens)."),
    click.option("--reasoning-tokens", default=0, show_default=True, type=click.IntRange(min=0),
                 help="Reasoning tokens sent before the content."),
    click.option("--usage", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
                 help="Report token usage: as the request asks (auto), always or never."),
    click.option("--error", type=click.Choice(["429", "500", "malformed", "cut", "endless", "midstream"]),
                 help="Inject this failure."),
    click.option("--error-rate", default=1.0, show_default=True, type=Finite(0, 1),
                 help="Share of requests that get --error."),
    click.option("--max-streams", type=click.IntRange(min=1),
                 help="Streams generated at once; more queue for a slot, as on a loaded server."),
    click.option("--max-requests-per-s", type=Finite(min=0, min_open=True),
                 help="A capacity: requests begun per second at most; more queue (their TTFT grows by the wait)."),
    click.option("--cold-start-ms", default=0.0, show_default=True, type=Finite(min=0),
                 help="Scale to zero: extra TTFT of a request that finds the model unloaded."),
    click.option("--cold-after-s", default=900.0, show_default=True, type=Finite(min=0),
                 help="Seconds without a request after which the model unloads (with --cold-start-ms)."),
    click.option("--prefix-cache", is_flag=True,
                 help="Cache recent prompts' prefixes: a repeated one is not prefilled again; usage says so."),
    opt.api_key_env("Require the key held in this environment variable."),
    click.option("--seed", default=0, show_default=True, type=int, help="Seeds the text, jitter and error draws."),
)  # fmt: skip


@click.command("sim")
@opt.listen_host("Address to listen on.")
@opt.listen_port(8090, "Port to listen on.")
@click.option(
    "--root",
    default="",
    metavar="PATH",
    help="Serve every route under this path, as a gateway does: --root /zen serves /zen/v1/chat/completions.",
)
@SIM_SETTINGS_OPTIONS
def sim_command(host: str, port: int, root: str, settings: SimSettings) -> None:
    """Serve a ground-truth OpenAI-compatible streaming simulator (Ctrl-C stops it)."""
    import contextlib

    from tokenpace import sim
    from tokenpace.errors import SimulatorError
    from tokenpace.measure.catalogue import metric

    scenario = settings.scenario()
    key = settings.key()
    try:
        simulator = sim.Simulator(scenario, api_key=key, root=root)
    except SimulatorError as exc:
        raise ConfigError(f"--root: {exc}") from None

    def bound(url: str) -> None:  # the port actually bound: --port 0 takes any free one
        ttft, speed = metric("ttft_ms"), metric("output_speed")
        said = f"{ttft.label} {settings.ttft_ms:g} {ttft.unit_text}, {settings.tokens_per_s:g} {speed.unit_text}"
        err.print(f"tokenpace sim on {url} ({said}; Ctrl-C to stop)")

    with contextlib.suppress(KeyboardInterrupt):
        run_async(lambda: sim.serve_forever(simulator, host, port, bound))
