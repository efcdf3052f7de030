"""The endpoints a command line names besides --config's: --base-url's, and --sim's built-in simulator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from tokenpace.errors import ConfigError

if TYPE_CHECKING:
    from tokenpace import sim
    from tokenpace.config.endpoints import Config, Endpoint
    from tokenpace.config.presets import ProtocolName


def from_url(
    base_url: str,
    model: str | None,
    protocol: ProtocolName,
    key_env: str | None,
    plan: str,
    provider: str | None,
    headers: Sequence[str],
) -> Endpoint:
    """The endpoint --base-url, --model, --header... describe, each mistake one line that says what to fix."""
    from tokenpace.config.endpoints import Endpoint
    from tokenpace.config.headers import check_header
    from tokenpace.config.plain import is_one_line

    if not model:
        raise ConfigError("--base-url needs --model (the model name the endpoint expects)")
    for option, name in (("--model", model), ("--provider", provider or ""), ("--plan", plan)):
        if not is_one_line(name):
            raise ConfigError(f"{option}: give a name on one line, without control characters or bidi controls")
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


def simulated(protocol: ProtocolName) -> Endpoint:
    """--sim's endpoint: the built-in simulator, started for the command in a child process, in any protocol."""
    from tokenpace.config.endpoints import Endpoint
    from tokenpace.config.settings import SIM_BASE_URL

    return Endpoint("sim", "sim", SIM_BASE_URL.format(provider="sim"), protocol=protocol, simulated=True)


def with_sim(
    cfg: Config, chosen: list[Endpoint], use_sim: bool, protocol: ProtocolName
) -> tuple[list[Endpoint], dict[str, sim.Scenario]]:
    """The endpoints with --sim's in front, and the scenario of each simulated provider among them."""
    from tokenpace import sim

    configured = sim.scenarios(cfg)
    # A `tokenpace sim` reached at --base-url is simulated but runs no scenario of ours.
    scenarios = {e.provider: configured[e.provider] for e in chosen if e.simulated and e.provider in configured}
    if use_sim:
        scenarios["sim"] = sim.Scenario(ttft_ms=150, tokens_per_s=120, prefix_cache=True)
        chosen = [simulated(protocol), *chosen]
    return chosen, scenarios
