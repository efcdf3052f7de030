"""The option groups both measuring commands take, `run` and `bench`, as one type each: which endpoints, what
prompts, how requests are sent.

Each command lists its own options for a group (its help words, and the options it alone offers: a field with a
default may have no option). Only click is imported at the top: `tokenpace --help` stays light.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tokenpace.errors import ConfigError

if TYPE_CHECKING:
    from tokenpace import sim
    from tokenpace.clients.transport import Limits, Timeouts
    from tokenpace.config.endpoints import Config, Endpoint
    from tokenpace.config.presets import ProtocolName
    from tokenpace.config.workloads import Workload
    from tokenpace.prompts.chains import Dataset
    from tokenpace.prompts.corpus import Corpus

MAX_RESPONSE_BYTES = 32 * 2**20  # Limits' default, shown by `run --help`


@dataclasses.dataclass(frozen=True)
class Target:
    """The endpoints to measure: names from --config or the presets, --base-url's, and --sim's."""

    endpoints: tuple[str, ...]
    config_path: Path | None
    base_url: str | None
    model: str | None
    protocol: ProtocolName
    api_key_env: str | None
    provider: str | None
    headers: tuple[str, ...]
    use_sim: bool
    plan: str = "default"

    def config(self) -> Config:
        """--config's file, else the embedded defaults (the presets still name endpoints)."""
        from tokenpace.config.endpoints import Config, read_config

        return read_config(self.config_path) if self.config_path is not None else Config()

    def many(self, cfg: Config) -> list[Endpoint]:
        """A run's endpoints besides --sim's: those named, else all --config declares; their key variables checked."""
        chosen = [e for ref in self.endpoints for e in cfg.find(ref)]
        if self.config_path is not None and not self.endpoints and not self.base_url and not self.use_sim:
            chosen = list(cfg.endpoints)
            if not chosen:
                raise ConfigError(f"{cfg.source} declares no endpoints: add a [providers.NAME] table with models")
        chosen += self._from_url()
        if not chosen and not self.use_sim:
            raise ConfigError("nothing to measure: name endpoints from --config, give --base-url, or use --sim")
        for e in chosen:
            e.api_key()  # a missing key variable is reported before anything is sent
        return chosen

    def one(self, cfg: Config) -> Endpoint:
        """A load test's one endpoint, or a line that says what was found instead; its key variable checked."""
        from tokenpace.cli.target import simulated

        chosen = [e for ref in self.endpoints for e in cfg.find(ref)] + self._from_url()
        if self.use_sim:
            chosen.append(simulated(self.protocol))
        if len(chosen) != 1:
            what = "nothing" if not chosen else ", ".join(e.name for e in chosen)
            raise ConfigError(f"a load test drives one endpoint, not {what}: name one, or give --base-url or --sim")
        chosen[0].api_key()  # a missing key variable is reported before anything is sent
        return chosen[0]

    def scenarios(self, cfg: Config) -> dict[str, sim.Scenario]:
        """A load test's simulated providers' scenarios (a real endpoint has none)."""
        from tokenpace import sim

        return {"sim": sim.Scenario(ttft_ms=150, tokens_per_s=120)} if self.use_sim else sim.scenarios(cfg)

    def _from_url(self) -> list[Endpoint]:
        """--base-url's endpoint, labelled simulated where its server says it is a `tokenpace sim`."""
        import asyncio

        from tokenpace.cli.target import from_url
        from tokenpace.serve.discover import labelled

        if not self.base_url:
            return []
        given = from_url(self.base_url, self.model, self.protocol, self.api_key_env, self.plan, self.provider,
                         self.headers)  # fmt: skip
        return asyncio.run(labelled([given]))


def one_endpoint(_ctx: click.Context, _param: click.Parameter, name: str | None) -> tuple[str, ...]:
    """A load test's ENDPOINT argument as a run's ENDPOINTS: the name given, if any (an empty one is none)."""
    return (name,) if name else ()


@dataclasses.dataclass(frozen=True)
class Prompts:
    """What is sent: fresh prompts of a workload, or (a load test) a dataset; the seed that reproduces either."""

    workload_name: str
    max_tokens: int | None
    corpus: Path | None
    seed: int | None
    data_spec: str | None = None

    def workload(self, cfg: Config) -> Workload:
        workload = cfg.workload(self.workload_name)
        if self.max_tokens is not None:
            workload = dataclasses.replace(workload, max_tokens=self.max_tokens)
        return workload

    def texts(self, cfg: Config) -> Corpus | None:
        """--corpus's texts, else the config's folder's; None: the built-in corpus."""
        from tokenpace.prompts.corpus import load_corpus

        folder = self.corpus or cfg.corpus
        return load_corpus(folder) if folder is not None else None

    def dataset(self, cfg: Config, seed: int) -> Dataset:
        from tokenpace.prompts.datasets import open_dataset

        workload = self.workload(cfg)
        return open_dataset(self.data_spec, workload, seed, self.texts(cfg))


@dataclasses.dataclass(frozen=True)
class Sending:
    """How long a request may take and how much it may bring, and whether connections are opened before the first."""

    first_token_timeout: float
    total_timeout: float
    cold: bool
    connect_timeout: float = 10.0
    idle_timeout: float | None = None  # None: as long as the first token may take, and never less than a minute
    max_response_bytes: int = MAX_RESPONSE_BYTES

    def timeouts(self) -> Timeouts:
        from tokenpace.clients.transport import Timeouts

        idle = self.idle_timeout if self.idle_timeout is not None else max(60.0, self.first_token_timeout)
        return Timeouts(self.connect_timeout, self.first_token_timeout, idle, self.total_timeout)

    def limits(self) -> Limits:
        from tokenpace.clients.transport import Limits

        return Limits(response_bytes=self.max_response_bytes)

    def idle_note(self) -> str | None:
        """The note that --idle-timeout will cut a slow first token, when it is shorter than the first token's."""
        if self.idle_timeout is None or self.idle_timeout >= self.first_token_timeout:
            return None
        return (
            f"[yellow]note:[/] --idle-timeout {self.idle_timeout:g} s is shorter than --first-token-timeout "
            f"{self.first_token_timeout:g} s: a slow first token will fail as idle_timeout"
        )
