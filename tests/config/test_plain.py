"""Validator errors in the file's words: the key path as written, a did-you-mean, the value as TOML shows it."""

from __future__ import annotations

from typing import Literal

import pydantic
import pytest

from tokenpace.config.plain import first_problem, is_one_line, where


class _Inner(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", strict=True)
    billing: Literal["capped", "uncapped"] = "capped"
    requests: int = pydantic.Field(1, ge=1)


class _Outer(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", strict=True)
    providers: dict[str, _Inner] = {}
    models: list[str] = pydantic.Field(default_factory=list, min_length=1)


def said(doc: object) -> str:
    with pytest.raises(pydantic.ValidationError) as info:
        _Outer.model_validate(doc)
    return first_problem(info.value, _Outer)


def test_a_key_path_reads_as_written_and_long_keys_are_cut() -> None:
    assert where(("providers", "groq", "models", 0)) == "providers.groq.models[0]"
    assert where(()) == "(top level)"
    assert where(("k" * 100,)) == "k" * 59 + "…"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"providers": {"groq": {"biling": "capped"}}}, 'providers.groq.biling: unknown key; did you mean "billing"?'),
        ({"providers": {"groq": {"zzz": 1}}}, "providers.groq.zzz: unknown key (known: billing, requests)"),
        ({"providers": {"g": {"billing": "free"}}}, 'providers.g.billing: "free" is not one of "capped" or "uncapped"'),
        ({"providers": {"g": {"requests": 0}}}, "providers.g.requests: must be at least 1, not 0"),
        ({"providers": {"g": {"requests": "2"}}}, 'providers.g.requests: expected a whole number, not "2"'),
        ({"models": []}, "models: must not be empty"),
    ],
)
def test_each_mistake_is_one_line_in_plain_words(doc: object, message: str) -> None:
    assert said(doc) == message


def test_more_mistakes_are_counted_and_a_huge_value_is_cut() -> None:
    line = said({"providers": {"g": {"requests": "x" * 10_000, "billing": "y"}}})
    assert line.endswith("(and 1 more)") and len(line) < 200 and "\n" not in line


def test_one_line_refuses_every_control_character() -> None:
    assert is_one_line("https://groq.com/pricing · fp8 ü")
    assert not any(is_one_line(f"a{chr(c)}b") for c in [*range(32), 127])
