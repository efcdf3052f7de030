"""Prices and one name per model, in-process: simulated endpoints named as Groq and Cerebras name Llama 3.1 8B."""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import io
import json
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from tests.webkit import ONE_K, TIMEOUTS, Steady, charts, legend, marks
from tokenpace import sim
from tokenpace.board.cost import CSV_COLUMNS, blended
from tokenpace.cli import main
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.config.prices import Price
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.store.database import Store, open_store
from tokenpace.web import create_app
from tokenpace.web.paths import model_path

FRESH = Price(0.05, 0.08, 0.01, datetime.now(UTC).date() - timedelta(days=3), "https://groq.com/pricing")
OLD = Price(0.10, 0.10, None, date(2025, 10, 1), "https://www.cerebras.ai/pricing")


async def _fill(store: Store) -> Config:
    async with (
        sim.serve(sim.Simulator(sim.Scenario(ttft_ms=5, tokens_per_s=2000, output_tokens=12))) as a,
        sim.serve(sim.Simulator(sim.Scenario(ttft_ms=30, tokens_per_s=900, output_tokens=12))) as b,
    ):
        endpoints = (
            Endpoint("groq", "llama-3.1-8b-instant", a, simulated=True),
            Endpoint("cerebras", "llama3.1-8b", b, simulated=True),
            Endpoint("other", "org/Unrelated-Model", b, simulated=True),
        )
        plan = RunOptions(3, 1, TIMEOUTS, warm_connections=False, source="scheduled", command="test")
        await run_workload(list(endpoints), ONE_K, plan, Steady(store))
    store.flush()
    return Config(
        endpoints=endpoints,
        source="prices-test.toml",
        prices={("groq", "default", "llama-3.1-8b-instant"): FRESH, ("cerebras", "default", "llama3.1-8b"): OLD},
        quantization={("groq", "llama-3.1-8b-instant"): "fp16"},
    )


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("prices") / "p.db"


@pytest.fixture(scope="module")
def filled(db: Path) -> Iterator[tuple[Store, Config, datetime]]:
    """The store and config, and the app's clock stopped when the samples were stored: a module that ran past
    midnight UTC read "today's spend" on the day after."""
    with open_store(str(db)) as store:
        config = asyncio.run(_fill(store))
        yield store, config, datetime.now(UTC)


@pytest.fixture(scope="module")
def filled_at(filled: tuple[Store, Config, datetime]) -> datetime:
    return filled[2]


@pytest.fixture(scope="module")
def client(filled: tuple[Store, Config, datetime]) -> Iterator[TestClient]:
    store, config, at = filled
    with TestClient(create_app(store, config, now=lambda: at)) as c:
        yield c


def by_name(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in items}


def test_model_page_joins_two_providers_ids_of_one_model(client: TestClient) -> None:
    page = client.get("/model/llama-3.1-8b.json")
    assert page.status_code == 200, page.text
    data = page.json()
    assert data["model"] == "llama-3.1-8b" and data["context_window"] == 131072
    assert data["ids"] == ["llama-3.1-8b-instant", "llama3.1-8b"]
    rows = by_name(data["endpoints"])
    assert set(rows) == {"groq/llama-3.1-8b-instant", "cerebras/llama3.1-8b"}
    assert rows["groq/llama-3.1-8b-instant"]["quantization"] == "fp16"
    assert rows["cerebras/llama3.1-8b"]["quantization"] is None
    assert data["summary"]["providers"] == 2 and data["summary"]["model"] == "llama-3.1-8b"
    assert {name for name in data["series"]} == set(rows)  # both providers' samples are charted
    html = client.get("/model/llama-3.1-8b").text
    assert "131,072 tokens" in html and "groq/llama-3.1-8b-instant" in html and "cerebras/llama3.1-8b" in html


@pytest.mark.parametrize(
    "old", ["/model/llama-3.1-8b-instant", "/model/llama3.1-8b", "/model/meta-llama/Llama-3.1-8B-Instruct"]
)
def test_a_providers_id_leads_to_the_canonical_page(client: TestClient, old: str) -> None:
    twin = client.get(old + ".json")
    assert twin.status_code == 200
    assert twin.json()["model"] == "llama-3.1-8b" and len(twin.json()["endpoints"]) == 2
    page = client.get(old)
    assert page.status_code == 200 and "<h1>llama-3.1-8b</h1>" in page.text
    assert model_path("llama-3.1-8b", "json") in page.text  # its twin is the canonical one


def test_unknown_models_keep_their_own_name(client: TestClient) -> None:
    data = client.get("/model/org/Unrelated-Model.json").json()
    assert data["model"] == "org/Unrelated-Model" and [e["name"] for e in data["endpoints"]] == [
        "other/org/Unrelated-Model"
    ]
    assert client.get("/model/unrelated-model.json").status_code == 404  # no guessing


def test_board_json_carries_price_blend_cost_and_canonical_model(client: TestClient) -> None:
    board = client.get("/leaderboard.json").json()
    entries = by_name(board["entries"])
    groq = entries["groq/llama-3.1-8b-instant"]
    assert groq["model"] == "llama-3.1-8b-instant" and groq["canonical_model"] == "llama-3.1-8b"
    assert groq["price"]["input"] == 0.05 and groq["price"]["stale"] is False and groq["price"]["age_days"] == 3
    assert groq["blended_price"] == pytest.approx(blended(FRESH))
    tokens_in, tokens_out = groq["typical_input_tokens"], groq["typical_output_tokens"]
    assert 500 < tokens_in < 2000 and 0 < tokens_out < 100  # the 1k workload, 12 tokens asked
    assert groq["cost_per_request"] == pytest.approx((tokens_in * 0.05 + tokens_out * 0.08) / 1e6)
    assert entries["cerebras/llama3.1-8b"]["price"]["stale"] is True  # read more than 90 days ago
    other = entries["other/org/Unrelated-Model"]
    assert other["price"] is None and other["cost_per_request"] is None
    assert other["canonical_model"] == "org/Unrelated-Model"
    models = {m["model"]: m for m in board["models"]}
    assert models["llama-3.1-8b"]["providers"] == 2 and "llama-3.1-8b-instant" not in models


def test_board_page_shows_price_cost_canonical_name_and_stale_prices(client: TestClient) -> None:
    page = client.get("/").text
    assert "= llama-3.1-8b" in page and 'href="/model/llama-3~2E1-8b"' in page
    assert "$0.0575" in page  # groq's blended price, (3 * 0.05 + 0.08) / 4
    assert page.count("may be out of date") == 1  # cerebras's price of 2025-10-01
    assert "$ per request" in page and "Price, $/1M (3:1)" in page


def test_the_board_charts_speed_against_blended_price_for_the_priced_endpoints(client: TestClient) -> None:
    drawn = charts(client.get("/").text)
    price = drawn["chart-board-price-speed"]
    names = ["groq/llama-3.1-8b-instant", "cerebras/llama3.1-8b"]
    assert sorted(legend(price)) == sorted(names)  # a colour per endpoint
    by_endpoint = {m.split(": ")[0]: m for m in marks(price)}
    assert set(by_endpoint) == {"groq/llama-3.1-8b-instant", "cerebras/llama3.1-8b"}  # other/ has no price
    assert "$ per 1M tokens 0.0575," in by_endpoint["groq/llama-3.1-8b-instant"]
    assert len(marks(drawn["chart-board-ttft-speed"])) == 3  # every endpoint, priced or not


def test_csv_carries_price_columns(client: TestClient) -> None:
    text = client.get("/leaderboard.csv").text
    table = list(csv.DictReader(io.StringIO(text)))
    assert set(CSV_COLUMNS) <= set(table[0])
    groq = next(r for r in table if r["name"] == "groq/llama-3.1-8b-instant")
    assert groq["canonical_model"] == "llama-3.1-8b" and float(groq["price_input"]) == 0.05
    assert float(groq["blended_price"]) == pytest.approx(blended(FRESH)) and float(groq["cost_per_request"]) > 0
    cerebras = next(r for r in table if r["name"] == "cerebras/llama3.1-8b")
    assert cerebras["price_stale"] == "True" and cerebras["price_as_of"] == "2025-10-01"


def test_spend_per_plan_today_on_the_board_and_the_methodology(client: TestClient, filled_at: datetime) -> None:
    today = filled_at.date()
    board = client.get("/leaderboard.json").json()
    spent = {(d["provider"], d["plan"]): d for d in board["spend_today"]}
    groq = spent[("groq", "default")]
    assert groq["requests"] == 3 and groq["day"] == today.isoformat() and groq["unpriced_requests"] == 0
    assert groq["dollars"] == pytest.approx((groq["input_tokens"] * 0.05 + groq["output_tokens"] * 0.08) / 1e6)
    assert spent[("other", "default")]["unpriced_requests"] == 3 and spent[("other", "default")]["dollars"] == 0
    method = client.get("/methodology.json").json()
    assert {(d["provider"], d["day"]) for d in method["spend"]} >= {("groq", today.isoformat())}
    assert method["prices"]["stale_days"] == 90
    assert "Spent per plan per day" in client.get("/methodology").text
    assert 'id="spend"' in client.get("/").text


def test_endpoint_page_shows_its_price_and_canonical_model(client: TestClient) -> None:
    data = client.get("/endpoint/cerebras/default/llama3~2E1-8b.json").json()["endpoint"]
    assert data["canonical_model"] == "llama-3.1-8b" and data["price"]["stale"] is True
    page = client.get("/endpoint/groq/default/llama-3~2E1-8b-instant").text
    assert "(= llama-3.1-8b)" in page and "fp16" in page and dataclasses.is_dataclass(FRESH)


def test_terminal_board_shows_price_and_cost(client: TestClient, db: Path) -> None:
    # No config: the presets' prices, so Groq's default model has one (dated 2025: marked old) and Cerebras's too.
    out = CliRunner().invoke(main, ["leaderboard", "--db", str(db)], catch_exceptions=False, terminal_width=250)
    assert out.exit_code == 0, out.output
    assert "$0.0575/1M (old price), $" in out.stdout  # (3 * 0.05 + 0.08) / 4, read in 2025
    wide = CliRunner().invoke(main, ["leaderboard", "--db", str(db)], env={"COLUMNS": "400"})
    assert "$/request" in wide.stdout and "$0.0575 (old price)" in wide.stdout, wide.stdout
    entries = {e["name"]: e for e in json.loads(
        CliRunner().invoke(main, ["leaderboard", "--db", str(db), "--json"], catch_exceptions=False).stdout
    )["entries"]}  # fmt: skip
    assert entries["groq/llama-3.1-8b-instant"]["price"]["source"] == "https://groq.com/pricing"
    assert entries["other/org/Unrelated-Model"]["price"] is None
