"""Every protocol's client measured against the simulator's ground truth, and every error kind per protocol."""

from __future__ import annotations

import pytest

from tests.simkit import served
from tokenpace import sim
from tokenpace.clients import protocol_for
from tokenpace.clients.transport import Timeouts
from tokenpace.config.endpoints import PROTOCOLS, Endpoint
from tokenpace.config.presets import ProtocolName
from tokenpace.config.workloads import BUILTIN
from tokenpace.errors import ConfigError
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.sample import Sample
from tokenpace.measure.timing import EventKind

MS = 1_000_000
FAST = Timeouts(connect=2, first_token=5, idle=5, total=10)


async def take(protocol: ProtocolName, scenario: sim.Scenario, workload: str = "1k") -> tuple[Sample, sim.Truth]:
    """One request in ``protocol`` to a fresh simulator, and the truth of what it sent."""
    simulator = sim.Simulator(scenario)
    async with sim.serve(simulator) as url:
        base = url.removesuffix("/v1") + protocol_for(protocol).default_base
        endpoint = Endpoint("sim", "sim", base, protocol=protocol, simulated=True)
        (sample,) = (await run_workload([endpoint], BUILTIN[workload], RunOptions(1, 1, FAST))).samples
    (truth,) = simulator.truth.values()
    return sample, truth


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_timing_text_and_usage_match_the_truth(protocol: ProtocolName) -> None:
    reasoning = 0 if protocol == "openai-completions" else 6  # legacy Completions has no reasoning channel
    scenario = sim.Scenario(ttft_ms=60, tokens_per_s=300, output_tokens=60, reasoning_tokens=reasoning)
    s, truth = await take(protocol, scenario)
    assert s.ok, s.error_message
    assert s.timeline.text(EventKind.CONTENT) == truth.text("content")
    assert s.timeline.text(EventKind.REASONING) == truth.text("reasoning")
    assert s.metrics.output_tokens == truth.completion_tokens == 60 + reasoning
    assert s.metrics.reasoning_tokens == reasoning
    assert s.input_tokens == truth.prompt_tokens
    # Preambles (role chunks, message_start, ping, response.created, empty parts) go out at once and never count
    # as the token: the client's first token is the simulator's first, and its TTFT is never under the one the
    # simulator served (which a loaded machine makes later than the scenario's 60 ms: the truth is the measure).
    ttft, speed = served(truth)
    first_sent, first_text = next((t, text) for t, kind, text in truth.events if kind in ("reasoning", "content"))
    first_seen = s.timeline.token_events[0]
    assert first_seen.text == first_text and first_seen.t_ns >= first_sent
    assert ttft >= 60 and s.metrics.ttft_ms is not None and ttft <= s.metrics.ttft_ms < ttft + 50
    assert speed is not None and s.metrics.output_speed == pytest.approx(speed, rel=0.3)
    assert s.metrics.provider_output_tokens == 60 + reasoning


@pytest.mark.parametrize("protocol", ["openai-chat", "anthropic"])  # thinking as a field, and as a block of its own
async def test_end_to_end_for_500_tokens_is_within_2_percent_of_the_truth(protocol: ProtocolName) -> None:
    """Issue 31, 2a: TTFT + thinking time + 500 / output speed, the thinking time measured on the request itself,
    against what the scenario sets: TTFT + reasoning tokens / speed + 500 / speed. Long enough (6.4 s, 2 % of it
    128 ms; the speed over 4 s) that a loaded machine's lateness stays well inside the tolerance."""
    scenario = sim.Scenario(
        ttft_ms=400, tokens_per_s=125, reasoning_tokens=250, output_tokens=250, tokens_per_chunk=5
    )  # fmt: skip
    s, truth = await take(protocol, scenario)
    assert s.ok, s.error_message
    assert s.metrics.reasoning_tokens == 250 and s.metrics.output_tokens == 500  # thinking streamed, all counted
    ms_per_token = 1000 / scenario.tokens_per_s
    thinking = scenario.reasoning_tokens * ms_per_token  # 2 s: the answer's first chunk is due 250 tokens later
    e2e500 = scenario.ttft_ms + thinking + 500 * ms_per_token
    measured = s.metrics.e2e500_ms
    assert measured is not None and measured == pytest.approx(e2e500, rel=0.02)
    # Thinking alone is the gap between two arrivals, each late by its own load: judged more loosely.
    assert s.metrics.thinking_ms == pytest.approx(thinking, abs=100)
    assert s.metrics.t100_ms is not None and s.metrics.t100_ms < measured  # the figure it stands beside
    # And against what the simulator really sent, late or not: TTFT + thinking is its first answer token's time.
    _, served_speed = served(truth)
    assert served_speed is not None
    first_answer = next(t for t, kind, _ in truth.events if kind == "content")
    sent = (first_answer - truth.t_received_ns) / MS + 500 / served_speed * 1000
    assert measured == pytest.approx(sent, rel=0.02)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_vision_prompt_reaches_the_server(protocol: ProtocolName) -> None:
    if protocol == "openai-completions":  # text only: refused before anything is sent, not silently dropped
        with pytest.raises(ConfigError, match="image"):
            await take(protocol, sim.Scenario(), "vision")
        return
    s, truth = await take(protocol, sim.Scenario(ttft_ms=5, tokens_per_s=2000, output_tokens=5), "vision")
    assert s.ok, s.error_message
    assert s.image_pixels == 1200 * 840
    assert s.input_tokens == truth.prompt_tokens  # the text part arrived whole beside the image


ERROR_CASES = [
    ("429", ErrorKind.RATE_LIMITED),
    ("500", ErrorKind.HTTP_ERROR),
    ("midstream", ErrorKind.STREAM_ERROR),
    ("malformed", ErrorKind.MALFORMED_STREAM),
    ("cut", ErrorKind.INCOMPLETE_STREAM),
]


@pytest.mark.parametrize(("error", "kind"), ERROR_CASES, ids=[e for e, _ in ERROR_CASES])
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_every_error_kind_in_every_protocol(protocol: ProtocolName, error: str, kind: ErrorKind) -> None:
    s, _ = await take(protocol, sim.Scenario(error=error, ttft_ms=5, tokens_per_s=1000, output_tokens=20))
    assert s.error_kind is kind, s.error_message
    assert s.error_message and "\n" not in s.error_message


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_timeouts_in_every_protocol(protocol: ProtocolName) -> None:
    simulator = sim.Simulator(sim.Scenario(ttft_ms=3000))
    async with sim.serve(simulator) as url:
        base = url.removesuffix("/v1") + protocol_for(protocol).default_base
        endpoint = Endpoint("sim", "sim", base, protocol=protocol, simulated=True)
        plan = RunOptions(1, 1, Timeouts(connect=2, first_token=0.3, idle=5, total=10))
        (s,) = (await run_workload([endpoint], BUILTIN["1k"], plan)).samples
    assert s.error_kind is ErrorKind.FIRST_TOKEN_TIMEOUT, s.error_message


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_official_sdk_gets_what_tokenpace_measured(protocol: ProtocolName) -> None:
    """Two simulators with one scenario send the same first stream: one to the SDK, one to tokenpace."""
    from tests.sim.test_protocols import sdk

    scenario = sim.Scenario(ttft_ms=5, tokens_per_s=2000, output_tokens=40, non_ascii=True, seed=7)
    async with sim.serve(sim.Simulator(scenario)) as url:
        theirs = await sdk(protocol, url)
    ours, _ = await take(protocol, scenario)
    assert ours.ok, ours.error_message
    # tokenpace's fresh prompt asks for the canary's line first, the SDK's plain one does not: then the same words.
    line, words = ours.timeline.text(EventKind.CONTENT).split("\n", 1)
    assert line == ours.canary and ours.canary_ok
    assert theirs.content.startswith(words) and words != ""
    assert theirs.usage is not None and theirs.usage[1] == ours.metrics.provider_output_tokens


async def test_every_sample_carries_the_servers_id() -> None:
    # Ollama's stream has no id: the x-request-id header stands in, so samples match server logs.
    s, truth = await take("ollama", sim.Scenario(ttft_ms=5, tokens_per_s=2000, output_tokens=5))
    assert s.timeline.response_id == truth.id
