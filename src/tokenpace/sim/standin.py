"""The simulators that stand in for a config's real endpoints offline (``serve --simulate``, config/offline.py).

One per plan: it serves the root of the plan's base URL (its path less a trailing ``/v1``, ``/v1beta`` or
``/v1alpha``: ``/zen`` for OpenCode Zen, ``/zen/go`` for Go, nothing for Ollama Cloud), each model on its own
protocol only, as the gateway does, and each at the Scenario of the file's ``offline`` entry for it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tokenpace.config.offline import address
from tokenpace.errors import ConfigError
from tokenpace.sim.scenario import Scenario, from_table

if TYPE_CHECKING:
    from tokenpace.config.endpoints import Config

_VERSION = re.compile(r"/v1(?:alpha|beta)?$")


@dataclass(frozen=True)
class Stand:
    """One simulator's set-up: each model's scenario and its one protocol, under ``root``."""

    root: str = ""
    models: Mapping[str, Scenario] = field(default_factory=dict)
    served_on: Mapping[str, str] = field(default_factory=dict)


def stand_ins(config: Config) -> dict[str, Stand]:
    """A Stand per plan whose endpoints stand in for real ones (simulated, of no ``simulate`` provider), by the
    key their addresses name; an ``offline`` entry that is no Scenario is one ConfigError naming file and key."""
    found: dict[str, Stand] = {}
    for e in config.endpoints:
        if not e.simulated or e.provider in config.simulators:
            continue
        key, path = address(e)
        stand = found.setdefault(key, Stand(_VERSION.sub("", path)))
        table = config.offline.get((e.provider, e.plan, e.model), {})
        try:
            scenario = from_table(table)
        except ValueError as exc:
            where = f"providers.{e.provider}" + ("" if e.plan == "default" else f".plans.{e.plan}")
            raise ConfigError(f'{config.source}: {where}.offline."{e.model}".{exc}') from None
        found[key] = Stand(stand.root, {**stand.models, e.model: scenario}, {**stand.served_on, e.model: e.protocol})
    return found
