"""Config files: endpoints out of TOML, and one clear line for each mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokenpace.config.endpoints import load
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
        (
            '[providers.a]\nbase_url = "http://x"\nmodles = ["m"]\n',
            r'providers\.a\.modles: unknown key; did you mean "models"\?',
        ),
        ('[providers.a]\nbase_url = "not a url"\nmodels = ["m"]\n', r"providers\.a\.base_url: "),
        (
            '[providers.a]\nbase_url = "http://x"\nprotocol = "carrier-pigeon"\nmodels = ["m"]\n',
            r"providers\.a\.protocol: ",
        ),
        ('[providers.a]\nbase_url = "http://x"\n', r"providers\.a: give 'models'"),
        ("[frobnicate]\n", r"frobnicate: unknown key \(known: providers, workloads, corpus, schedule\)"),
        (f"[{'k' * 5000}]\n", r"^.{0,200}: k{59}…: unknown key \(known: providers, workloads, corpus, schedule\)$"),
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
        load(path)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)
    for raw in ("Input should", "Extra inputs", "Value error", "Field required", "validation error"):
        assert raw not in str(info.value)  # the file's words, not the validator's


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
        load(write(tmp_path, text))


def test_config_that_is_not_utf8_or_has_a_broken_header(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes('[providers.caf\xe9]\nbase_url = "http://x"\nmodels = ["m"]\n'.encode("latin-1"))
    with pytest.raises(ConfigError, match="not UTF-8"):
        load(path)
    bad = write(tmp_path, '[providers.a]\nbase_url = "http://x"\nmodels = ["m"]\nheaders = { "X-A" = "b\\nc" }\n')
    with pytest.raises(ConfigError, match=r"providers\.a\.headers: .*one line"):
        load(bad)


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


def test_schedule_settings_per_plan_and_provider(tmp_path: Path) -> None:
    from tokenpace.config.settings import Budget, Cadence

    cfg = load(write(tmp_path, SCHEDULED))
    free, dev = cfg.plans["groq", "free"], cfg.plans["groq", "dev"]
    assert (free.billing, free.every_s, free.requests) == ("capped", 3600, 2)
    assert free.budget == Budget(requests=100, output_tokens=50_000)
    assert (dev.billing, dev.every_s, dev.requests) == ("capped", 1800, 2)  # its own every, the provider's rest
    assert dev.budget == Budget(input_tokens=2_000_000)  # a plan's budget table replaces the provider's whole
    assert (cfg.plans["local", "default"].billing, cfg.plans["local", "default"].every_s) == ("uncapped", 600)
    assert (cfg.concurrency_of("groq"), cfg.concurrency_of("local"), cfg.concurrency_of("elsewhere")) == (4, 10, 10)
    s = cfg.schedule
    assert (s.workloads, s.min_samples, s.jitter) == (("1k", "parallel", "long-summary"), 5, 0.2)
    assert s.cadence("1k") == Cadence() and s.cadence("long-summary") == Cadence(7200)
    assert s.cadence("parallel") == Cadence(43200, 0.4)
    assert s.cadence("10k") == Cadence(3 * 3600) and s.cadence("100k") == Cadence(7 * 86400)  # defaults stay


def test_simulated_provider_needs_no_address_and_is_labelled(tmp_path: Path) -> None:
    cfg = load(write(tmp_path, SCHEDULED))
    (demo,) = cfg.find("demo")
    assert (demo.name, demo.simulated, demo.api_key_env, demo.protocol) == ("demo/sim", True, None, "openai-chat")
    assert demo.base_url == "simulated://demo"  # the service starts the simulator and rewrites it
    assert cfg.simulators == {"demo": {"ttft_ms": 120, "tokens_per_s": 300, "error": "500", "error_rate": 0.1}}
    assert cfg.plan_of(demo).billing == "uncapped"
    assert not any(e.simulated for e in cfg.endpoints if e.provider != "demo")


def test_plans_the_file_does_not_declare_get_defaults() -> None:
    from tokenpace.config.endpoints import Config, Endpoint

    keyed = Endpoint("cerebras", "m", "https://api.cerebras.ai/v1", api_key_env="CEREBRAS_API_KEY")
    local = Endpoint("ollama", "m", "http://127.0.0.1:11434")
    assert (Config().plan_of(keyed).billing, Config().plan_of(keyed).every_s) == ("per-token", 4 * 3600)
    assert (Config().plan_of(local).billing, Config().plan_of(local).every_s) == ("uncapped", 600)
    assert Config().schedule.workloads == ("1k", "10k", "100k", "vision", "parallel")


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("10m", 600), ("3h", 10800), ("1d", 86400), ("1.5h", 5400), (" 2 m ", 120)]
)
def test_durations(text: str, seconds: float) -> None:
    from tokenpace.config.settings import parse_duration

    assert parse_duration(text) == seconds


SIM = "[providers.demo]\nsimulate = {}\n"
A = '[providers.a]\nbase_url = "http://x"\nmodels = ["m"]\n'
DEMO = "[providers.demo]\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (A + 'every = "10x"\n', r"providers\.a\.every: .*'10x' is not a duration"),
        (A + "every = 600\n", r"providers\.a\.every: .*unit s, m, h or d"),
        (A + 'every = "0m"\n', r"providers\.a\.every: .*above 0"),
        (A + 'every = "0.001s"\n', r"providers\.a\.every: 0\.001 s is more often than the minimum of 10 s"),
        (A + '[providers.a.plans.p]\nmodels = ["n"]\nevery = "9s"\n', r"providers\.a\.plans\.p\.every: 9 s is more"),
        (
            DEMO + 'simulate = {}\nevery = "0.5s"\n',
            r"providers\.demo\.every: 0\.5 s is more .* minimum of 1 s .*simulated",
        ),
        (
            '[schedule.every]\n"1k" = "0.001s"\n',
            r"schedule\.every\.1k: '0\.001s' is more often than the minimum of 1 s",
        ),
        (A + 'billing = "free"\n', r'providers\.a\.billing: "free" is not one of "uncapped", "capped" or "per-token"'),
        (A + "concurrency = 0\n", r"providers\.a\.concurrency: "),
        (A + "budget = { tokens = 5 }\n", r'providers\.a\.budget\.tokens: unknown key; did you mean "input_tokens"\?'),
        (A + '[providers.a.plans.p]\nmodels = ["m"]\nrequests = 0\n', r"providers\.a\.plans\.p\.requests: "),
        (DEMO + 'base_url = "http://x"\nsimulate = {}\n', r"providers\.demo: a simulated provider takes no base_url"),
        ('[schedule]\nworkloads = ["1k", "2k"]\n', r"schedule\.workloads: unknown workload '2k' \(known: 1k, 10k"),
        ('[schedule.every]\n"2k" = "1h"\n', r"schedule\.every: unknown workload '2k'"),
        ('[schedule.every]\n"1k" = "often"\n', r"schedule\.every\.1k: .*not a duration"),
        ('[schedule.every]\n"1k" = { every = "1d", jitter = 1.5 }\n', r"schedule\.every\.1k: .*jitter must be"),
        ("[schedule]\njitter = 1\n", r"schedule\.jitter: must be below 1, not 1$"),
        ("[schedule]\nmin_samples = 0\n", r"schedule\.min_samples: "),
        ("[schedule]\nworkloads = []\n", r"schedule\.workloads: "),
        (
            '[workloads.x]\ninput_tokens = "a"\nmax_tokens = 5\n',
            r'workloads\.x\.input_tokens: expected a whole number, not "a"',
        ),
        (
            "[workloads.x]\ninput_tokenz = 5\n",
            r'workloads\.x\.input_tokenz: unknown key; did you mean "input_tokens"\?',
        ),
    ],
)
def test_schedule_mistakes_are_one_line_naming_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    assert_one_line_error(tmp_path, text, message)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("{ ttft = 5 }", r'providers\.demo\.simulate\.ttft: unknown key; did you mean "ttft_ms"\?'),
        ('{ ttft_ms = "fast" }', r'providers\.demo\.simulate\.ttft_ms: expected a number, not "fast"'),
        ("{ tokens_per_s = 0 }", r"providers\.demo\.simulate\.tokens_per_s must be > 0"),
        ('{ error = "teapot" }', r"providers\.demo\.simulate\.error must be None or one of"),
    ],
)
def test_a_simulate_table_is_checked_by_the_simulator_in_the_files_words(
    tmp_path: Path, table: str, message: str
) -> None:
    """The config keeps the table as written (config knows nothing of sim); sim.scenarios checks it."""
    from tokenpace import sim

    path = write(tmp_path, f"{DEMO}simulate = {table}\n")
    cfg = load(path)
    with pytest.raises(ConfigError, match=message) as info:
        sim.scenarios(cfg)
    assert str(path) in str(info.value) and "\n" not in str(info.value) and "Input should" not in str(info.value)


def test_a_simulated_provider_alone_is_a_whole_config(tmp_path: Path) -> None:
    cfg = load(write(tmp_path, SIM))
    assert [e.name for e in cfg.endpoints] == ["demo/sim"] and cfg.simulators == {"demo": {}}


def test_a_workload_wider_than_its_provider_allows_is_refused(tmp_path: Path) -> None:
    from tokenpace.schedule.sampler import jobs

    cfg = load(write(tmp_path, A + "concurrency = 4\n"))
    with pytest.raises(ConfigError, match=r"parallel sends 10 requests at once but providers\.a\.concurrency is 4"):
        jobs(cfg, cfg.endpoints)
    narrow = load(write(tmp_path, A + 'concurrency = 4\n[schedule]\nworkloads = ["1k"]\n'))
    assert [j.workload.name for j in jobs(narrow, narrow.endpoints)] == ["1k"]
