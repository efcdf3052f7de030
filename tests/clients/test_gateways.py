"""Gateways that serve each model on its own API, against simulators at their published paths: every model of a
preset's endpoint table reaches its own protocol, Go's session header is new in every request, and a model asked
on the wrong protocol fails as a sample that names the right one."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from urllib.parse import urlsplit

import pytest

from tests.conftest import SimThread
from tests.load.test_engine import Tiny
from tokenpace.clients import protocol_for
from tokenpace.clients.transport import Timeouts
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.config.presets import PRESETS, Preset
from tokenpace.config.traffic import Load
from tokenpace.load.engine import RunOptions, run_load
from tokenpace.load.figures import Done
from tokenpace.load.interpreter import event_loop_factory
from tokenpace.load.send import misrouted
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.prompts.prompt import Message, Prompt
from tokenpace.sim import Scenario, Simulator

KEY = "sk-gateway-test-key"
QUICK = Scenario(ttft_ms=0, tokens_per_s=5000, output_tokens=3)
OPTIONS = RunOptions(timeouts=Timeouts(connect=5, first_token=20, idle=20, total=60), warm_connections=False)
GATEWAYS = [p for p in PRESETS.values() if p.routes is not None]


def gateway_sim(pre: Preset) -> Simulator:
    """A simulator at the gateway's own paths (its base URL's, host aside), serving each model of its endpoint
    table on that model's protocol only, and only to requests that bring the key in their protocol's header."""
    assert pre.routes is not None
    root = urlsplit(pre.base_url).path.removesuffix("/v1")
    return Simulator(QUICK, api_key=KEY, root=root, served_on=dict(pre.routes.models))


def measure(endpoints: list[Endpoint]) -> list[Done]:
    async def each() -> list[Done]:
        done = []
        for e in endpoints:
            done += (await run_load(e, Tiny(), Load(concurrency=1, requests=1), OPTIONS)).done
        return done

    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        return runner.run(each())


@pytest.mark.parametrize("pre", GATEWAYS, ids=[p.name for p in GATEWAYS])
def test_every_model_of_a_gateways_table_reaches_its_own_protocol(pre: Preset, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENCODE_API_KEY", KEY)
    assert pre.routes is not None and pre.api_key_env == "OPENCODE_API_KEY"
    models = [*pre.routes.models, "claude-unlisted", "gpt-unlisted", "some-open-model"]  # and the rules' models
    with SimThread(gateway_sim(pre)) as served:
        assert urlsplit(served.url).path == urlsplit(pre.base_url).path  # the gateway's own path
        done = measure([dataclasses.replace(Config().find(f"{pre.name}/{m}")[0], base_url=served.url) for m in models])
    simulator = served.simulator
    failed = {d.sample.endpoint.model: d.sample.error_message for d in done if not d.sample.ok}
    assert failed == {} and len(done) == len(models)
    assert len(simulator.truth) == len(models)
    used = {d.sample.endpoint.model: d.sample.endpoint.protocol for d in done}
    assert {m: used[m] for m in pre.routes.models} == dict(pre.routes.models)


def test_go_sends_a_new_session_in_every_request_and_zen_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENCODE_API_KEY", KEY)
    prompt = Prompt((Message("user", "hi"),), 1, 5, "f" * 16)
    sessions = []
    for ref in ("opencode-go/glm-5.1", "opencode-go/glm-5.1", "opencode-go/minimax-m2.7"):
        (e,) = Config().find(ref)
        req = protocol_for(e.protocol).request(e, prompt)
        (session,) = [v for k, v in req.headers.items() if k.lower() == "x-opencode-session"]
        assert re.fullmatch(r"[0-9a-f]{32}", session) and session not in req.secrets
        sessions.append(session)
    assert len(set(sessions)) == 3
    (zen,) = Config().find("opencode-zen/glm-5.1")
    assert not any(k.lower() == "x-opencode-session" for k in protocol_for(zen.protocol).request(zen, prompt).headers)


def test_a_model_asked_on_the_wrong_protocol_fails_as_a_sample_naming_the_right_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENCODE_API_KEY", KEY)
    zen = PRESETS["opencode-zen"]
    (found,) = Config().find("opencode-zen/kimi-k2.5")
    with SimThread(gateway_sim(zen)) as served:
        (done,) = measure([dataclasses.replace(found, base_url=served.url, protocol="anthropic")])  # as a config may
    assert zen.routes is not None and not done.sample.ok
    assert (done.sample.error_kind, done.sample.http_status) == (ErrorKind.HTTP_ERROR, 404)
    assert done.sample.error_message == (
        f"HTTP 404 on /messages: opencode-zen serves kimi-k2.5 on openai-chat, not anthropic (its endpoint table "
        f"of {zen.routes.as_of.isoformat()}); the server said: Model kimi-k2.5 is not supported on this endpoint."
    )


@pytest.mark.parametrize(
    ("failure", "rewritten"),
    [
        (Failure(ErrorKind.HTTP_ERROR, "HTTP 404: Not Found", 404), True),
        (Failure(ErrorKind.HTTP_ERROR, "HTTP 400: this model is Not Supported here", 400), True),
        (Failure(ErrorKind.HTTP_ERROR, "HTTP 400: max_tokens too large", 400), False),
        (Failure(ErrorKind.HTTP_ERROR, "HTTP 500: not supported", 500), False),
        (Failure(ErrorKind.RATE_LIMITED, "HTTP 429: slow down", 429), False),
        (Failure(ErrorKind.CONNECT_ERROR, "cannot connect"), False),
        (None, False),
    ],
)
def test_only_a_refusal_of_a_model_the_table_puts_elsewhere_is_told_where(
    failure: Failure | None, rewritten: bool
) -> None:
    wrong = Endpoint("opencode-zen", "kimi-k2.5", "https://opencode.ai/zen/v1", protocol="anthropic")
    told = misrouted(wrong, "https://opencode.ai/zen/v1/messages", failure)
    assert (told != failure) == rewritten
    if rewritten:
        assert failure is not None and told is not None and told.http_status == failure.http_status
        assert told.message.startswith(f"HTTP {failure.http_status} on /messages: opencode-zen serves kimi-k2.5 on ")
    right = dataclasses.replace(wrong, protocol="openai-chat")
    assert misrouted(right, "https://opencode.ai/zen/v1/chat/completions", failure) == failure
    elsewhere = dataclasses.replace(wrong, provider="mine")  # no preset of that name: nothing known to say
    assert misrouted(elsewhere, "https://opencode.ai/zen/v1/messages", failure) == failure
