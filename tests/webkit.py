"""What the web tests share: a SQLite store filled by real runs against simulators of known, different speeds."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from tokenpace import sim
from tokenpace.clients.transport import Timeouts
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.config.workloads import BUILTIN, Workload
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.measure.sample import RunRecord, Sample
from tokenpace.measure.verdict import NONE
from tokenpace.store.database import Store, open_store

EVIL = "<script>alert(1)</script>"
SECRET_ENV = "TOKENPACE_WEB_TEST_KEY"  # noqa: S105 (the name of a variable)
SECRET = "sk-web-test-4b1d9c0e7f"  # noqa: S105 (a test key for a simulator, nothing else)
TIMEOUTS = Timeouts(connect=2, first_token=10, idle=10, total=30)
ONE_K = dataclasses.replace(BUILTIN["1k"], max_tokens=12)  # the full prompt, a short answer: fast runs
TINY = Workload("tiny", 8, input_tokens=300)
BURST = Workload("burst", 8, input_tokens=300, concurrency=3)  # released three at a time, as parallel's ten


@dataclass(frozen=True)
class Fleet:
    """The endpoints a filled store holds samples of, fastest first, and a config that declares them."""

    fast: Endpoint
    evil: Endpoint  # provider and model names with <script> in them
    slow: Endpoint
    few: Endpoint  # two samples only: listed, never ranked
    flaky: Endpoint  # every other request fails with HTTP 500
    config: Config

    @property
    def ranked(self) -> list[Endpoint]:
        return [self.fast, self.evil, self.slow]


# Speeds four and three times apart, over streams of 22 ms and more: the order of the board holds on a loaded
# machine, whose hiccups of a few ms turned a 5 ms stream at 2,000 tok/s into one slower than 800.
SCENARIOS = {
    "fast": sim.Scenario(ttft_ms=5, tokens_per_s=500, output_tokens=12),
    "evil": sim.Scenario(ttft_ms=40, tokens_per_s=125, output_tokens=12),
    "slow": sim.Scenario(ttft_ms=90, tokens_per_s=40, output_tokens=12),
    "flaky": sim.Scenario(ttft_ms=20, tokens_per_s=2000, output_tokens=12, error="500", error_rate=0.5, seed=3),
}


class Steady:
    """Writes samples as not client-bound: these tests count samples, and a busy test machine's loop lags.

    (Client-bound samples are left out of figures: tests/web/test_origins.py writes them on purpose.)
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    def add_sample(self, sample: Sample) -> None:
        self.store.add_sample(dataclasses.replace(sample, client_bound=NONE))

    def add_run(self, run: RunRecord) -> None:
        self.store.add_run(run)


async def _fill(store: Store) -> Fleet:
    os.environ[SECRET_ENV] = SECRET
    async with (
        sim.serve(sim.Simulator(SCENARIOS["fast"], api_key=SECRET)) as fast_url,
        sim.serve(sim.Simulator(SCENARIOS["evil"])) as evil_url,
        sim.serve(sim.Simulator(SCENARIOS["slow"])) as slow_url,
        sim.serve(sim.Simulator(SCENARIOS["flaky"])) as flaky_url,
    ):
        fleet = Fleet(
            fast=Endpoint("fastco", "sim-fast", fast_url, api_key_env=SECRET_ENV, simulated=True),
            evil=Endpoint(f"evil{EVIL}", f"org/{EVIL}", evil_url, simulated=True),
            slow=Endpoint("slowco", "sim-slow", slow_url, plan="pro", simulated=True),
            few=Endpoint("fewco", "sim-few", slow_url, simulated=True),
            flaky=Endpoint("flakyco", "sim-flaky", flaky_url, simulated=True),
            config=Config(),
        )
        plan = RunOptions(
            requests=4,
            concurrency=1,
            timeouts=TIMEOUTS,
            warm_connections=False,
            source="scheduled",
            command="test",
        )
        sink = Steady(store)
        await run_workload([fleet.fast, fleet.evil, fleet.slow, fleet.flaky], ONE_K, plan, sink)
        await run_workload([fleet.few], ONE_K, dataclasses.replace(plan, requests=2), sink)
        await run_workload([fleet.fast, fleet.slow], TINY, dataclasses.replace(plan, requests=3), sink)
        await run_workload([fleet.fast], BURST, dataclasses.replace(plan, requests=6), sink)
    endpoints = (fleet.fast, fleet.evil, fleet.slow, fleet.few, fleet.flaky)
    config = Config(endpoints=endpoints, source="web-test.toml", workloads={"tiny": TINY, "burst": BURST})
    store.flush()
    return dataclasses.replace(fleet, config=config)


def filled_store(url: str | Path) -> tuple[Store, Fleet]:
    """A new store (a SQLite path or a URL) with 4 samples of each ranked endpoint (1k), 2 of few, 3 of tiny and
    two bursts of three of fast."""
    store = open_store(str(url))
    return store, asyncio.run(_fill(store))


_CHART = re.compile(r'<figure class="chart" id="([^"]+)"[^>]*>(<svg.*?</svg>)</figure>', re.S)
SVG = "{http://www.w3.org/2000/svg}"


def charts(page: str) -> dict[str, ET.Element]:
    """The page's charts by element id, each its inline SVG parsed (pygal writes well-formed XML)."""
    return {chart_id: ET.fromstring(svg) for chart_id, svg in _CHART.findall(page)}  # noqa: S314 (pages we served)


def legend(svg: ET.Element) -> list[str]:
    """A chart's series names, whole (the legend's text may be cut short; its title is not)."""
    entries = [g for g in svg.iter(f"{SVG}g") if "legend" in g.get("class", "").split()]
    return [g.findtext(f"{SVG}title") or g.findtext(f"{SVG}text") or "" for g in entries]


def marks(svg: ET.Element) -> list[str]:
    """The tooltip of each value a chart draws (a dot, a box), in drawing order."""
    return [
        title.text or ""
        for g in svg.iter(f"{SVG}g")
        for title in g.findall(f"{SVG}title")
        if any(d.get("class", "").startswith("value") for d in g.findall(f"{SVG}desc"))
    ]
