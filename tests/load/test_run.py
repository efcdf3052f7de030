"""Workloads end to end: what the server receives, how parallel groups are released, TTFT against size."""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import statistics
import time
import weakref
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import SimThread
from tokenpace import sim
from tokenpace.board.summary import summarise
from tokenpace.cli import main
from tokenpace.clients.transport import Timeouts
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.workloads import BUILTIN
from tokenpace.load import run
from tokenpace.load.run import Refusals, RunOptions, run_workload
from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.sample import Sample
from tokenpace.store.database import open_store

FAST = Timeouts(connect=2, first_token=10, idle=10, total=30)


async def test_server_receives_exactly_the_counted_prompt() -> None:
    simulator = sim.Simulator(sim.Scenario(ttft_ms=5, tokens_per_s=2000, output_tokens=5))
    async with sim.serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        for name in ("1k", "vision"):
            result = await run_workload([endpoint], BUILTIN[name], RunOptions(3, 1, FAST))
            for s in result.samples:
                assert s.ok, s.error_message
                truth = simulator.truth[s.timeline.response_id or ""]
                assert s.input_tokens == truth.prompt_tokens
                assert s.input_tokens is not None and abs(s.input_tokens - 1000) <= 20
                assert s.workload == name and s.prompt_fingerprint
            assert len({s.prompt_fingerprint for s in result.samples}) == 3  # fresh prompts
    vision = result.samples[0]
    assert vision.image_pixels == 1200 * 840 and vision.image_bytes > 1000


async def test_ttft_grows_with_workload_size_end_to_end() -> None:
    # 50k prompt tokens/s of simulated prefill: 10k tokens should take ~180 ms longer than 1k.
    simulator = sim.Simulator(sim.Scenario(ttft_ms=20, prefill_tokens_per_s=50_000, tokens_per_s=2000, output_tokens=5))
    async with sim.serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        ttft = {}
        for name in ("1k", "10k"):
            result = await run_workload([endpoint], BUILTIN[name], RunOptions(3, 1, FAST))
            ttft[name] = statistics.median(s.metrics.ttft_ms or 0 for s in result.samples)
    assert ttft["10k"] - ttft["1k"] == pytest.approx(9000 / 50_000 * 1000, abs=60)


async def test_parallel_workload_releases_groups_together() -> None:
    simulator = sim.Simulator(sim.Scenario(ttft_ms=50, tokens_per_s=200, output_tokens=20))
    async with sim.serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        result = await run_workload([endpoint], BUILTIN["parallel"], RunOptions(20, 1, FAST))
    groups: dict[str, list[float]] = {}
    for s in result.samples:
        assert s.ok and s.group_id is not None
        groups.setdefault(s.group_id, []).append(s.started_at.timestamp())
    assert sorted(len(g) for g in groups.values()) == [10, 10]
    for starts in groups.values():
        assert max(starts) - min(starts) < 0.05  # released together
    first, second = sorted(groups.values(), key=min)
    assert min(second) >= max(first) + 0.05  # the next group waits for the last of the previous one
    assert result.run.concurrency == 10
    summary = summarise("sim", result.samples)
    assert summary.groups is not None and summary.groups.count == 2
    # 10 streams of 20 tokens over ~150 ms each: several hundred tokens/s in aggregate.
    assert summary.groups.speed.p50 is not None and summary.groups.speed.p50 > 300


def test_cli_workloads_custom_and_corpus(tmp_path: Path, sim_thread: Callable[..., SimThread]) -> None:
    s = sim_thread(sim.Scenario(ttft_ms=5, tokens_per_s=2000, output_tokens=5))
    texts = tmp_path / "texts"
    texts.mkdir()
    (texts / "a.md").write_text("# Tides\n\n" + "The moon pulls the sea toward it. " * 200)
    (texts / "b.html").write_text("<title>Rivers</title><p>" + "Rivers carve valleys over time. " * 200 + "</p>")
    config = tmp_path / "tokenpace.toml"
    config.write_text(
        'corpus = "texts"\n'
        f'[providers.local]\nbase_url = "{s.url}"\nmodels = ["m"]\n'
        '[workloads.tiny-compare]\ninput_tokens = 600\nmax_tokens = 50\ntasks = ["compare"]\n'
    )
    listing = CliRunner().invoke(main, ["workloads", "--config", str(config)])
    assert listing.exit_code == 0 and "tiny-compare" in listing.output and "100,000" in listing.output
    db = tmp_path / "t.db"
    args = ["run", "local/m", "--config", str(config), "-w", "tiny-compare", "-n", "2", "--db", str(db), "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["endpoints"][0]["ok"] == 2
    with open_store(str(db)) as store:
        samples = store.samples()
    assert all(x.workload == "tiny-compare" and x.input_tokens and abs(x.input_tokens - 600) <= 12 for x in samples)
    bad = CliRunner().invoke(main, ["run", "--sim", "-w", "nope", "--db", str(db)])
    assert bad.exit_code != 0 and "unknown workload 'nope'" in bad.output
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = CliRunner().invoke(main, ["run", "--sim", "--corpus", str(empty), "--db", str(db)])
    assert bad.exit_code != 0 and "no text" in bad.output


def test_prompts_are_kept_only_when_asked(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    for flag in ([], ["--keep-prompts"]):
        result = CliRunner().invoke(main, ["run", "--sim", "-n", "2", "--db", str(db), "--json", *flag])
        assert result.exit_code == 0, result.output
    with open_store(str(db)) as store:
        samples = store.samples()
    plain = [s for s in samples if s.prompt_text is None]
    kept = [s for s in samples if s.prompt_text is not None]
    assert len(plain) == len(kept) == 2
    assert all(s.prompt_fingerprint and s.input_tokens for s in samples)
    assert all("Documents:" in (s.prompt_text or "") for s in kept)


async def test_a_refused_field_is_negotiated_once_per_endpoint(refusing_server: tuple[str, Counter[str]]) -> None:
    """Under serve each run is a new measure(): only the first of an endpoint may send a refused request."""
    url, sent = refusing_server
    endpoint, refusals = Endpoint("strict", "m", url), Refusals()  # kept across runs, as the sampler keeps its own
    for _ in range(3):
        (sample,) = (
            await run_workload([endpoint], BUILTIN["1k"], RunOptions(1, 1, FAST, warmup=False), refusals=refusals)
        ).samples
        assert sample.ok
    assert sent == {"refused": 1, "served": 3}  # the budget's worst case allows one refusal per run


def test_overlapping_runs_collect_garbage_at_bounded_intervals(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs that overlap for good would hold collection off for good: one entering late collects first."""
    monkeypatch.setattr(run, "QUIET_MAX_S", 0.3)

    def cycle() -> weakref.ref[Node]:
        node = Node()
        node.me = node  # only the cyclic collector frees it
        return weakref.ref(node)

    with run.quiet_interpreter():
        early = cycle()
        with run.quiet_interpreter():  # entered at once: collection stays off
            assert early() is not None and not gc.isenabled()
        time.sleep(0.4)
        with run.quiet_interpreter():  # past QUIET_MAX_S of quiet: collected on the way in
            assert early() is None and not gc.isenabled()
            late = cycle()
            with run.quiet_interpreter():  # the timer restarted: no second collection yet
                assert late() is not None
    assert gc.isenabled()


def test_a_run_collects_the_whole_heap_at_most_every_quiet_max_s(monkeypatch: pytest.MonkeyPatch) -> None:
    """A full collection on the way in is a pause the loop pays (the board's readers too): young ones suffice."""
    calls: list[int] = []
    collect = gc.collect

    def counted(generation: int = 2) -> int:
        calls.append(generation)
        return collect(generation)

    monkeypatch.setattr(gc, "collect", counted)
    monkeypatch.setattr(run, "_full_at", time.monotonic())  # a full collection just happened
    with run.quiet_interpreter():
        pass
    monkeypatch.setattr(run, "_full_at", time.monotonic() - run.QUIET_MAX_S - 1)
    for _ in range(2):
        with run.quiet_interpreter():
            pass
    assert calls == [1, 2, 1] and gc.isenabled()


class Node:
    me: object = None


async def test_a_cancelled_run_keeps_every_sample_each_as_it_ended() -> None:
    """Each sample reaches the caller as its stream ends; the request cut by the cancellation is one too."""
    simulator = sim.Simulator(sim.Scenario(ttft_ms=5, tokens_per_s=40, output_tokens=10))  # 1/4 s a stream
    kept: list[Sample] = []
    async with sim.serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        task = asyncio.create_task(
            run_workload([endpoint], BUILTIN["1k"], RunOptions(3, 1, FAST), on_sample=kept.append)
        )
        while len(simulator.truth) < 2:  # noqa: ASYNC110 - the second request is being timed
            await asyncio.sleep(0.01)
        for _ in range(100):  # the first one's decoding, on the decoder thread, lands within moments
            if kept:
                break
            await asyncio.sleep(0.01)
        assert [s.error_kind for s in kept] == [None]  # stored while the second is still being timed
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert [s.error_kind for s in kept] == [None, ErrorKind.CANCELLED]


async def test_a_closed_loop_staggers_its_streams_so_rounds_do_not_end_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(run, "STAGGER_S", 0.02)  # far above what writing 8 requests costs, even on a loaded machine
    simulator = sim.Simulator(sim.Scenario(ttft_ms=400, tokens_per_s=2000, output_tokens=3))  # outlasts the stagger
    async with sim.serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        result = await run_workload([endpoint], BUILTIN["1k"], RunOptions(8, 8, FAST, seed=1))
    asked = sorted(s.timeline.t_sent_ns - s.timeline.queued_ns for s in result.samples)
    assert all(s.ok for s in result.samples)
    assert all(b - a >= 0.015e9 for a, b in itertools.pairwise(asked))
