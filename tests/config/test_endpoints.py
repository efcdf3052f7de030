"""Config files: endpoints out of TOML, and one clear line for each mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokenpace.config.endpoints import Endpoint, endpoint_name, read_config
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
    cfg = read_config(write(tmp_path, GOOD))
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
    cfg = read_config(write(tmp_path, GOOD))
    with pytest.raises(ConfigError, match=r"no endpoint matches 'groq/nope' \(known: .*local/tiny"):
        cfg.find("groq/nope")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[providers.a]\nbase_url = "http://x"\nmodles = ["m"]\n',
            r'providers\.a\.modles: unknown key; did you mean "models"\?',
        ),
        ('[providers.a]\nbase_url = "not a url"\nmodels = ["m"]\n', r"providers\.a\.base_url: "),
        (
            '[providers.a]\nbase_url = "http://x"\nprotocol = "carrier-pigeon"\nmodels = ["m"]\n',
            r'providers\.a\.protocol: "carrier-pigeon" is not one of "openai-chat", "openai-completions", '
            r'"openai-responses", "anthropic", "ollama" or "gemini"$',
        ),
        (
            '[providers.a]\nbase_url = "http://x"\nmodels = ["m"]\n'
            '[providers.a.plans.p]\nmodels = ["n"]\nprotocol = 5\n',
            r'providers\.a\.plans\.p\.protocol: 5 is not one of "openai-chat", .* or "gemini"$',
        ),
        ('[providers.a]\nbase_url = "http://x"\n', r"providers\.a: give 'models'"),
        (
            "[frobnicate]\n",
            r"frobnicate: unknown key \(known: providers, workloads, corpus, schedule, models, alerts, "
            r"incidents, regions, about\)",
        ),
        (
            f"[{'k' * 5000}]\n",
            r"^.{0,200}: k{59}…: unknown key \(known: providers, workloads, corpus, schedule, models, alerts, "
            r"incidents, regions, about\)$",
        ),
        (
            '[providers.groq]\nmodels = ["m"]\nbiling = "capped"\n',
            r'providers\.groq\.biling: unknown key; did you mean "billing"\?',
        ),
        (
            '[providers.a]\nbase_url = "http://x"\nmodels = "m"\n',
            r'providers\.a\.models: expected a list such as \["a", "b"\], not "m"',
        ),
        (
            '[providers.a]\nbase_url = "http://x"\nmodels = ["m", 3]\n',
            r"providers\.a\.models\[1\]: expected a string in quotes, not 3",
        ),
        ('[providers.a]\nbase_url = "http://x"\nmodels = ["m", "m"]\n', r'providers\.a\.models: "m" is listed twice'),
        (
            '[providers.a]\nbase_url = "http://x"\nmodels = ["m"]\n[providers.a.plans.default]\nmodels = ["n"]\n',
            r"providers\.a: the default plan is declared twice",
        ),
        (
            '[providers.a]\nbase_url = "http://x"\n[providers.a.plans.p]\nmodels = ["m", "n", "m"]\n',
            r'providers\.a\.plans\.p\.models: "m" is listed twice',
        ),
        ("providers = 3\n", r"providers: "),
        ("[providers.a\n", r"not valid TOML"),
    ],
)
def test_mistakes_are_one_line_naming_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    assert_one_line_error(tmp_path, text, message)


def assert_one_line_error(tmp_path: Path, text: str, message: str) -> None:
    """Loading ``text`` fails with one ConfigError line that names the file and matches ``message``."""
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=message) as info:
        read_config(path)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)
    for raw in ("Input should", "Extra inputs", "Value error", "Field required", "validation error"):
        assert raw not in str(info.value)  # the file's words, not the validator's


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        read_config(tmp_path / "nope.toml")


def test_missing_key_variable_names_the_variable_not_a_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    endpoint = read_config(write(tmp_path, GOOD)).find("groq:free")[0]
    with pytest.raises(ConfigError, match="environment variable GROQ_API_KEY is not set"):
        endpoint.api_key()
    monkeypatch.setenv("GROQ_API_KEY", "sk-canary")
    assert endpoint.api_key() == "sk-canary"
    assert "sk-canary" not in repr(endpoint)


def test_config_that_is_not_utf8_or_has_a_broken_header(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes('[providers.caf\xe9]\nbase_url = "http://x"\nmodels = ["m"]\n'.encode("latin-1"))
    with pytest.raises(ConfigError, match="not UTF-8"):
        read_config(path)
    bad = write(tmp_path, '[providers.a]\nbase_url = "http://x"\nmodels = ["m"]\nheaders = { "X-A" = "b\\nc" }\n')
    with pytest.raises(ConfigError, match=r"providers\.a\.headers: .*one line"):
        read_config(bad)


SCHEDULED = """
[providers.groq]
api_key_env = "GROQ_API_KEY"
plan = "free"
models = ["llama-3.1-8b-instant"]
billing = "capped"
concurrency = 4
requests = 2
budget = { requests = 100, output_tokens = 50_000 }

[providers.groq.plans.dev]
models = ["llama-3.3-70b-versatile"]
every = "30m"
budget = { input_tokens = 2_000_000 }

[providers.local]
base_url = "http://127.0.0.1:8080/v1"
models = ["tiny"]

[providers.demo]
simulate = { ttft_ms = 120, tokens_per_s = 300, error = "500", error_rate = 0.1 }

[workloads.long-summary]
input_tokens = 20000
max_tokens = 800

[schedule]
workloads = ["1k", "parallel", "long-summary"]
min_samples = 5
jitter = 0.2

[schedule.every]
"1k" = "plan"
"long-summary" = "2h"
"parallel" = { every = "12h", jitter = 0.4 }
"""


def test_simulated_provider_needs_no_address_and_is_labelled(tmp_path: Path) -> None:
    cfg = read_config(write(tmp_path, SCHEDULED))
    (demo,) = cfg.find("demo")
    assert (demo.name, demo.simulated, demo.api_key_env, demo.protocol) == ("demo/sim", True, None, "openai-chat")
    assert demo.base_url == "simulated://demo"  # the service starts the simulator and rewrites it
    assert cfg.simulators == {"demo": {"ttft_ms": 120, "tokens_per_s": 300, "error": "500", "error_rate": 0.1}}
    assert cfg.plan_of(demo).billing == "uncapped"
    assert not any(e.simulated for e in cfg.endpoints if e.provider != "demo")


SIM = "[providers.demo]\nsimulate = {}\n"
A = '[providers.a]\nbase_url = "http://x"\nmodels = ["m"]\n'
DEMO = "[providers.demo]\n"


def test_a_simulated_provider_alone_is_a_whole_config(tmp_path: Path) -> None:
    cfg = read_config(write(tmp_path, SIM))
    assert [e.name for e in cfg.endpoints] == ["demo/sim"] and cfg.simulators == {"demo": {}}


def test_a_workload_wider_than_its_provider_allows_is_refused(tmp_path: Path) -> None:
    from tokenpace.schedule.cadence import jobs

    cfg = read_config(write(tmp_path, A + "concurrency = 4\n"))
    with pytest.raises(ConfigError, match=r"parallel sends 10 requests at once but providers\.a\.concurrency is 4"):
        jobs(cfg, cfg.endpoints)
    narrow = read_config(write(tmp_path, A + 'concurrency = 4\n[schedule]\nworkloads = ["1k"]\n'))
    assert [j.workload.name for j in jobs(narrow, narrow.endpoints)] == ["1k"]


def test_a_stored_row_is_named_as_its_configured_endpoint() -> None:
    """One naming rule: the default plan is left out of the name, any other is the provider's suffix."""
    assert endpoint_name("groq", "default", "llama") == Endpoint("groq", "llama", "").name == "groq/llama"
    assert endpoint_name("groq", "free", "llama") == Endpoint("groq", "llama", "", "free").name == "groq:free/llama"
