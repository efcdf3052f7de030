"""The ``[alerts]`` table: where ``tokenpace serve`` sends the changes it finds (board/changes.py)::

    [alerts]
    board_url = "https://speed.example.com"     # optional: links in each message
    [[alerts.webhooks]]
    url_env = "SLACK_WEBHOOK_URL"                # the variable holding the URL (Slack's URLs are secrets)
    [[alerts.webhooks]]
    url = "https://hooks.example.com/tokenpace"  # or the URL itself

A webhook URL may be a credential (Slack's and Discord's are), so it is never shown: errors name the key, logs
and pages only the host. It is read from the environment when serve starts, as API keys are.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pydantic

from tokenpace.errors import ConfigError

MAX_URL = 2048  # longer is no webhook; bounded so a hostile file cannot make every request huge
MAX_WEBHOOKS = 20


def check_url(url: str) -> str:
    """An http(s) URL with a host (ValueError otherwise, which never repeats the URL: it may hold a secret)."""
    if len(url) > MAX_URL:
        raise ValueError(f"longer than {MAX_URL} characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or any(c in url for c in "\r\n\0 "):
        raise ValueError('not an http(s) URL; give one such as "https://hooks.example.com/..."')
    return url


def host(url: str) -> str:
    """What logs and pages may say about a webhook: its host, never its path or query (where secrets live)."""
    return urlsplit(url).hostname or "?"


class _Webhook(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)
    url: str | None = None
    url_env: str | None = None

    @pydantic.field_validator("url")
    @classmethod
    def _url(cls, url: str | None) -> str | None:
        return None if url is None else check_url(url)

    @pydantic.model_validator(mode="after")
    def _one(self) -> _Webhook:
        if (self.url is None) == (self.url_env is None):
            raise ValueError("give url or url_env (the variable that holds it), one of them")
        return self


class AlertsTable(pydantic.BaseModel):
    """The ``[alerts]`` table as written."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)
    webhooks: list[_Webhook] = pydantic.Field(default=[], max_length=MAX_WEBHOOKS)
    board_url: str | None = None

    @pydantic.field_validator("board_url")
    @classmethod
    def _board(cls, url: str | None) -> str | None:
        return None if url is None else check_url(url).rstrip("/")


@dataclass(frozen=True, slots=True)
class Webhook:
    """One webhook: its URL, or the variable that holds it."""

    url: str | None = field(default=None, repr=False)  # may be a credential
    url_env: str | None = None

    def target(self) -> str:
        """The URL, from the environment where the config names a variable; one ConfigError line otherwise."""
        if self.url is not None:
            return self.url
        value = os.environ.get(self.url_env or "")
        if not value:
            raise ConfigError(f"alerts.webhooks: environment variable {self.url_env} is not set")
        try:
            return check_url(value)
        except ValueError as exc:
            raise ConfigError(f"alerts.webhooks: the URL in {self.url_env} is {exc}") from None


@dataclass(frozen=True, slots=True)
class Alerts:
    webhooks: tuple[Webhook, ...] = ()
    board_url: str | None = None


def alerts(table: AlertsTable) -> Alerts:
    return Alerts(tuple(Webhook(w.url, w.url_env) for w in table.webhooks), table.board_url)
