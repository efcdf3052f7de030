"""Each model on its own protocol: a config's ``protocols`` and ``protocol``, a gateway preset's endpoint table and
rules, which wins, the mistakes, and what else a preset fills in (its plans' billing, its headers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.config.test_endpoints import write
from tokenpace.config.endpoints import Config, read_config
from tokenpace.config.gateways import OPENCODE_GO, OPENCODE_ZEN
from tokenpace.config.headers import FRESH_VALUE, merged_headers
from tokenpace.config.presets import PRESETS, served_elsewhere
from tokenpace.errors import ConfigError


def protocols(text: str, tmp_path: Path) -> dict[str, str]:
    return {e.name: e.protocol for e in read_config(write(tmp_path, text)).endpoints}


def test_a_preset_named_alone_speaks_each_models_protocol_from_its_endpoint_table() -> None:
    refs = (
        "opencode-zen/kimi-k2.5", "opencode-zen/claude-haiku-4-5", "opencode-zen/gpt-5.4",
        "opencode-zen/gemini-3-flash", "opencode-go/glm-5.1", "opencode-go/minimax-m2.7", "opencode-go/gpt-5.6-luna",
    )  # fmt: skip
    found = {ref: Config().find(ref)[0].protocol for ref in refs}
    assert found == {
        "opencode-zen/kimi-k2.5": "openai-chat", "opencode-zen/claude-haiku-4-5": "anthropic",
        "opencode-zen/gpt-5.4": "openai-responses", "opencode-zen/gemini-3-flash": "gemini",
        "opencode-go/glm-5.1": "openai-chat", "opencode-go/minimax-m2.7": "anthropic",
        "opencode-go/gpt-5.6-luna": "openai-responses",
    }  # fmt: skip
    go = Config().find("opencode-go/glm-5.1")[0]
    assert (go.base_url, go.api_key_env) == ("https://opencode.ai/zen/go/v1", "OPENCODE_API_KEY")


def test_models_the_table_does_not_list_follow_its_rules_then_the_presets_protocol() -> None:
    zen, go = PRESETS["opencode-zen"], PRESETS["opencode-go"]
    assert [zen.protocol_of(m) for m in ("claude-opus-9", "gpt-7", "gemini-9-pro", "qwen4-max", "kimi-k2")] == [
        "anthropic", "openai-responses", "gemini", "anthropic", "openai-chat",
    ]  # fmt: skip
    assert [go.protocol_of(m) for m in ("minimax-m9", "qwen9-plus", "gpt-9-luna", "glm-9")] == [
        "anthropic", "anthropic", "openai-responses", "openai-chat",
    ]  # fmt: skip
    assert PRESETS["groq"].protocol_of("anything") == "openai-chat"  # no table: the preset's one protocol


def test_the_tables_are_dated_sourced_and_list_the_three_apis() -> None:
    for routes, page in ((OPENCODE_ZEN, "zen"), (OPENCODE_GO, "go")):
        assert routes.source == f"https://opencode.ai/docs/{page}/#endpoints" and routes.as_of.year >= 2026
        assert {"openai-chat", "anthropic", "openai-responses"} <= set(routes.models.values())
    assert OPENCODE_ZEN.models["claude-haiku-4-5"] == "anthropic" and OPENCODE_ZEN.models["kimi-k2.5"] == "openai-chat"


def test_a_plans_protocols_win_then_the_providers_then_protocol_then_the_preset(tmp_path: Path) -> None:
    text = (
        "[providers.opencode-zen]\n"
        'protocols = { "kimi-k2.5" = "anthropic", "glm-5" = "openai-responses" }\n'
        "[providers.opencode-zen.plans.a]\n"
        'models = ["kimi-k2.5", "glm-5", "claude-haiku-4-5"]\n'
        'protocols = { "kimi-k2.5" = "gemini" }\n'
        "[providers.opencode-zen.plans.b]\n"
        'models = ["kimi-k2.5", "claude-haiku-4-5", "gpt-5"]\n'
        'protocol = "openai-completions"\n'
    )
    assert protocols(text, tmp_path) == {
        "opencode-zen:a/kimi-k2.5": "gemini",  # the plan's own entry
        "opencode-zen:a/glm-5": "openai-responses",  # the provider's entry
        "opencode-zen:a/claude-haiku-4-5": "anthropic",  # the endpoint table
        "opencode-zen:b/kimi-k2.5": "anthropic",  # the provider's entry over the plan's protocol
        "opencode-zen:b/claude-haiku-4-5": "openai-completions",  # the plan's protocol over the table
        "opencode-zen:b/gpt-5": "openai-completions",
    }


def test_a_providers_protocol_wins_over_its_presets_table(tmp_path: Path) -> None:
    text = '[providers.zen]\npreset = "opencode-zen"\nprotocol = "anthropic"\nmodels = ["kimi-k2.5"]\n'
    assert protocols(text, tmp_path) == {"zen/kimi-k2.5": "anthropic"}
    table = '[providers.zen]\npreset = "opencode-zen"\nmodels = ["kimi-k2.5", "gpt-5"]\n'
    assert protocols(table, tmp_path) == {"zen/kimi-k2.5": "openai-chat", "zen/gpt-5": "openai-responses"}
    plain = '[providers.mine]\nbase_url = "http://127.0.0.1:9"\nmodels = ["m", "n"]\nprotocols = { n = "ollama" }\n'
    assert protocols(plain, tmp_path) == {"mine/m": "openai-chat", "mine/n": "ollama"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[providers.groq]\nmodels = ["m"]\nprotocols = { other = "anthropic" }\n',
            r'providers\.groq\.protocols: "other" is not one of the models listed here \(m\)',
        ),
        (
            '[providers.groq.plans.a]\nmodels = ["m"]\nprotocols = { n = "anthropic" }\n'
            '[providers.groq.plans.b]\nmodels = ["n"]\n',
            r'providers\.groq\.plans\.a\.protocols: "n" is not one of the models listed here \(m\)',
        ),
        ('[providers.groq]\nmodels = ["m"]\nprotocols = { m = "smoke-signals" }\n', r"providers\.groq\.protocols\.m"),
    ],
)
def test_protocols_mistakes_are_one_line_naming_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        read_config(write(tmp_path, text))


def test_a_presets_plans_set_the_billing_a_config_leaves_out(tmp_path: Path) -> None:
    text = (
        "[providers.ollama-cloud.plans.free]\nmodels = [\"gpt-oss:20b\"]\n"
        "[providers.ollama-cloud.plans.pro]\nmodels = [\"gpt-oss:120b\"]\nbilling = \"uncapped\"\n"
        "[providers.ollama-cloud.plans.team]\nmodels = [\"gpt-oss:120b\"]\n"
        "[providers.opencode-go]\nmodels = [\"glm-5.1\"]\n"
    )  # fmt: skip
    cfg = read_config(write(tmp_path, text))
    billing = {(p, plan): s.billing for (p, plan), s in cfg.plans.items()}
    assert billing == {
        ("ollama-cloud", "free"): "capped", ("ollama-cloud", "pro"): "uncapped", ("ollama-cloud", "team"): "per-token",
        ("opencode-go", "default"): "capped",
    }  # fmt: skip
    assert cfg.plans[("ollama-cloud", "free")].every_s == 3600  # a capped plan's cadence
    (free,) = Config().find("ollama-cloud:free/gpt-oss:20b")  # no config: the preset's plan still says
    assert Config().plan_of(free).billing == "capped"
    provider_wide = '[providers.ollama-cloud]\nbilling = "uncapped"\nplan = "free"\nmodels = ["gpt-oss:20b"]\n'
    assert read_config(write(tmp_path, provider_wide)).plans[("ollama-cloud", "free")].billing == "uncapped"


def test_go_sends_a_fresh_session_header_that_a_config_may_override(tmp_path: Path) -> None:
    assert Config().find("opencode-go/glm-5.1")[0].headers == (("x-opencode-session", FRESH_VALUE),)
    assert Config().find("opencode-zen/glm-5.1")[0].headers == ()
    headers = '{ "X-OpenCode-Session" = "mine", "X-Team" = "a" }'
    text = f'[providers.opencode-go]\nmodels = ["glm-5.1"]\nheaders = {headers}\n'
    (e,) = read_config(write(tmp_path, text)).endpoints
    assert e.headers == (("X-OpenCode-Session", "mine"), ("X-Team", "a"))  # one session header: the config's


def test_merged_headers_compare_names_without_case() -> None:
    assert merged_headers((("A", "1"), ("b", "2")), {"B": "3"}, {"c": "4"}) == (("A", "1"), ("B", "3"), ("c", "4"))


def test_served_elsewhere_names_the_right_protocol_only_where_the_preset_knows_another() -> None:
    note = served_elsewhere("opencode-zen", "kimi-k2.5", "anthropic")
    assert note == (
        f"opencode-zen serves kimi-k2.5 on openai-chat, not anthropic (its endpoint table of "
        f"{OPENCODE_ZEN.as_of.isoformat()})"
    )
    assert "its rule for models its endpoint table lacks" in str(served_elsewhere("opencode-zen", "claude-x", "gemini"))
    assert served_elsewhere("opencode-zen", "kimi-k2.5", "openai-chat") is None  # asked where it is served
    assert served_elsewhere("groq", "m", "anthropic") is None  # no table
    assert served_elsewhere("mine", "kimi-k2.5", "anthropic") is None  # no such preset
