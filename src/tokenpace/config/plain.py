"""pydantic's validation errors in plain words: ``providers.groq.biling: unknown key; did you mean "billing"?``.

A config file is written by a person, so its mistakes are reported in the file's terms (keys, tables, TOML
values), never in the validator's (``Extra inputs are not permitted``, ``Input should be a valid integer``).
"""

from __future__ import annotations

import difflib
import json
import types
import typing
from typing import Any

import pydantic

from tokenpace.text import printable_line


def is_one_line(text: str) -> bool:
    """Whether text holds nothing a reader would see as a picture (text.printable_line): no control character
    (C0, DEL, C1) and no bidi control, so a name or a note shows as written and stays on its line."""
    return printable_line(text) == text


def where(loc: tuple[int | str, ...]) -> str:
    """``providers.a.models[0]``: a TOML key path as a person would write it."""
    out = ""
    for part in loc:
        if part == "[key]":  # pydantic's mark of a table's key, which the path already names
            continue
        name = str(part) if len(str(part)) <= 60 else str(part)[:59] + "…"  # a key is the file's: bounded too
        out += f"[{part}]" if isinstance(part, int) else f".{name}" if out else name
    return out or "(top level)"


def _shown(value: Any) -> str:
    """A value as TOML would show it, cut short: a hostile file must not make a page-long error line."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:
        text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _unwrapped(annotation: Any) -> Any:
    """The type inside ``X | None`` and ``Annotated[X, ...]``."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            inner = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(inner) != 1:
                return annotation
            annotation = inner[0]
        else:
            return annotation


def keys_at(model: type[pydantic.BaseModel], path: tuple[int | str, ...]) -> list[str]:
    """The keys the table at ``path`` of ``model`` takes (``[]`` where the path leads to no table)."""
    current: Any = model
    for part in path:
        current = _unwrapped(current)
        if isinstance(current, type) and issubclass(current, pydantic.BaseModel):
            field = current.model_fields.get(str(part))
            if field is None:
                return []
            current = field.annotation
        elif typing.get_origin(current) is dict:
            current = typing.get_args(current)[1]  # ``part`` is one of the table's own names
        else:
            return []
    current = _unwrapped(current)
    if isinstance(current, type) and issubclass(current, pydantic.BaseModel):
        return list(current.model_fields)
    return []


_EXPECTED = {
    "int": "a whole number",
    "float": "a number",
    "string": "a string in quotes",
    "bool": "true or false",
    "list": 'a list such as ["a", "b"]',
    "dict": "a table",
    "model": "a table",
    "date": "a day such as 2026-11-01",
}


def problem(error: Any, model: type[pydantic.BaseModel]) -> str:
    """One pydantic error as ``key: what is wrong``, in plain words."""
    kind, loc, ctx = error["type"], tuple(error["loc"]), error.get("ctx") or {}
    value = error.get("input")
    if kind == "extra_forbidden":
        known = keys_at(model, loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
        if close:
            return f'{where(loc)}: unknown key; did you mean "{close[0]}"?'
        return f"{where(loc)}: unknown key" + (f" (known: {', '.join(known)})" if known else "")
    if kind == "missing":
        return f"{where(loc)}: missing; this key is required"
    if kind == "literal_error":
        expected = str(ctx.get("expected", "")).replace("'", '"')
        return f"{where(loc)}: {_shown(value)} is not one of {expected}"
    if kind in ("greater_than_equal", "greater_than", "less_than", "less_than_equal"):
        bound = {"greater_than_equal": "at least", "greater_than": "above", "less_than": "below",
                 "less_than_equal": "at most"}[kind]  # fmt: skip
        limit = next(iter(ctx.values()), "")
        limit = int(limit) if isinstance(limit, float) and limit.is_integer() else limit
        return f"{where(loc)}: must be {bound} {limit}, not {_shown(value)}"
    if kind == "too_short":
        least = ctx.get("min_length", 1)
        return f"{where(loc)}: must not be empty" if least == 1 else f"{where(loc)}: give {least} items"
    if kind == "too_long":
        return f"{where(loc)}: give at most {ctx.get('max_length')} items"
    if kind == "finite_number":
        return f"{where(loc)}: must be a finite number, not {_shown(value)}"
    if kind.startswith("url_"):
        return f'{where(loc)}: {_shown(value)} is not a URL; give one such as "https://api.example.com/v1"'
    if kind == "value_error":
        return f"{where(loc)}: {ctx.get('error', error['msg'])}"
    for prefix, expected in _EXPECTED.items():
        if kind.startswith(prefix + "_"):
            return f"{where(loc)}: expected {expected}, not {_shown(value)}"
    return f"{where(loc)}: {error['msg']}"


def first_problem(exc: pydantic.ValidationError, model: type[pydantic.BaseModel]) -> str:
    """The first error of ``exc`` in plain words, saying how many more there are."""
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return problem(exc.errors()[0], model) + more
