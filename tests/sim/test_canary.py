"""The correctness canary against the simulator's truth: answered right, a swapped model caught, cuts failed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tokenpace import sim
from tokenpace.board.changes import describe, read_current, series_changes
from tokenpace.clients import protocol_for
from tokenpace.clients.transport import Timeouts
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.config.presets import PROTOCOLS, ProtocolName
from tokenpace.config.workloads import BUILTIN, Workload
from tokenpace.errors import SimulatorError
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.sample import Sample, make_sample
from tokenpace.prompts.prompt import Message, chat_prompt
from tokenpace.prompts.tokens import count_tokens
from tokenpace.sim.scenario import from_table
from tokenpace.store.database import open_store
from tokenpace.store.series import latest
from tokenpace.web import create_app
from tokenpace.web.paths import endpoint_path

FAST = sim.Scenario(ttft_ms=0, tokens_per_s=5000, output_tokens=40)
LIMITS = Timeouts(connect=2, first_token=10, idle=10, total=30)
SMALL = Workload("small", 40, input_tokens=300)


async def measured(
    scenario: sim.Scenario,
    n: int,
    workload: Workload = SMALL,
    protocol: ProtocolName = "openai-chat",
    publish: bool = False,
) -> tuple[sim.Simulator, list[Sample]]:
    """n samples of one simulated endpoint, one request at a time, with the simulator that served them."""
    simulator = sim.Simulator(scenario)
    async with sim.serve(simulator) as url:
        base = url.removesuffix("/v1") + protocol_for(protocol).default_base
        endpoint = Endpoint("sim", "sim", base, protocol=protocol, simulated=True)
        result = await run_workload([endpoint], workload, RunOptions(n, 1, LIMITS, publish=publish))
    return simulator, sorted(result.samples, key=lambda s: s.started_at)


def truth_of(simulator: sim.Simulator, s: Sample) -> sim.Truth:
    return simulator.truth[s.timeline.response_id or ""]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_the_simulator_answers_the_canary_first_in_every_protocol(protocol: ProtocolName) -> None:
    simulator, samples = await measured(FAST, 2, protocol=protocol)
    for s in samples:
        assert s.ok, s.error_message
        assert s.canary is not None and s.canary_ok is True
        content = truth_of(simulator, s).text("content")
        assert content.startswith(s.canary + "\n")


async def test_output_tokens_count_the_canary_answer() -> None:
    """The canary's line is part of the answer the cap allows: output tokens are the cap, o200k and provider
    agree, and the line itself cost 11 to 22 of them."""
    simulator, samples = await measured(FAST, 3)
    for s in samples:
        truth = truth_of(simulator, s)
        assert s.metrics.output_tokens == s.metrics.provider_output_tokens == truth.completion_tokens == 40
        assert s.metrics.token_diff == 0 and SMALL.max_tokens == 40
        assert s.canary is not None and 11 <= count_tokens(s.canary + "\n") <= 22
        assert truth.text("content").startswith(s.canary + "\n")


async def test_the_canary_is_read_from_the_content_after_reasoning() -> None:
    _, samples = await measured(dataclasses.replace(FAST, reasoning_tokens=10), 2)
    assert [s.canary_ok for s in samples] == [True, True]
    assert all(s.metrics.reasoning_tokens == 10 for s in samples)


async def test_a_model_swapped_mid_run_is_caught_at_the_swap(tmp_path: Path) -> None:
    """Right for the first 24 requests, a digit off after: every verdict flips at the swap, the stored series
    shows one change there (the board's badge, the endpoint page's list), and the timings show none."""
    swap = 24
    simulator, samples = await measured(dataclasses.replace(FAST, canary_wrong_after=swap), 36, publish=True)
    assert [s.canary_ok for s in samples] == [True] * swap + [False] * 12
    for s in samples:  # the verdict is the simulator's truth: did the answer begin with the line asked for?
        assert s.canary is not None
        assert truth_of(simulator, s).text("content").startswith(s.canary + "\n") is s.canary_ok
    with open_store(str(tmp_path / "t.db")) as store:
        for s in samples:
            store.add_sample(s)
        store.flush()
        points = latest(store, provider="sim", plan="default", model="sim", workload="small", limit=96)
        assert [p.canary_ok for p in points] == [s.canary_ok for s in samples]
        (change,) = series_changes(points, "sim", "default", "sim")
        assert (change.metric, change.direction, change.before, change.after) == ("canary_pass_rate", "worse", 1, 0)
        assert change.at == points[swap].started_at
        assert describe(change).startswith("canary pass rate 100 -> 0 % since")
        key = ("sim", "default", "sim", "small")
        assert read_current(store, [key]) == {key: change}  # the board's "changed" badge
        app = create_app(store, Config(endpoints=(samples[0].endpoint,)), now=lambda: samples[-1].started_at)
        with TestClient(app) as client:
            page = client.get(endpoint_path("sim", "default", "sim") + "?window=24h").text
            assert describe(change).replace(">", "&gt;") in page


async def test_a_degraded_model_fails_the_canary_at_its_rate_and_the_verdicts_match_the_truth() -> None:
    simulator, samples = await measured(dataclasses.replace(FAST, canary_wrong_rate=0.5, seed=3), 30)
    verdicts = [s.canary_ok for s in samples]
    assert 5 <= verdicts.count(False) <= 25 and None not in verdicts
    for s in samples:
        assert s.canary is not None
        assert truth_of(simulator, s).text("content").startswith(s.canary + "\n") is s.canary_ok


async def test_a_cap_below_the_canary_line_fails_it() -> None:
    simulator, samples = await measured(FAST, 2, dataclasses.replace(SMALL, max_tokens=6))
    for s in samples:
        assert s.ok and s.metrics.output_tokens == 6 and s.canary_ok is False
        assert s.canary is not None and s.canary.startswith(truth_of(simulator, s).text("content").strip())


async def test_an_answer_cut_short_by_the_model_fails_and_a_broken_stream_has_no_verdict() -> None:
    _, short = await measured(dataclasses.replace(FAST, output_tokens=5), 2)
    assert [(s.ok, s.canary_ok) for s in short] == [(True, False)] * 2
    _, cut = await measured(dataclasses.replace(FAST, error="cut"), 2)
    assert [(s.error_kind, s.canary_ok) for s in cut] == [(ErrorKind.INCOMPLETE_STREAM, None)] * 2
    assert all(s.canary is not None for s in cut)  # asked, but no answer to judge


async def test_a_prompt_without_the_instruction_gets_plain_words() -> None:
    simulator = sim.Simulator(FAST)
    async with sim.serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        result = await run_workload([endpoint], BUILTIN["1k"], RunOptions(1, 1, LIMITS))
    assert result.samples[0].canary_ok is True
    prompt = chat_prompt([Message("user", "How fast is this endpoint?")], 10)
    assert prompt.canary is None
    sample = make_sample("run", endpoint, "file", result.samples[0].started_at, result.samples[0].timeline, prompt)
    assert (sample.canary, sample.canary_ok) == (None, None)  # a file's prompt asks for no canary


def test_the_scenario_keys_are_checked() -> None:
    assert from_table({"canary_wrong_after": 3}).canary_wrong_after == 3
    assert from_table({"canary_wrong_rate": 0.25}).canary_wrong_rate == 0.25
    with pytest.raises(SimulatorError, match="canary_wrong_after must be >= 0"):
        sim.Scenario(canary_wrong_after=-1)
    with pytest.raises(ValueError, match="canary_wrong_rate must be between 0 and 1"):
        from_table({"canary_wrong_rate": 2.0})


async def test_a_looping_model_fails_the_canary_though_its_answer_begins_right() -> None:
    """After 10 words the simulated model repeats one 8-word phrase to the cap: it began with the right line
    (the truth says so), and the verdict is still a fail; the same model without the loop passes."""
    looping = dataclasses.replace(FAST, loop_after_tokens=10, output_tokens=120)
    simulator, samples = await measured(looping, 2, dataclasses.replace(SMALL, max_tokens=120))
    for s in samples:
        assert s.ok and s.canary is not None
        assert truth_of(simulator, s).text("content").startswith(s.canary + "\n")
        assert s.canary_ok is False
    _, fine = await measured(
        dataclasses.replace(FAST, output_tokens=120), 2, dataclasses.replace(SMALL, max_tokens=120)
    )
    assert [s.canary_ok for s in fine] == [True, True]
