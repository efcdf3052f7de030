"""The wire protocols' names, and which one a model is reached on where a gateway serves models on several.

A gateway such as OpenCode Zen answers each model on one API only (Chat Completions for its open-weight models,
Messages for Claude, Responses for GPT) and says which in a published endpoint table. :class:`Routes` is such a
table as data, dated and with its source, plus rules for the models it does not list. A config may name a
model's protocol itself (``protocols = { "m" = "anthropic" }``); :func:`chosen` says which choice wins.

The names live here rather than in config's other modules so the command line's choices cost no import.
"""

from __future__ import annotations

import fnmatch
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Literal

ProtocolName = Literal["openai-chat", "openai-completions", "openai-responses", "anthropic", "ollama", "gemini"]
PROTOCOLS: tuple[ProtocolName, ...] = typing.get_args(ProtocolName)


@dataclass(frozen=True, slots=True)
class Routes:
    """A gateway's published endpoint table (model -> protocol) as of a date, and glob rules for the rest."""

    as_of: date
    source: str  # where the table is published
    models: Mapping[str, ProtocolName]
    rules: tuple[tuple[str, ProtocolName], ...] = ()  # (glob, protocol), the first match wins

    def protocol(self, model: str) -> ProtocolName | None:
        """The table's protocol for ``model``, else the first rule whose glob matches it; None where neither does."""
        if (listed := self.models.get(model)) is not None:
            return listed
        return next((p for glob, p in self.rules if fnmatch.fnmatchcase(model, glob)), None)

    def by_protocol(self) -> dict[ProtocolName, list[str]]:
        """The table's models grouped by protocol, each group in the table's order."""
        out: dict[ProtocolName, list[str]] = {}
        for model, protocol in self.models.items():
            out.setdefault(protocol, []).append(model)
        return out


def endpoint_table(groups: Mapping[ProtocolName, str]) -> dict[str, ProtocolName]:
    """An endpoint table from each protocol's model ids, written as one space-separated string."""
    return {model: protocol for protocol, models in groups.items() for model in models.split()}


def chosen(
    model: str,
    plan: tuple[Mapping[str, ProtocolName], ProtocolName | None],
    provider: tuple[Mapping[str, ProtocolName], ProtocolName | None],
    fallback: ProtocolName,
) -> ProtocolName:
    """A model's protocol: the plan's ``protocols`` entry for it, else the provider's, else the plan's ``protocol``,
    else the provider's, else ``fallback`` (its preset's table or rule, else the preset's protocol)."""
    (plan_models, plan_protocol), (provider_models, provider_protocol) = plan, provider
    return plan_models.get(model) or provider_models.get(model) or plan_protocol or provider_protocol or fallback
