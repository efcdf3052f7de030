"""Presets: what a provider's name fills in, with and without a config file, and their mistakes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.config.test_endpoints import write
from tokenpace.config.endpoints import read_config
from tokenpace.errors import ConfigError


def test_presets_fill_in_what_a_provider_table_leaves_out(tmp_path: Path) -> None:
    text = (
        '[providers.groq]\nmodels = ["llama-3.1-8b-instant"]\n'
        '[providers.work-gateway]\npreset = "anthropic"\napi_key_env = "WORK_KEY"\nmodels = ["claude-x"]\n'
        '[providers.home]\npreset = "ollama"\nbase_url = "http://127.0.0.1:9999"\nmodels = ["qwen3"]\n'
    )
    cfg = read_config(write(tmp_path, text))
    groq = cfg.find("groq/llama-3.1-8b-instant")[0]
    assert (groq.base_url, groq.protocol, groq.api_key_env) == (
        "https://api.groq.com/openai/v1", "openai-chat", "GROQ_API_KEY",
    )  # fmt: skip
    gateway = cfg.find("work-gateway")[0]
    assert (gateway.base_url, gateway.protocol, gateway.api_key_env) == (
        "https://api.anthropic.com/v1", "anthropic", "WORK_KEY",
    )  # fmt: skip
    home = cfg.find("home/qwen3")[0]
    assert (home.base_url, home.protocol, home.api_key_env) == ("http://127.0.0.1:9999", "ollama", None)


def test_preset_names_work_without_a_config_file() -> None:
    from tokenpace.config.endpoints import Config

    (e,) = Config().find("cerebras/llama3.1-8b")
    assert (e.name, e.base_url, e.protocol, e.api_key_env) == (
        "cerebras/llama3.1-8b", "https://api.cerebras.ai/v1", "openai-chat", "CEREBRAS_API_KEY",
    )  # fmt: skip
    with pytest.raises(ConfigError, match="no endpoint matches 'nowhere/m'"):
        Config().find("nowhere/m")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[providers.a]\npreset = "nope"\nmodels = ["m"]\n', r"providers\.a\.preset: unknown preset 'nope'"),
        ('[providers.a]\nmodels = ["m"]\n', r"providers\.a: give base_url, or preset = one of"),
    ],
)
def test_preset_mistakes(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        read_config(write(tmp_path, text))
