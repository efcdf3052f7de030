"""Warm vs cold TTFT per endpoint, on the web (page and JSON twin) and in ``tokenpace run``'s output."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from tests.webkit import Steady
from tokenpace import sim
from tokenpace.board import warmcold
from tokenpace.cli import main
from tokenpace.clients.transport import Timeouts
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.config.workloads import BUILTIN
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.measure.sample import Sample
from tokenpace.store.database import Store, open_store
from tokenpace.store.prefixturns import turns
from tokenpace.web import create_app

PAIRS = dataclasses.replace(BUILTIN["cached-10k"], max_tokens=4)
TIMEOUTS = Timeouts(connect=2, first_token=20, idle=20, total=60)
# 10k tokens at 50k tokens/s: 200 ms of prefill cold, a few ms warm where the prefix is cached.
CACHING = sim.Scenario(ttft_ms=20, prefill_tokens_per_s=50_000, tokens_per_s=2000, output_tokens=4, prefix_cache=True)
PLAIN = dataclasses.replace(CACHING, prefix_cache=False)


async def _fill(store: Store) -> tuple[list[Sample], Config]:
    async with sim.serve(sim.Simulator(CACHING)) as caching, sim.serve(sim.Simulator(PLAIN)) as plain:
        cached = Endpoint("cacheco", "m", caching, simulated=True)
        uncached = Endpoint("plainco", "m", plain, simulated=True)
        options = RunOptions(4, 1, TIMEOUTS, warm_connections=False, source="scheduled")
        result = await run_workload([cached, uncached], PAIRS, options, Steady(store))
        # A one-shot run, not published: never on the board's page.
        await run_workload([uncached], PAIRS, dataclasses.replace(options, source="one-shot"), Steady(store))
    store.flush()
    return result.samples, Config(endpoints=(cached, uncached), source="cache-test.toml")


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, list[Sample], Config]:
    store = open_store(str(tmp_path_factory.mktemp("cache") / "c.db"))
    samples, config = asyncio.run(_fill(store))
    return store, samples, config


def test_page_and_twin_show_warm_vs_cold_per_endpoint(filled: tuple[Store, list[Sample], Config]) -> None:
    store, samples, config = filled
    with TestClient(create_app(store, config)) as c:
        doc = c.get("/prompt-cache.json").json()
        page = c.get("/prompt-cache")
    rows = {r["provider"]: r for r in doc["rows"]}
    assert set(rows) == {"cacheco", "plainco"}  # the one-shot run's samples are not the board's
    expected = {r.provider: dataclasses.asdict(r) for r in warmcold.table(warmcold.of_samples(samples))}
    assert rows == expected  # the page's figures are the run's own, read back from the raw samples
    cache, plain = rows["cacheco"], rows["plainco"]
    assert cache["cold_n"] == cache["warm_n"] == 2
    assert cache["warm_cached_share"] == 1 and cache["warm_cached_tokens_p50"] > 9000
    assert cache["speedup"] > 2 and cache["cold_ttft_p50_ms"] - cache["warm_ttft_p50_ms"] > 150
    assert plain["warm_cached_share"] == 0 and plain["speedup"] == pytest.approx(1, abs=0.3)
    assert page.status_code == 200 and 'id="prompt-cache"' in page.text and "cacheco" in page.text
    assert 'href="/prompt-cache.json"' in page.text
    assert not re.search(r"\bNone\b", page.text), "Python's None in the page's prose"


def test_turns_reader_leaves_out_unpublished_and_failed(filled: tuple[Store, list[Sample], Config]) -> None:
    store, _, _ = filled
    published = turns(store, 0)
    every = turns(store, 0, published=False)
    assert len(published) == 8 and len(every) == 12
    assert {t.turn for t in every} == {1, 2}


def test_run_prints_warm_vs_cold_after_a_paired_workload(tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")
    args = ["run", "--sim", "-w", "cached-10k", "-n", "4", "--max-tokens", "4", "--db", db]
    shown = CliRunner().invoke(main, args)
    assert shown.exit_code == 0, shown.output
    assert "Prompt cache" in shown.output and "100%" in shown.output
    as_json = CliRunner().invoke(main, [*args, "--json"])
    assert as_json.exit_code == 0, as_json.output
    (row,) = json.loads(as_json.output)["prompt_cache"]
    assert row["provider"] == "sim" and row["cold_n"] == row["warm_n"] == 2 and row["warm_cached_share"] == 1
    plain = CliRunner().invoke(main, ["run", "--sim", "-n", "2", "--max-tokens", "4", "--db", db, "--json"])
    assert "prompt_cache" not in json.loads(plain.output)  # a workload of fresh prompts has no pairs
