"""Prices in a config file: where each endpoint's comes from, their bounds, and when one is stale."""

from __future__ import annotations

import dataclasses
from datetime import date
from pathlib import Path

import pytest

from tests.config.test_endpoints import assert_one_line_error, write
from tokenpace.config.endpoints import Config, Endpoint, read_config
from tokenpace.config.presets import PRESETS
from tokenpace.config.price_tables import MAX_DOLLARS_PER_M
from tokenpace.config.prices import STALE_DAYS, Price

PRICED = """
[providers.groq]
models = ["llama-3.1-8b-instant", "llama-3.3-70b-versatile"]
price = { input = 0.05, output = 0.08, cached_input = 0.01, as_of = "2026-11-01", source = "https://groq.com/pricing" }

[providers.groq.prices."llama-3.3-70b-versatile"]
input = 0.59
output = 0.79
as_of = 2026-10-01

[providers.groq.plans.free]
models = ["llama-3.1-8b-instant", "llama-3.3-70b-versatile"]
price = { input = 0, output = 0, as_of = 2026-11-02 }

[providers.groq.plans.dev]
models = ["llama-3.3-70b-versatile"]
prices = { "llama-3.3-70b-versatile" = { input = 1, output = 2, as_of = 2026-11-03 } }

[providers.cerebras]
models = ["llama3.1-8b", "qwen-3-32b"]

[providers.local]
base_url = "http://127.0.0.1:8080/v1"
models = ["tiny"]
"""


def test_the_most_specific_price_wins(tmp_path: Path) -> None:
    cfg = read_config(write(tmp_path, PRICED))
    assert cfg.price_of("groq", "default", "llama-3.1-8b-instant") == Price(
        0.05, 0.08, 0.01, date(2026, 11, 1), "https://groq.com/pricing"
    )
    assert cfg.price_of("groq", "default", "llama-3.3-70b-versatile") == Price(0.59, 0.79, None, date(2026, 10, 1))
    # A plan's own price beats the provider's per-model one; its own per-model price beats everything.
    assert cfg.price_of("groq", "free", "llama-3.3-70b-versatile") == Price(0, 0, None, date(2026, 11, 2))
    assert cfg.price_of("groq", "dev", "llama-3.3-70b-versatile") == Price(1, 2, None, date(2026, 11, 3))
    # The preset's price is for its default model only; a local server has none.
    assert cfg.price_of("cerebras", "default", "llama3.1-8b") == PRESETS["cerebras"].price
    assert cfg.price_of("cerebras", "default", "qwen-3-32b") is None
    assert cfg.price_of("local", "default", "tiny") is None
    # A provider the file does not declare (samples of an older config) falls back on its preset.
    assert cfg.price_of("openai", "default", "gpt-4o-mini") == PRESETS["openai"].price
    assert Config().price_of("groq", "default", "llama-3.1-8b-instant") == PRESETS["groq"].price
    # What serve discovers from a key variable is priced as its preset; a simulator named like one is not.
    found = Endpoint("groq", "llama-3.1-8b-instant", PRESETS["groq"].base_url, api_key_env="GROQ_API_KEY")
    assert Config((found,), source="discovery").price_of("groq", "default", found.model) == PRESETS["groq"].price
    fake = dataclasses.replace(found, simulated=True)
    assert Config((fake,)).price_of("groq", "default", found.model) is None


def test_every_preset_price_is_dated_with_a_source_for_the_presets_own_model() -> None:
    priced = [p for p in PRESETS.values() if p.price is not None]
    assert len(priced) >= 5
    for p in priced:
        assert p.model is not None and p.price is not None
        assert p.price.as_of is not None and p.price.source is not None and p.price.source.startswith("https://")
        assert 0 <= p.price.input <= MAX_DOLLARS_PER_M and 0 <= p.price.output <= MAX_DOLLARS_PER_M


def test_a_price_older_than_the_limit_is_stale() -> None:
    p = Price(1, 2, as_of=date(2026, 1, 1))
    assert p.age_days(date(2026, 1, 1)) == 0
    assert not p.stale(date.fromordinal(date(2026, 1, 1).toordinal() + STALE_DAYS))
    assert p.stale(date.fromordinal(date(2026, 1, 1).toordinal() + STALE_DAYS + 1))
    assert Price(1, 2).stale(date(2026, 1, 1))  # undated: nobody knows


BASE = '[providers.groq]\nmodels = ["m"]\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            BASE + "price = { input = -1, output = 1, as_of = 2026-01-01 }\n",
            r"providers\.groq\.price\.input: must be at least 0",
        ),
        (
            BASE + "price = { input = 1, output = 20000, as_of = 2026-01-01 }\n",
            r"providers\.groq\.price\.output: must be at most 10000",
        ),
        (BASE + "price = { input = inf, output = 1, as_of = 2026-01-01 }\n", r"providers\.groq\.price\.input: "),
        (BASE + "price = { input = nan, output = 1, as_of = 2026-01-01 }\n", r"providers\.groq\.price\.input: "),
        (
            BASE + 'price = { input = "0.05", output = 1, as_of = 2026-01-01 }\n',
            r"providers\.groq\.price\.input: expected a number",
        ),
        (
            BASE + "price = { input = true, output = 1, as_of = 2026-01-01 }\n",
            r"providers\.groq\.price\.input: expected a number",
        ),
        (BASE + "price = { input = 1, output = 1 }\n", r"providers\.groq\.price\.as_of: missing"),
        (BASE + 'price = { input = 1, output = 1, as_of = "2026-13-01" }\n', r"providers\.groq\.price\.as_of: "),
        (BASE + 'price = { input = 1, output = 1, as_of = "soon" }\n', r"providers\.groq\.price\.as_of: "),
        (
            BASE + "price = { input = 1, output = 1, as_of = 2999-01-01 }\n",
            r"providers\.groq\.price\.as_of: 2999-01-01 is not a day from 2020-01-01 to today",
        ),
        (
            BASE + "price = { input = 1, output = 1, as_of = 1999-01-01 }\n",
            r"providers\.groq\.price\.as_of: 1999-01-01 is not a day",
        ),
        (
            BASE + "price = { input = 1, output = 1, cahced_input = 1, as_of = 2026-01-01 }\n",
            r'providers\.groq\.price\.cahced_input: unknown key; did you mean "cached_input"\?',
        ),
        (
            BASE + 'price = { input = 1, output = 1, as_of = 2026-01-01, source = "a\\nb" }\n',
            r"providers\.groq\.price\.source: give one line",
        ),
        (
            BASE + f'price = {{ input = 1, output = 1, as_of = 2026-01-01, source = "{"x" * 301}" }}\n',
            r"providers\.groq\.price\.source: ",
        ),
        (
            BASE + "[providers.groq.prices.typo]\ninput = 1\noutput = 1\nas_of = 2026-01-01\n",
            r'providers\.groq\.prices: "typo" is not one of the models listed here \(m\)',
        ),
        (
            BASE + 'quantization = { other = "fp8" }\n',
            r'providers\.groq\.quantization: "other" is not one of the models',
        ),
        (BASE + 'quantization = { m = "fp8; drop" }\n', r"providers\.groq\.quantization\.m: "),
        (
            '[providers.groq.plans.p]\nmodels = ["m"]\n'
            "prices = { n = { input = 1, output = 1, as_of = 2026-01-01 } }\n",
            r'providers\.groq\.plans\.p\.prices: "n" is not one of the models listed here \(m\)',
        ),
    ],
)
def test_price_mistakes_are_one_line_naming_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    assert_one_line_error(tmp_path, text, message)


def test_quantization_is_kept_per_provider_and_model(tmp_path: Path) -> None:
    cfg = read_config(write(tmp_path, BASE + 'quantization = { m = "fp8" }\n'))
    assert cfg.quantization == {("groq", "m"): "fp8"}
