"""The routing feed on the web and the command line (issue 33 part 1): /route and /route.json from a real SQLite
store, its LiteLLM and OpenRouter exports (the documented schemas; LiteLLM's own Router where it is installed),
keys only as variable references, bounded parameters answered 400 in one line, hostile names escaped."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import markupsafe
import pytest
from starlette.testclient import TestClient

from tests.store.test_windows import NOW, put
from tests.webkit import EVIL, SECRET, SECRET_ENV
from tokenpace.board.route_export import LITELLM_PREFIX, OPENROUTER_SLUGS
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.config.prices import Price
from tokenpace.store.database import open_store
from tokenpace.web import create_app

GROQ = Endpoint("groq", "llama-3.1-8b-instant", "https://api.groq.com/openai/v1", api_key_env=SECRET_ENV)
CLAUDE = Endpoint("anthropic", "llama-3.1-8b-instant", "https://api.anthropic.com/v1", protocol="anthropic",
                  api_key_env="ANTHROPIC_API_KEY", headers=(("x-team", "t"),))  # fmt: skip
LOCAL = Endpoint("llama.cpp", "llama-3.1-8b-instant", "http://127.0.0.1:8080/v1")  # no key, no slug
HOSTILE = Endpoint(f"evil{EVIL}", "llama-3.1-8b-instant", "http://evil.invalid/v1")
MODEL = "llama-3.1-8b-instant"


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    with open_store(str(tmp_path / "route.db")) as store:
        for i in range(8):
            at = NOW - timedelta(minutes=1 + 3 * i)
            put(store, GROQ, at, ttft_ms=200, gap_ms=2)
            put(store, CLAUDE, at, ttft_ms=100, gap_ms=10)
            put(store, LOCAL, at, ttft_ms=20, gap_ms=5)
            put(store, HOSTILE, at, ttft_ms=50, gap_ms=1)
        store.flush()
        prices = {("anthropic", "default", MODEL): Price(1.0, 5.0)}  # blended (3 + 5) / 4 = $2
        config = Config(endpoints=(GROQ, CLAUDE, LOCAL, HOSTILE), source="route.toml", prices=prices)
        with TestClient(create_app(store, config, now=lambda: NOW)) as c:
            yield c


def get_json(client: TestClient, query: str) -> Any:
    response = client.get(f"/route.json?model={MODEL}&{query}")
    assert response.status_code == 200, response.text
    assert SECRET not in response.text
    return response.json()


def test_route_json_ranks_the_models_endpoints_with_now_windows(client: TestClient) -> None:
    data = get_json(client, "by=speed")
    assert [e["provider"] for e in data["entries"]] == [f"evil{EVIL}", "groq", "llama.cpp", "anthropic"]
    first = data["entries"][0]
    assert first["rank"] == 1 and first["in"] and first["window"]["name"] == "30m" and first["n"] == 8
    assert first["windows"] == [{"name": "30m", "n": 8}, {"name": "1h", "n": 8}, {"name": "72h", "n": 8}]
    assert data["goal"] == {"model": MODEL, "by": "speed", "p": 50, "workload": "1k", "region": "all",
                            "max_price": None, "min_success": 0.9, "min_samples": 3, "needed": 3}  # fmt: skip
    quickest = get_json(client, "by=ttft")["entries"][0]
    assert quickest["name"] == f"llama.cpp/{MODEL}" and quickest["reason"].startswith("in: P50 TTFT 20 ms")


def check_litellm(model_list: Any) -> None:
    """LiteLLM's documented Router schema: a list of {model_name, litellm_params: {model, ...}}, the model as
    PROVIDER/ID; a key only as os.environ/VAR."""
    assert isinstance(model_list, list) and model_list
    for d in model_list:
        assert set(d) == {"model_name", "litellm_params"} and d["model_name"] == MODEL
        params = d["litellm_params"]
        assert set(params) <= {"model", "api_base", "api_key", "order"}
        prefix, _, model = params["model"].partition("/")
        assert prefix in LITELLM_PREFIX.values() and model == MODEL
        assert params["api_base"].startswith(("http://", "https://")) and isinstance(params["order"], int)
        assert "api_key" not in params or params["api_key"].startswith("os.environ/")


def test_litellm_export_is_a_router_model_list_with_keys_as_references(client: TestClient) -> None:
    data = get_json(client, "by=speed&format=litellm")
    check_litellm(data["model_list"])
    by_model = {d["litellm_params"]["api_base"]: d["litellm_params"] for d in data["model_list"]}
    assert by_model["https://api.groq.com/openai/v1"]["api_key"] == f"os.environ/{SECRET_ENV}"
    assert by_model["https://api.anthropic.com"]["model"] == f"anthropic/{MODEL}"  # LiteLLM adds /v1/messages
    assert "api_key" not in by_model["http://127.0.0.1:8080/v1"]
    assert [p["order"] for p in by_model.values()] == [1, 2, 3, 4]
    assert any("without its configured headers" in x["why"] for x in data["left_out"])


def test_litellm_accepts_the_export_where_it_is_installed(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    litellm = pytest.importorskip("litellm")  # not a dependency: checked where installed
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
    model_list = get_json(client, "by=speed&format=litellm")["model_list"]
    router = litellm.Router(model_list=model_list)
    picked = router.get_available_deployment(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert picked["litellm_params"]["order"] == 1


def test_openrouter_export_orders_provider_slugs(client: TestClient) -> None:
    data = get_json(client, "by=ttft&format=openrouter")
    assert data["provider"] == {"order": ["anthropic", "groq"], "allow_fallbacks": True}
    assert set(data["provider"]["order"]) <= set(OPENROUTER_SLUGS.values())
    assert {x["name"] for x in data["left_out"]} == {f"llama.cpp/{MODEL}", f"evil{EVIL}/{MODEL}"}


def test_max_price_and_min_success_leave_endpoints_out_with_why(client: TestClient) -> None:
    data = get_json(client, "by=speed&max_price=0.01")
    assert not any(e["in"] for e in data["entries"])
    assert {o["code"] for e in data["entries"] for o in e["out"]} <= {"max_price", "unpriced"}
    anthropic = next(e for e in data["entries"] if e["provider"] == "anthropic")
    assert anthropic["out"][0]["code"] == "max_price"  # $2 blended
    local = next(e for e in data["entries"] if e["provider"] == "llama.cpp")
    assert [o["code"] for o in local["out"]] == ["unpriced"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("model=", "model '': give a model's name"),
        (f"model={'m' * 300}", "model 'mmmm"),
        (f"model={MODEL}&by=vibes", "by 'vibes': use one of speed, ttft, e2e, price"),
        (f"model={MODEL}&p=99", "p '99': use one of 50, 90"),
        (f"model={MODEL}&max_price={'9' * 5000}", "max_price '99999"),
        (f"model={MODEL}&min_success=-0.5", "min_success '-0.5': use a number from 0 to 1"),
        (f"model={MODEL}&format=yaml", "format 'yaml': use one of json, litellm, openrouter"),
        (f"model={MODEL}&region=mars", "region 'mars': use one of"),
        (f"model={MODEL}&by=%00", "a NUL character"),
    ],
)
def test_bad_parameters_are_one_line_400s(client: TestClient, query: str, message: str) -> None:
    for path in ("/route.json", "/route"):
        response = client.get(f"{path}?{query}")
        assert response.status_code == 400, response.text
        text = response.json()["error"] if path.endswith(".json") else response.text
        assert (message if path.endswith(".json") else str(markupsafe.escape(message))) in text
        if path.endswith(".json"):
            assert "\n" not in text and len(text) < 300


def test_an_unknown_model_is_a_404(client: TestClient) -> None:
    response = client.get(f"/route?model={EVIL}")
    assert response.status_code == 404 and EVIL not in response.text and "&lt;script&gt;" in response.text


def test_the_html_page_escapes_names_and_shows_ranks_and_exports(client: TestClient) -> None:
    response = client.get(f"/route?model={MODEL}&by=ttft")
    assert response.status_code == 200 and SECRET not in response.text
    assert EVIL not in response.text and "evil&lt;script&gt;alert(1)&lt;/script&gt;" in response.text
    assert "os.environ/" + SECRET_ENV in response.text and '"order"' in response.text
    assert 'href="/route.json?model=llama-3.1-8b-instant&amp;by=ttft' in response.text


def test_the_model_page_links_to_its_route(client: TestClient) -> None:
    page = client.get(f"/model/{MODEL}")
    assert page.status_code == 200
    assert 'href="/route?model=llama-3.1-8b&amp;workload=1k"' in page.text  # the canonical name (config.models)
    routed = client.get("/route.json?model=llama-3.1-8b&workload=1k").json()
    assert len(routed["entries"]) == 4 and {e["model"] for e in routed["entries"]} == {MODEL}


def test_a_route_is_kept_per_goal_and_format_and_ignores_other_parameters(client: TestClient) -> None:
    """A flood of one route costs one read until the next sample: kept under its own parameters (a LiteLLM export
    and the feed are two answers), while a parameter the feed does not read makes no new page to keep."""
    pages = client.app.state.site.pages  # type: ignore[attr-defined]
    feed = client.get(f"/route.json?model={MODEL}&junk=1").json()
    export = client.get(f"/route.json?model={MODEL}&format=litellm&junk=2").json()
    assert "entries" in feed and "model_list" in export
    assert pages.peek((b"/route.json", (("model", MODEL),))) is not None
    assert pages.peek((b"/route.json", (("format", "litellm"), ("model", MODEL)))) is not None
    assert len(pages._items) == 2
