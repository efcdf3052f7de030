"""Scenarios: what the simulator refuses, a config's simulate tables, and words that are one token each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.config.test_endpoints import DEMO, write
from tokenpace.config.endpoints import read_config
from tokenpace.errors import ConfigError, SimulatorError
from tokenpace.prompts.tokens import count_tokens
from tokenpace.sim import NON_ASCII_WORDS, WORDS, Scenario


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("{ ttft = 5 }", r'providers\.demo\.simulate\.ttft: unknown key; did you mean "ttft_ms"\?'),
        ('{ ttft_ms = "fast" }', r'providers\.demo\.simulate\.ttft_ms: expected a number, not "fast"'),
        ("{ tokens_per_s = 0 }", r"providers\.demo\.simulate\.tokens_per_s must be > 0"),
        ('{ error = "teapot" }', r"providers\.demo\.simulate\.error must be None or one of"),
        ("{ cold_start_ms = -5 }", r"providers\.demo\.simulate\.ttft_ms, .*cold_start_ms, cold_after_s must be >= 0"),
    ],
)
def test_a_simulate_table_is_checked_by_the_simulator_in_the_files_words(
    tmp_path: Path, table: str, message: str
) -> None:
    """The config keeps the table as written (config knows nothing of sim); sim.scenarios checks it."""
    from tokenpace import sim

    path = write(tmp_path, f"{DEMO}simulate = {table}\n")
    cfg = read_config(path)
    with pytest.raises(ConfigError, match=message) as info:
        sim.scenarios(cfg)
    assert str(path) in str(info.value) and "\n" not in str(info.value) and "Input should" not in str(info.value)


def test_every_word_is_one_o200k_token() -> None:
    assert len(set(WORDS)) == len(WORDS) >= 50
    assert [w for w in WORDS if not w.startswith(" ") or count_tokens(w) != 1] == []
    assert all(not w.isascii() for w in NON_ASCII_WORDS)


@pytest.mark.parametrize(
    "bad",
    [
        {"tokens_per_s": 0},
        {"tokens_per_chunk": 0},
        {"ttft_ms": -1},
        {"error": "teapot"},
        {"error_rate": 1.5},
        {"usage": "sometimes"},
        {"reasoning_field": "thinking"},
        {"final_burst": True, "error": "endless"},
        {"jitter_ms": float("nan")},
        {"cold_start_ms": -1},
        {"cold_after_s": float("inf")},
    ],
)
def test_scenario_rejects_what_it_cannot_do(bad: dict[str, Any]) -> None:
    with pytest.raises(SimulatorError, match="scenario"):
        Scenario(**bad)
