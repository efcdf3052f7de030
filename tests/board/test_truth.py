"""What the board says beyond timing (issue 22): samples served from the provider's prompt cache and cold starts
counted apart and out of the figures, and the correctness canary's pass rate, "fast but wrong" beside the name,
pooled per model; in the board's rows, JSON, CSV, terminal and pages, on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import dataclasses
import io
import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from starlette.testclient import TestClient

from tests.store.test_windows import CEREBRAS, GROQ, NOW, stream
from tokenpace.board import numbers
from tokenpace.board.query import Query
from tokenpace.board.ranking import as_dict, csv_table, read_board
from tokenpace.board.rows import WRONG_BELOW
from tokenpace.board.terminal import print_board
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.config.settings import DEFAULT_COLD_AFTER_S
from tokenpace.measure.sample import Sample, make_sample
from tokenpace.store.database import Store, open_store
from tokenpace.web import create_app
from tokenpace.web.paths import endpoint_path, model_path

OTHER = Endpoint("other", "llama", "http://other.invalid/v1")  # a third provider of the same model id


def put(store: Store, endpoint: Endpoint, at: Any, ttft_ms: float, **truth: Any) -> Sample:
    """One successful sample with issue 22's fields: provider_cached_tokens, cold, canary_ok."""
    s = make_sample("run", endpoint, "1k", at, stream(ttft_ms, 10))
    cached = truth.pop("provider_cached_tokens", None)
    s = dataclasses.replace(s, metrics=dataclasses.replace(s.metrics, provider_cached_tokens=cached), **truth)
    store.add_sample(s)
    return s


def write(store: Store, now: Any = NOW) -> None:
    """groq: 4 fresh at 300 ms, 3 cached at 5 ms, 2 cold at 5 s, its canary always passed. cerebras: 4 fresh at
    200 ms, its canary failed twice in 4. other: only cached samples (2), no canary asked."""
    for i in range(4):
        at = now - timedelta(hours=i + 1)
        put(store, GROQ, at, 300, canary="C", canary_ok=True)
        put(store, CEREBRAS, at, 200, canary="C", canary_ok=i % 2 == 0)
    for i in range(3):
        put(store, GROQ, now - timedelta(minutes=10 + i), 5, provider_cached_tokens=512, canary="C", canary_ok=True)
    for i in range(2):
        put(store, GROQ, now - timedelta(hours=5 + i), 5000, cold=True, idle_s=900.0)
        put(store, OTHER, now - timedelta(hours=5 + i), 1, provider_cached_tokens=2048)
    store.flush()


@pytest.fixture
def store(any_store: Store) -> Store:
    write(any_store)
    return any_store


def test_figures_and_ranking_come_from_fresh_samples_and_cached_and_cold_ones_are_counted_apart(store: Store) -> None:
    board = read_board(store, Query(sort="ttft"), NOW)
    by = {e.row.name: e for e in board.entries}
    groq, cerebras, other = by["groq:free/llama"].row, by["cerebras/llama"].row, by["other/llama"].row
    assert groq.samples == 9 and groq.cached == 3 and groq.cold == 2 and groq.counted == 4
    assert groq.ttft_ms.n == 4 and groq.ttft_ms.p50 == pytest.approx(300, abs=1)  # not the 5 ms cache hits
    assert groq.cold_ttft_ms.n == 2 and groq.cold_ttft_ms.p50 == pytest.approx(5000, abs=1)
    assert cerebras.cold == cerebras.cached == 0 and cerebras.cold_ttft_ms.n == 0
    # Only cached samples: none fresh, so too few to rank however fast its cache answered.
    assert other.cached == 2 and other.counted == 0 and by["other/llama"].too_few and other.ttft_ms.n == 0
    assert [e.row.name for e in board.entries if e.rank] == ["cerebras/llama", "groq:free/llama"]


def test_canary_pass_rate_per_endpoint_fast_but_wrong_and_pooled_per_model(store: Store) -> None:
    board = read_board(store, Query(), NOW)
    doc = as_dict(board)
    entries = {e["name"]: e for e in doc["entries"]}
    assert entries["groq:free/llama"]["canary_rate"] == 1.0 and entries["groq:free/llama"]["canary_checked"] == 7
    assert entries["cerebras/llama"]["canary_rate"] == 0.5 < WRONG_BELOW
    assert entries["cerebras/llama"]["fast_but_wrong"] and not entries["groq:free/llama"]["fast_but_wrong"]
    assert entries["other/llama"]["canary_rate"] is None and not entries["other/llama"]["fast_but_wrong"]
    assert entries["groq:free/llama"]["cached"] == 3 and entries["groq:free/llama"]["cold"] == 2
    assert entries["groq:free/llama"]["cold_ttft_ms"]["n"] == 2
    (model,) = doc["models"]  # every provider's verdicts pooled, not the median of their rates
    assert (model["canary_checked"], model["canary_passed"]) == (11, 9)
    assert model["canary_rate"] == pytest.approx(9 / 11)
    header, rows = csv_table(board)
    table = {
        r["name"]: r for r in csv.DictReader(io.StringIO("\n".join(",".join(map(str, x)) for x in [header, *rows])))
    }
    assert table["cerebras/llama"]["canary_rate"] == "0.5" and table["cerebras/llama"]["fast_but_wrong"] == "True"
    assert table["groq:free/llama"]["cached"] == "3" and table["groq:free/llama"]["cold_ttft_ms_n"] == "2"


def test_the_terminal_says_fast_but_wrong_and_how_many_were_cached_or_cold(store: Store) -> None:
    out = io.StringIO()
    print_board(Console(file=out, width=400, color_system=None), read_board(store, Query(), NOW))
    lines = {line.split("│")[2].strip().split(" ")[0]: line for line in out.getvalue().splitlines() if "llama" in line}
    assert "(fast but wrong)" in lines["cerebras/llama"] and "(fast but wrong)" not in lines["groq:free/llama"]
    assert "(3 cached)" in lines["groq:free/llama"] and "(2 cold)" in lines["groq:free/llama"]
    assert "(canary 50" in lines["cerebras/llama"]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    from datetime import UTC, datetime

    with open_store(str(tmp_path / "web.db")) as s:
        write(s, datetime.now(UTC))
        with TestClient(create_app(s, Config(endpoints=(GROQ, CEREBRAS, OTHER), source="truth.toml"))) as c:
            yield c


def test_the_pages_show_the_badge_the_canary_column_and_the_model_pass_rate(client: TestClient) -> None:
    page = client.get("/").text
    row = re.search(r'data-endpoint="cerebras/llama">.*?</tr>', page, re.S)
    assert row and re.search(r'class="badge wrong"[^>]*>fast but wrong · 50(\.0)?% canary<', row.group(0))
    assert 'data-col="canary">50' in row.group(0)
    groq = re.search(r'data-endpoint="groq:free/llama">.*?</tr>', page, re.S)
    assert groq and "badge wrong" not in groq.group(0)
    assert ">3 cached<" in groq.group(0) and re.search(r">2 cold · TTFT 5[,.]?0+ ms<", groq.group(0))
    assert "3 samples the provider served from its prompt cache and 2 cold starts" not in page  # other's 2 too
    assert "5 samples the provider served from its prompt cache and 2 cold starts" in page
    model = client.get(model_path("llama")).text
    assert re.search(r'id="model-canary">81(\.8)?%', model)
    assert client.get(model_path("llama", "json")).json()["canary_rate"] == pytest.approx(9 / 11)
    text = client.get("/methodology").text
    assert f"under {WRONG_BELOW:.0%} “fast but wrong” beside its name" in text  # the constant, not a copy
    assert 'id="cached"' in text and 'id="cold"' in text
    assert f"(cold_after, {numbers.interval(DEFAULT_COLD_AFTER_S)} unless" in text


def test_the_endpoint_page_shows_the_canary_pass_rate_its_json_has(client: TestClient) -> None:
    page = client.get(endpoint_path(CEREBRAS.provider, CEREBRAS.plan, "llama")).text
    assert re.search(r'id="endpoint-canary">50(\.0)?% <small>\(2 of 4 answers\)', page)
    data = client.get(endpoint_path(CEREBRAS.provider, CEREBRAS.plan, "llama", "json")).json()
    (row,) = data["rows"]
    assert (row["canary_rate"], row["canary_passed"], row["canary_checked"]) == (0.5, 2, 4)
    assert data["canary"] == {"rate": 0.5, "passed": 2, "checked": 4}  # the page's own figure, as the HTML shows it
    assert (
        'id="endpoint-canary"' not in client.get(endpoint_path(OTHER.provider, OTHER.plan, "llama")).text
    )  # none asked


def test_a_few_reused_template_tokens_are_no_cache_hit() -> None:
    """llama.cpp reports the 4-5 chat-template tokens its slot reuses on every fresh prompt as cached: such a
    sample is fresh; a real hit (OpenAI, Anthropic and Gemini cache 1,024 tokens or more) is cached."""
    from tokenpace.measure.sample import CACHED_MIN_TOKENS, is_cached

    assert not is_cached(None) and not is_cached(0) and not is_cached(5)
    assert not is_cached(CACHED_MIN_TOKENS - 1) and is_cached(CACHED_MIN_TOKENS) and is_cached(1024)
