"""One name per model: providers' ids of the same weights joined under one canonical name, with what is known of it.

Groq calls Llama 3.1 8B ``llama-3.1-8b-instant``, Cerebras ``llama3.1-8b``, Hugging Face
``meta-llama/Llama-3.1-8B-Instruct``; the board groups them as ``llama-3.1-8b`` so a model's page compares the
providers of the same weights. Matching is exact after one normalisation (:func:`normal`): surrounding spaces
dropped, lower case, and everything up to the last ``/`` dropped (an organisation or account prefix such as
``meta-llama/`` or ``accounts/fireworks/models/``). No fuzzy guessing: a model id no alias matches is its own
canonical name, as written. A small built-in table (:data:`BUILTIN_MODELS`) covers well-known open-weight models; a
config file adds aliases and metadata, or overrides the table::

    [models."llama-3.1-8b"]
    aliases = ["llama-3.1-8b-instant", "llama3.1-8b", "my-llama"]   # added to the built-in ones
    context_window = 131072                                          # tokens, as the model card states

A config alias that a built-in model also claims moves to the config's model; two config models claiming one
alias is an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated

import pydantic

from tokenpace.config.plain import is_one_line

MAX_NAME = 200
MAX_ALIASES = 100
MAX_CONTEXT = 100_000_000


def normal(model: str) -> str:
    """The form aliases are matched in: stripped, lower case, without any prefix up to the last "/"."""
    return model.strip().lower().rpartition("/")[2]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A canonical model: its name, the ids that mean it (normalised) and its context window when known."""

    name: str
    aliases: frozenset[str]
    context_window: int | None = None


def _info(name: str, aliases: Iterable[str], context_window: int | None = None) -> ModelInfo:
    return ModelInfo(name, frozenset(normal(a) for a in (name, *aliases)), context_window)


# Context windows are the model cards' (Meta's Llama 3.1 and 3.3: 128K = 131,072 tokens; OpenAI's gpt-oss:
# 131,072); a provider may serve less, which its own limits say.
BUILTIN_MODELS: tuple[ModelInfo, ...] = (
    _info(
        "llama-3.1-8b",
        ["llama-3.1-8b-instant", "llama3.1-8b", "Llama-3.1-8B-Instruct", "Meta-Llama-3.1-8B-Instruct",
         "Meta-Llama-3.1-8B-Instruct-Turbo", "llama-v3p1-8b-instruct", "llama3.1:8b"],
        131072,
    ),
    _info(
        "llama-3.3-70b",
        ["llama-3.3-70b-versatile", "Llama-3.3-70B-Instruct", "Llama-3.3-70B-Instruct-Turbo",
         "llama-v3p3-70b-instruct", "llama3.3:70b"],
        131072,
    ),
    _info("gpt-oss-120b", ["gpt-oss:120b"], 131072),
    _info("gpt-oss-20b", ["gpt-oss:20b"], 131072),
)  # fmt: skip


def _one_line_name(text: str) -> str:
    if not text.strip() or not is_one_line(text):
        raise ValueError("give a name on one line, without control characters or bidi controls")
    return text


Name = Annotated[str, pydantic.Field(max_length=MAX_NAME), pydantic.AfterValidator(_one_line_name)]


class ModelTable(pydantic.BaseModel):
    """``[models.NAME]`` as a config file gives it."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)
    aliases: list[Name] = pydantic.Field(default=[], max_length=MAX_ALIASES)
    context_window: int | None = pydantic.Field(default=None, ge=1, le=MAX_CONTEXT, strict=True)


@dataclass(frozen=True)
class Models:
    """The alias table: which canonical model a provider's id means, and what is known of it."""

    infos: tuple[ModelInfo, ...] = BUILTIN_MODELS

    def __post_init__(self) -> None:
        index = {alias: info for info in self.infos for alias in info.aliases}
        object.__setattr__(self, "_index", index)  # derived once: a frozen table's lookups stay O(1)

    def info_of(self, model: str) -> ModelInfo | None:
        """The canonical model an id means, None when no alias matches."""
        index: Mapping[str, ModelInfo] = getattr(self, "_index")  # noqa: B009 (set in __post_init__)
        return index.get(normal(model))

    def canonical(self, model: str) -> str:
        """The canonical name of a provider's model id: the matching model's name, else the id itself."""
        found = self.info_of(model)
        return model if found is None else found.name

    def ids(self, canonical: str, seen: Iterable[str]) -> list[str]:
        """The ids among ``seen`` that mean the model called ``canonical``, sorted."""
        return sorted({m for m in seen if self.canonical(m) == canonical})


def models(tables: Mapping[str, ModelTable]) -> Models:
    """The built-in table with a config's ``[models.NAME]`` tables (ValueError ``key: what is wrong``)."""
    owner: dict[str, str] = {}
    for name, table in tables.items():
        if len(name) > MAX_NAME or not name.strip() or not is_one_line(name):
            raise ValueError(f"models: a model's name is one line of 1 to {MAX_NAME} characters")
        for i, alias in enumerate([name, *table.aliases]):
            other = owner.setdefault(normal(alias), name)
            if other != name:
                key = f"models.{name}.aliases[{i - 1}]" if i else f"models.{name}"
                raise ValueError(f'{key}: "{alias}" already names the model "{other}"; give each alias to one model')
    claimed = set(owner)
    infos = {i.name: i for i in BUILTIN_MODELS}
    for info in BUILTIN_MODELS:  # a config's claim wins over the built-in table's
        infos[info.name] = ModelInfo(info.name, info.aliases - claimed, info.context_window)
    for name, table in tables.items():
        known = infos.get(name)
        aliases = {normal(a) for a in (name, *table.aliases)} | (known.aliases if known else frozenset())
        window = table.context_window or (known.context_window if known else None)
        infos[name] = ModelInfo(name, frozenset(aliases), window)
    return Models(tuple(infos.values()))
