"""The [alerts] table: webhooks by URL or by variable, one line per mistake, and never the URL itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokenpace.config.alerts import MAX_URL, MAX_WEBHOOKS, Webhook, host
from tokenpace.config.endpoints import read_config
from tokenpace.errors import ConfigError

PROVIDER = "[providers.demo]\nsimulate = { ttft_ms = 1 }\n"
SECRET_URL = "https://hooks.slack.com/services/T000/B000/sekrit-token-123"  # noqa: S105 (a made-up one)


def test_webhooks_by_url_and_by_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = f'[alerts]\nboard_url = "https://speed.example.com/"\n[[alerts.webhooks]]\nurl = "{SECRET_URL}"\n'
    cfg = read_config(_write(tmp_path, text + '[[alerts.webhooks]]\nurl_env = "TP_TEST_HOOK"\n'))
    first, second = cfg.alerts.webhooks
    assert first.target() == SECRET_URL and cfg.alerts.board_url == "https://speed.example.com"
    assert SECRET_URL not in repr(cfg.alerts)
    monkeypatch.setenv("TP_TEST_HOOK", "http://127.0.0.1:9/hook")
    assert second.target() == "http://127.0.0.1:9/hook"
    monkeypatch.delenv("TP_TEST_HOOK")
    with pytest.raises(ConfigError, match=r"^alerts\.webhooks: environment variable TP_TEST_HOOK is not set$"):
        second.target()


def test_no_alerts_table_means_no_webhooks(tmp_path: Path) -> None:
    assert read_config(_write(tmp_path, "")).alerts.webhooks == ()


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tokenpace.toml"
    path.write_text(PROVIDER + text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[alerts.webhooks]]\nurl = "ftp://x/sekrit-token-123"\n', r"alerts.webhooks\[0\].url: not an http\(s\) URL"),
        ('[[alerts.webhooks]]\nurl = "sekrit-token-123"\n', r"alerts.webhooks\[0\].url: not an http\(s\) URL"),
        (f'[[alerts.webhooks]]\nurl = "https://x/{"a" * MAX_URL}sekrit-token-123"\n', r"longer than 2048"),
        ("[[alerts.webhooks]]\n", "give url or url_env"),
        (f'[[alerts.webhooks]]\nurl = "{SECRET_URL}"\nurl_env = "X"\n', "give url or url_env"),
        ('[[alerts.webhooks]]\nurl_env = "X"\nheader = 1\n', "alerts.webhooks\\[0\\].header: unknown key"),
        ('[alerts]\nboard_url = "nope sekrit-token-123"\n', r"alerts.board_url: not an http\(s\) URL"),
        ("[alerts]\nwebhooks = [" + '{url_env = "X"},' * (MAX_WEBHOOKS + 1) + "]\n", "at most 20 items"),
    ],
)
def test_mistakes_are_one_line_naming_the_key_and_never_the_url(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        read_config(_write(tmp_path, text))
    assert "sekrit" not in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith(str(tmp_path / "tokenpace.toml") + ": alerts.")


def test_a_bad_url_in_the_variable_is_named_by_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TP_TEST_HOOK", "mailto:sekrit-token-123")
    with pytest.raises(ConfigError, match="the URL in TP_TEST_HOOK is not an http") as err:
        Webhook(url_env="TP_TEST_HOOK").target()
    assert "sekrit" not in str(err.value)


def test_host_is_all_that_is_shown() -> None:
    assert host(SECRET_URL) == "hooks.slack.com"
