"""A run's memory follows its concurrency, not its request count (issue 32): against the simulator, many more
requests than any bound, and what the run holds at the end stays within the bounds (lowered here so that a few
hundred requests pass them: the real ones are 100,000 values, 20,000 top values and 20,000 rows)."""

from __future__ import annotations

import asyncio
import gc
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import SimThread
from tests.load.test_engine import FAST, Tiny
from tokenpace import sim
from tokenpace.cli import main
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.traffic import Load
from tokenpace.load import results
from tokenpace.load.engine import RunOptions, run_load
from tokenpace.load.interpreter import event_loop_factory
from tokenpace.load.running import RunningFigures
from tokenpace.measure import quantiles
from tokenpace.store.database import open_store

EXACT, TOP, ROWS = 40, 10, 32
MIN = quantiles.MIN_MAGNITUDE


@pytest.fixture
def small_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(quantiles, "EXACT_VALUES", EXACT)
    monkeypatch.setattr(quantiles, "TOP_VALUES", TOP)
    monkeypatch.setattr(results, "MAX_ROWS", ROWS)


def within_bounds(summary: RunningFigures) -> bool:
    """Each figure holds its values up to EXACT, else TOP values and a bucket per step of RELATIVE_ERROR across
    the span its values cover: a bound set by the latencies' range, never by how many there are."""
    for q in summary.quantiles():
        if q.values is not None:
            if len(q.values) > EXACT:
                return False
        elif (
            len(q.top) > TOP
            or q.negative
            or len(q.positive) > quantiles.bucket_of(q.hi) - quantiles.bucket_of(max(q.lo, MIN)) + 1
        ):
            return False
    return True


@pytest.mark.usefixtures("small_bounds")
def test_a_run_holds_its_figures_not_its_requests(tmp_path: Path, sim_thread: Callable[..., SimThread]) -> None:
    s = sim_thread(sim.Scenario(ttft_ms=2, tokens_per_s=2000, output_tokens=3))
    endpoint = Endpoint("sim", "sim", s.url, simulated=True)
    options = RunOptions(timeouts=FAST, keep_done=False)
    summary = RunningFigures()
    with open_store(str(tmp_path / "t.db")) as store:
        with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
            load = Load(concurrency=16, requests=600, warmup=2)
            result = runner.run(run_load(endpoint, Tiny(), load, options, store, summary=summary))
        store.flush()
        assert len(store.samples()) == 602  # each sample went to the store as it ended
    assert result.done == [] and result.summary is summary  # no request kept whole
    assert (summary.requests, summary.warmups, summary.ok) == (600, 2, 600)
    assert within_bounds(summary) and len(summary.rows()) <= ROWS
    assert not summary.ttft.exact and summary.figures().ttft.n == 600  # past the bound, every request counted


@pytest.mark.usefixtures("small_bounds")
def test_a_bench_result_of_many_requests_keeps_bounded_rows(tmp_path: Path) -> None:
    args = ["bench", "--sim", "-c", "8", "-n", "300", "--data", "synthetic:input=100,output=3", "-q",
            "--db", str(tmp_path / "t.db"), "--out", str(tmp_path / "out")]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code in (0, 1), result.output  # 1: a loaded machine may send late (an invalid level)
    (doc,) = (json.loads(p.read_text()) for p in (tmp_path / "out").glob("*.json"))
    (point,) = doc["points"]
    assert point["figures"]["requests"] == point["figures"]["ttft"]["n"] == 300
    assert ROWS // 2 <= len(point["rows"]) <= ROWS


def test_a_request_leaves_nothing_for_the_garbage_collector(sim_thread: Callable[..., SimThread]) -> None:
    """Every request's connection state, recording and chunks are freed by their reference counts as it ends:
    garbage left to the collector held each recording until a collection, pauses of ~30 ms at 256 streams."""
    s = sim_thread(sim.Scenario(ttft_ms=2, tokens_per_s=2000, output_tokens=5))
    endpoint = Endpoint("sim", "sim", s.url, simulated=True)
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds unreachable is kept in gc.garbage to be looked at
    try:
        with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
            load = Load(concurrency=4, requests=40)
            result = runner.run(run_load(endpoint, Tiny(), load, RunOptions(timeouts=FAST, keep_done=False)))
        assert result.summary.ok == 40
        del result
        gc.collect()
        left = Counter(type(o).__name__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()
    assert left["Recording"] == left["_Exchange"] == 0, left.most_common(8)
