"""One name per model: providers' ids of the same weights matched exactly after one normalisation."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.config.test_endpoints import assert_one_line_error, write
from tokenpace.config.endpoints import Config, read_config
from tokenpace.config.models import BUILTIN_MODELS, Models, normal


def test_normal_form_is_lower_case_without_an_org_prefix() -> None:
    assert normal(" meta-llama/Llama-3.1-8B-Instruct ") == "llama-3.1-8b-instruct"
    assert normal("accounts/fireworks/models/llama-v3p1-8b-instruct") == "llama-v3p1-8b-instruct"
    assert normal("gpt-oss:120b") == "gpt-oss:120b"


@pytest.mark.parametrize(
    ("model", "canonical"),
    [
        ("llama-3.1-8b-instant", "llama-3.1-8b"),  # Groq
        ("llama3.1-8b", "llama-3.1-8b"),  # Cerebras
        ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),  # Hugging Face
        ("meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo", "llama-3.1-8b"),  # Together
        ("accounts/fireworks/models/llama-v3p1-8b-instruct", "llama-3.1-8b"),  # Fireworks
        ("meta-llama/llama-3.1-8b-instruct", "llama-3.1-8b"),  # OpenRouter
        ("llama-3.3-70b-versatile", "llama-3.3-70b"),
        ("meta-llama/Llama-3.3-70B-Instruct-Turbo", "llama-3.3-70b"),
        ("openai/gpt-oss-120b", "gpt-oss-120b"),
        ("gpt-oss:120b", "gpt-oss-120b"),
        # No fuzzy guessing: what no alias names exactly is its own model, spelt as the provider spells it.
        ("llama-3.1-8b-instruct-fp8", "llama-3.1-8b-instruct-fp8"),
        ("Org/Unknown-Model", "Org/Unknown-Model"),
        ("llama-3.1-70b", "llama-3.1-70b"),
    ],
)
def test_builtin_aliases(model: str, canonical: str) -> None:
    assert Models().canonical(model) == canonical


def test_builtin_aliases_are_unambiguous_and_windows_known() -> None:
    seen = [a for info in BUILTIN_MODELS for a in info.aliases]
    assert len(seen) == len(set(seen))
    assert Models().info_of("llama3.1-8b") is not None and Models().info_of("llama3.1-8b").context_window == 131072  # type: ignore[union-attr]
    assert Models().ids("llama-3.1-8b", ["llama3.1-8b", "x", "llama-3.1-8b-instant"]) == [
        "llama-3.1-8b-instant",
        "llama3.1-8b",
    ]


MODELS = """
[providers.local]
base_url = "http://127.0.0.1:8080/v1"
models = ["my-llama"]

[models."llama-3.1-8b"]
aliases = ["My-Llama"]
context_window = 8192

[models.house-model]
aliases = ["house/v1", "llama3.1-8b"]
"""


def test_config_adds_aliases_overrides_metadata_and_claims_builtin_aliases(tmp_path: Path) -> None:
    models = read_config(write(tmp_path, MODELS)).models
    assert models.canonical("my-llama") == "llama-3.1-8b"
    assert models.canonical("llama-3.1-8b-instant") == "llama-3.1-8b"  # built-in aliases kept
    assert models.info_of("llama-3.1-8b").context_window == 8192  # type: ignore[union-attr]
    assert models.canonical("House/V1") == models.canonical("v1") == "house-model"  # the prefix is dropped
    assert models.canonical("llama3.1-8b") == "house-model"  # the config's claim wins over the built-in one
    assert models.info_of("house-model").context_window is None  # type: ignore[union-attr]
    assert Config().models.canonical("llama3.1-8b") == "llama-3.1-8b"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[models.a]\naliases = ["x"]\n[models.b]\naliases = ["X"]\n',
            r'models\.b\.aliases\[0\]: "X" already names the model "a"',
        ),
        ('[models.a]\naliases = ["b"]\n[models.b]\n', r'models\.b: "b" already names the model "a"'),
        ("[models.a]\ncontext_window = 0\n", r"models\.a\.context_window: must be at least 1"),
        ("[models.a]\ncontext_window = 1e9\n", r"models\.a\.context_window: expected a whole number"),
        ("[models.a]\ncontext_window = 1000000000\n", r"models\.a\.context_window: must be at most 100000000"),
        ("[models.a]\nalias = []\n", r'models\.a\.alias: unknown key; did you mean "aliases"\?'),
        ('[models.a]\naliases = ["x\\ny"]\n', r"models\.a\.aliases\[0\]: give a name on one line"),
        (f'[models.a]\naliases = ["{"x" * 201}"]\n', r"models\.a\.aliases\[0\]: "),
        ("[models.a]\naliases = [" + ", ".join(['"x"'] * 101) + "]\n", r"models\.a\.aliases: give at most 100 items"),
        (f'[models."{"m" * 201}"]\n', r"models: a model's name is one line of 1 to 200 characters"),
    ],
)
def test_model_mistakes_are_one_line_naming_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    assert_one_line_error(tmp_path, text, message)
