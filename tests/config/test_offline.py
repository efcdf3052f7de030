"""docs/tokendyno.toml (TokenDyno's board as a config) and the offline form serve --simulate runs it in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.config.test_endpoints import A, assert_one_line_error, write
from tokenpace import sim
from tokenpace.board import numbers
from tokenpace.board.platforms import cadence_line, platforms
from tokenpace.config.endpoints import read_config
from tokenpace.config.offline import DEFAULT_SPEEDUP, offline
from tokenpace.config.settings import Budget
from tokenpace.errors import ConfigError
from tokenpace.schedule import cadence

TOKENDYNO = Path(__file__).resolve().parents[2] / "docs" / "tokendyno.toml"
# TokenDyno's published top ten (tok/s), in its order: (plan, Ollama's model id, tokens/s).
TOP_TEN = (
    ("free", "gpt-oss:120b", 282.7),
    ("pro", "gpt-oss:120b", 230.3),
    ("pro", "deepseek-v4-flash", 174.2),
    ("pro", "nemotron-3-nano:30b", 156.2),
    ("free", "nemotron-3-nano:30b", 152.9),
    ("pro", "gemma4:31b", 140.4),
    ("pro", "kimi-k2.7-code", 137.1),
    ("pro", "deepseek-v4-pro", 132.3),
    ("free", "gpt-oss:20b", 127.5),
    ("free", "gemma4:31b", 119.7),
)
HOUR = 3600.0


def test_tokendyno_config_declares_the_four_platforms_the_top_ten_and_their_cadences() -> None:
    cfg = read_config(TOKENDYNO)
    jobs = cadence.jobs(cfg, cfg.endpoints)
    found = {p.name: p for p in platforms(cfg, jobs)}
    assert list(found) == ["ollama-cloud:free", "ollama-cloud:pro", "opencode-zen", "opencode-go"]
    assert [(found[n].every_s, found[n].source) for n in ("ollama-cloud:free", "ollama-cloud:pro", "opencode-zen")] == [
        (HOUR, "billing"), (HOUR, "billing"), (4 * HOUR, "billing")
    ]  # fmt: skip
    go = found["opencode-go"]
    assert go.source == "limits" and go.every_s > HOUR and go.limits == ("$12 per 5h", "$30 per 7d", "$60 per 30d")
    assert cfg.plans["opencode-go", "default"].limits == tuple(
        Budget(dollars=d, window_s=w * HOUR, share=0.1) for d, w in ((12, 5), (30, 7 * 24), (60, 30 * 24))
    )
    names = {e.name for e in cfg.endpoints}
    assert {f"ollama-cloud:{plan}/{model}" for plan, model, _ in TOP_TEN} <= names
    for plan, model, speed in TOP_TEN:  # the offline figure is the published one
        assert cfg.offline["ollama-cloud", plan, model]["tokens_per_s"] == speed
    for e in cfg.endpoints:  # every Go model priced, dated and sourced: its limits are in dollars
        if e.provider == "opencode-go":
            price = cfg.price_of(e.provider, e.plan, e.model)
            assert price is not None and price.as_of is not None and price.source
    protocols = {e.name: e.protocol for e in cfg.endpoints}  # each model on its gateway's table's API
    assert protocols["opencode-zen/qwen3.6-plus"] == protocols["opencode-go/minimax-m2.7"] == "anthropic"
    assert protocols["opencode-zen/kimi-k2.7-code"] == protocols["opencode-go/glm-5.1"] == "openai-chat"
    assert {protocols[f"ollama-cloud:{p}/{m}"] for p, m, _ in TOP_TEN} == {"ollama"}
    assert cfg.about and "TokenDyno" in cfg.about
    readme = (TOKENDYNO.parents[1] / "README.md").read_text("utf-8")  # its table states the derived cadence
    assert f"| OpenCode Go | `opencode-go` | every {numbers.interval(go.every_s)}: the densest its limits" in readme


def test_offline_swaps_each_endpoint_for_a_keyless_stand_in_at_its_path_on_a_faster_clock() -> None:
    real = read_config(TOKENDYNO)
    cfg = offline(real)
    assert [e.name for e in cfg.endpoints] == [e.name for e in real.endpoints]
    assert all(e.simulated and e.api_key_env is None and e.base_url.startswith("simulated://") for e in cfg.endpoints)
    stands = sim.stand_ins(cfg)
    assert {key: s.root for key, s in stands.items()} == {
        "ollama-cloud:free": "", "ollama-cloud:pro": "", "opencode-zen": "/zen", "opencode-go": "/zen/go"
    }  # fmt: skip
    assert stands["opencode-go"].served_on["minimax-m2.7"] == "anthropic"
    assert stands["ollama-cloud:free"].models["gpt-oss:120b"].tokens_per_s == 282.7
    assert stands["ollama-cloud:pro"].models["gpt-oss:120b"].tokens_per_s == 230.3  # each plan its own
    slow, fast = cadence.jobs(real, real.endpoints), cadence.jobs(cfg, cfg.endpoints)
    for a, b in zip(slow, fast, strict=True):  # the same schedule, DEFAULT_SPEEDUP times faster
        assert b.every_s == pytest.approx(a.every_s / DEFAULT_SPEEDUP)
        assert [x.window_s for x in b.limits] == pytest.approx([x.window_s / DEFAULT_SPEEDUP for x in a.limits])
    lines = [cadence_line(p, cfg.speedup) for p in platforms(cfg, fast)]
    assert lines[0] == "ollama-cloud:free runs every 1 h, its billing's (capped); here every 10 s"
    with pytest.raises(ConfigError, match=r"--speedup 10000 runs ollama-cloud:free/gpt-oss:120b 1k every 0.36 s"):
        cadence.jobs(offline(real, 10_000), cfg.endpoints)  # an hour in 0.36 s: under the 1 s floor
    with pytest.raises(ConfigError, match=r"--speedup 0\.5: give a number from 1"):
        offline(real, 0.5)


def test_an_offline_entry_names_a_listed_model_and_scenario_fields(tmp_path: Path) -> None:
    message = r'providers\.a\.offline: "n" is not one of the models listed here \(m\)'
    assert_one_line_error(tmp_path, A + '[providers.a.offline]\n"n" = { tokens_per_s = 9 }\n', message)
    cfg = offline(read_config(write(tmp_path, A + '[providers.a.offline]\n"m" = { tokens_per_second = 9 }\n')))
    with pytest.raises(ConfigError, match=r'providers\.a\.offline\."m"\.tokens_per_second') as info:
        sim.stand_ins(cfg)
    assert "\n" not in str(info.value)
    both = '[providers.a.offline]\n"m" = { tokens_per_s = 9 }\n'
    both += '[providers.a.plans.p]\nmodels = ["m"]\noffline = { m = { tokens_per_s = 7 } }\n'
    plan = read_config(write(tmp_path, A + both))
    assert plan.offline == {("a", "default", "m"): {"tokens_per_s": 9}, ("a", "p", "m"): {"tokens_per_s": 7}}
