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
