"""Load-test settings: each option's text as a value, or one line saying what to write instead."""

from __future__ import annotations

import pytest

from tokenpace.config.traffic import MAX_SWEEP_POINTS, Load, Slo, Sweep, parse_seconds, parse_slo, parse_sweep
from tokenpace.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90), ("90s", 90), ("1.5m", 90), ("250ms", 0.25), ("2h", 7200), ("5d", 432_000)]
)
def test_seconds(text: str, seconds: float) -> None:
    assert parse_seconds(text, "--duration") == seconds


@pytest.mark.parametrize("text", ["0", "-1s", "8d", "ten", "1e3", "nan", "8000000", ""])
def test_seconds_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="--duration") as caught:
        parse_seconds(text, "--duration")
    assert "\n" not in str(caught.value)


def test_slo() -> None:
    assert parse_slo("ttft=500ms,tpot=50") == Slo(ttft_ms=500, tpot_ms=50)
    assert parse_slo(" itl = 0.2s , e2e=1m ") == Slo(itl_ms=200, e2e_ms=60_000)
    assert parse_slo("ttft=500ms,tpot=50").describe() == "ttft<=500ms,tpot<=50ms"
    assert Slo().describe() == "none" and Slo(e2e_ms=1).items() == [("e2e", 1)]


@pytest.mark.parametrize("text", ["", "ttft", "ttft=fast", "speed=5", "ttft=1,ttft=2", "ttft=0", "ttft=-5ms", ","])
def test_slo_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="--slo"):
        parse_slo(text)


def test_sweep() -> None:
    assert parse_sweep("concurrency=16,1,4,4") == Sweep("concurrency", (1.0, 4.0, 16.0))
    assert parse_sweep("rate=0.5,2") == Sweep("rate", (0.5, 2.0))
    assert parse_sweep(" auto ") == Sweep("rate", auto=True)


@pytest.mark.parametrize(
    "text",
    ["", "speed=1", "concurrency", "concurrency=1.5", "rate=a", "rate=0", "rate=inf", "rate=nan", "concurrency=5000",
     "rate=" + ",".join(str(i + 1) for i in range(MAX_SWEEP_POINTS + 1))],
)  # fmt: skip
def test_sweep_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="--sweep"):
        parse_sweep(text)


def test_load_describes_itself() -> None:
    assert Load(concurrency=8).describe() == "concurrency 8" and not Load(concurrency=8).open_loop
    assert Load(concurrency=None, rate=4).describe() == "rate 4/s (poisson)" and Load(rate=4).open_loop
    assert Load(rate=2.5, arrival="gamma", burstiness=0.5).describe() == "rate 2.5/s (gamma 0.5)"
