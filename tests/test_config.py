"""Config files: endpoints out of TOML, and one clear line for each mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokenpace.config import load
from tokenpace.errors import ConfigError

GOOD = """
[providers.groq]
base_url = "https://api.groq.com/openai/v1/"
api_key_env = "GROQ_API_KEY"
plan = "free"
models = ["llama-3.1-8b-instant"]
headers = { "X-Team" = "speed" }

[providers.groq.plans.dev]
api_key_env = "GROQ_DEV_API_KEY"
models = ["llama-3.1-8b-instant", "llama-3.3-70b-versatile"]

[providers.local]
base_url = "http://127.0.0.1:8080/v1"
models = ["tiny"]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tokenpace.toml"
    path.write_text(text)
    return path


def test_same_model_on_two_plans_is_two_endpoints(tmp_path: Path) -> None:
    cfg = load(write(tmp_path, GOOD))
    names = sorted(e.name for e in cfg.endpoints)
    assert names == [
        "groq:dev/llama-3.1-8b-instant",
        "groq:dev/llama-3.3-70b-versatile",
        "groq:free/llama-3.1-8b-instant",
        "local/tiny",
    ]
    free = cfg.find("groq:free/llama-3.1-8b-instant")[0]
    assert free.base_url == "https://api.groq.com/openai/v1"
    assert free.api_key_env == "GROQ_API_KEY"
    assert dict(free.headers) == {"X-Team": "speed"}
    assert len(cfg.find("groq/llama-3.1-8b-instant")) == 2
    assert len(cfg.find("groq")) == 3


def test_unknown_endpoint_lists_known_ones(tmp_path: Path) -> None:
    cfg = load(write(tmp_path, GOOD))
    with pytest.raises(ConfigError, match=r"no endpoint matches 'groq/nope' \(known: .*local/tiny"):
        cfg.find("groq/nope")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[providers.a]\nbase_url = "http://x"\nmodles = ["m"]\n', r"providers\.a\.modles: Extra inputs"),
        ('[providers.a]\nbase_url = "not a url"\nmodels = ["m"]\n', r"providers\.a\.base_url: "),
        (
            '[providers.a]\nbase_url = "http://x"\nprotocol = "carrier-pigeon"\nmodels = ["m"]\n',
            r"providers\.a\.protocol: ",
        ),
        ('[providers.a]\nbase_url = "http://x"\n', r"providers\.a: give 'models'"),
        ("providers = 3\n", r"providers: "),
        ("[providers.a\n", r"not valid TOML"),
    ],
)
def test_mistakes_are_one_line_naming_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=message) as info:
        load(path)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load(tmp_path / "nope.toml")


def test_missing_key_variable_names_the_variable_not_a_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    endpoint = load(write(tmp_path, GOOD)).find("groq:free")[0]
    with pytest.raises(ConfigError, match="environment variable GROQ_API_KEY is not set"):
        endpoint.api_key()
    monkeypatch.setenv("GROQ_API_KEY", "sk-canary")
    assert endpoint.api_key() == "sk-canary"
    assert "sk-canary" not in repr(endpoint)


def test_presets_fill_in_what_a_provider_table_leaves_out(tmp_path: Path) -> None:
    text = (
        '[providers.groq]\nmodels = ["llama-3.1-8b-instant"]\n'
        '[providers.work-gateway]\npreset = "anthropic"\napi_key_env = "WORK_KEY"\nmodels = ["claude-x"]\n'
        '[providers.home]\npreset = "ollama"\nbase_url = "http://127.0.0.1:9999"\nmodels = ["qwen3"]\n'
    )
    cfg = load(write(tmp_path, text))
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
    from tokenpace.config import Config

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
        load(write(tmp_path, text))


def test_config_that_is_not_utf8_or_has_a_broken_header(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes('[providers.caf\xe9]\nbase_url = "http://x"\nmodels = ["m"]\n'.encode("latin-1"))
    with pytest.raises(ConfigError, match="not UTF-8"):
        load(path)
    bad = write(tmp_path, '[providers.a]\nbase_url = "http://x"\nmodels = ["m"]\nheaders = { "X-A" = "b\\nc" }\n')
    with pytest.raises(ConfigError, match=r"providers\.a\.headers: .*one line"):
        load(bad)
