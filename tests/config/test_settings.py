"""Schedule settings: billing cadences, plans, budgets, durations and their one-line mistakes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.config.test_endpoints import DEMO, SCHEDULED, A, assert_one_line_error, write
from tokenpace.config.endpoints import read_config


def test_schedule_settings_per_plan_and_provider(tmp_path: Path) -> None:
    from tokenpace.config.settings import Budget, Cadence

    cfg = read_config(write(tmp_path, SCHEDULED))
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


def test_cold_after_from_the_plan_else_the_provider_else_the_schedule(tmp_path: Path) -> None:
    text = A + 'cold_after = "off"\n[providers.a.plans.p]\nmodels = ["n"]\ncold_after = "2m"\n'
    text += '[providers.b]\nbase_url = "http://b/v1"\nmodels = ["m"]\n[schedule]\ncold_after = "1h"\n'
    cfg = read_config(write(tmp_path, text))
    assert {e.name: cfg.cold_after_of(e) for e in cfg.endpoints} == {"a/m": 0.0, "a:p/n": 120.0, "b/m": 3600.0}
    plain = read_config(write(tmp_path, A))
    assert plain.cold_after_of(plain.endpoints[0]) == 900.0  # the default: 15 minutes


def test_wake_from_the_plan_else_the_provider_else_the_schedule_and_never_where_nothing_is_cold(
    tmp_path: Path,
) -> None:
    text = A + 'wake = false\n[providers.a.plans.p]\nmodels = ["n"]\nwake = true\n'
    text += '[providers.b]\nbase_url = "http://b/v1"\nmodels = ["m"]\n[providers.c]\nbase_url = "http://c/v1"\n'
    text += 'models = ["m"]\ncold_after = "off"\n'
    cfg = read_config(write(tmp_path, text))
    assert {e.name: cfg.wake_of(e) for e in cfg.endpoints} == {"a/m": False, "a:p/n": True, "b/m": True, "c/m": False}
    off = read_config(write(tmp_path, A + "[schedule]\nwake = false\n"))
    assert not off.wake_of(off.endpoints[0])


def test_plans_the_file_does_not_declare_get_defaults() -> None:
    from tokenpace.config.endpoints import Config, Endpoint

    keyed = Endpoint("cerebras", "m", "https://api.cerebras.ai/v1", api_key_env="CEREBRAS_API_KEY")
    local = Endpoint("ollama", "m", "http://127.0.0.1:11434")
    assert (Config().plan_of(keyed).billing, Config().plan_of(keyed).every_s) == ("per-token", 4 * 3600)
    assert (Config().plan_of(local).billing, Config().plan_of(local).every_s) == ("uncapped", 600)
    assert Config().schedule.workloads == ("1k", "10k", "100k", "vision", "parallel")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (A + 'every = "10x"\n', r"providers\.a\.every: .*'10x' is not a duration"),
        (A + "every = 600\n", r"providers\.a\.every: .*unit ms, s, m, h or d"),
        (A + 'every = "0m"\n', r"providers\.a\.every: .*above 0"),
        (A + f'every = "{"9" * 400}d"\n', r"providers\.a\.every: '9+…' is not a duration from above 0 to 366 days"),
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
        ('[schedule]\ncold_after = "soon"\n', r"schedule\.cold_after: 'soon': give how long .* \"15m\", or \"off\"$"),
        ("[schedule]\ncold_after = -1\n", r"schedule\.cold_after: -1: give how long an endpoint idles"),
        (A + 'cold_after = "0m"\n', r"providers\.a\.cold_after: '0m': give how long"),
        ('[schedule]\nwake = "no"\n', r"schedule\.wake: expected true or false, not \"no\"$"),
        (A + "wake = 1\n", r"providers\.a\.wake: "),
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
