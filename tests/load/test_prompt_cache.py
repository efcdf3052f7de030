# ruff: noqa: E501  (the wire fixtures are protocol lines, as long as providers send them)
"""Prompt-cache truth: the provider's cached-token count read in every protocol, and the cached-10k pairs.

The simulator's prefix cache decides what is cached and records it in its truth; what the client decoded is
compared with that, request by request.
"""

from __future__ import annotations

import json
import statistics

import pytest

from tests.simkit import served
from tokenpace import sim
from tokenpace.clients import protocol_for
from tokenpace.clients.transport import Timeouts
from tokenpace.config.endpoints import PROTOCOLS, Endpoint
from tokenpace.config.presets import ProtocolName
from tokenpace.config.workloads import BUILTIN
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.measure.sample import Sample
from tokenpace.measure.timing import Recording
from tokenpace.prompts.prompt import build_prompt, build_turns

FAST = Timeouts(connect=2, first_token=20, idle=20, total=60)
CACHED = BUILTIN["cached-10k"]


def endpoint(url: str, protocol: ProtocolName) -> Endpoint:
    base = url.removesuffix("/v1") + protocol_for(protocol).default_base
    return Endpoint("sim", "sim", base, protocol=protocol, simulated=True)


async def pairs(scenario: sim.Scenario, protocol: ProtocolName, requests: int) -> tuple[list[Sample], sim.Simulator]:
    simulator = sim.Simulator(scenario)
    async with sim.serve(simulator) as url:
        result = await run_workload([endpoint(url, protocol)], CACHED, RunOptions(requests, 1, FAST))
    return sorted(result.samples, key=lambda s: s.started_at), simulator


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_cached_count_is_read_in_every_protocol_as_the_server_served_it(protocol: ProtocolName) -> None:
    scenario = sim.Scenario(ttft_ms=0, tokens_per_s=5000, output_tokens=5, prefix_cache=True)
    (cold, warm), simulator = await pairs(scenario, protocol, 2)
    if protocol == "ollama":  # its API has no cached field: the server cached, the client cannot tell
        assert [t.cached_tokens > 9000 for t in simulator.truth.values()] == [False, True]
        assert cold.metrics.provider_cached_tokens is None and warm.metrics.provider_cached_tokens is None
        assert not cold.cached and not warm.cached
        return
    first, second = (simulator.truth[s.timeline.response_id or ""] for s in (cold, warm))
    assert first.cached_tokens == 0 and second.cached_tokens > 9000  # all but the last block of the prefix
    assert (cold.prefix_turn, warm.prefix_turn) == (1, 2)
    assert not cold.cached and warm.cached
    assert cold.metrics.provider_cached_tokens in (0, None)  # Gemini leaves the field out when nothing was cached
    assert warm.metrics.provider_cached_tokens == second.cached_tokens
    # Anthropic's input_tokens leave the cache reads out: the stored input count is the whole prompt all the same.
    assert warm.metrics.provider_input_tokens == second.prompt_tokens == warm.input_tokens


async def test_a_pair_is_sent_turn_after_turn_and_pairs_share_no_prefix() -> None:
    scenario = sim.Scenario(ttft_ms=0, tokens_per_s=5000, output_tokens=5, prefix_cache=True)
    samples, simulator = await pairs(scenario, "openai-chat", 4)
    assert [s.prefix_turn for s in samples] == [1, 2, 1, 2]
    assert [s.cached for s in samples] == [False, True, False, True]  # a new pair's prefix is new to the cache
    assert samples[0].group_id == samples[1].group_id != samples[2].group_id == samples[3].group_id
    truth = {s.id: simulator.truth[s.timeline.response_id or ""] for s in samples}
    for cold, warm in (samples[:2], samples[2:]):
        assert cold.prompt_fingerprint != warm.prompt_fingerprint  # a different task at the end
        last_sent = max(t for t, _, _ in truth[cold.id].events)
        assert truth[warm.id].t_received_ns > last_sent  # sent once turn 1 had ended
    assert {t.prompt_tokens for t in simulator.truth.values()} <= set(range(9800, 10200))


async def test_warm_ttft_is_below_cold_by_the_prefill_the_cache_saved() -> None:
    prefill = 50_000  # tokens/s: 10k tokens take 200 ms to prefill cold, a few ms warm
    scenario = sim.Scenario(ttft_ms=20, prefill_tokens_per_s=prefill, tokens_per_s=2000, output_tokens=5, prefix_cache=True)  # fmt: skip
    samples, simulator = await pairs(scenario, "openai-chat", 6)
    truths = [simulator.truth[s.timeline.response_id or ""] for s in samples]
    for s, truth in zip(samples, truths, strict=True):  # the client's TTFT is the one the server served
        assert s.metrics.ttft_ms == pytest.approx(served(truth)[0], abs=25)
    cold = statistics.median(s.metrics.ttft_ms or 0 for s in samples if s.prefix_turn == 1)
    warm = statistics.median(s.metrics.ttft_ms or 0 for s in samples if s.prefix_turn == 2)
    saved = statistics.median(t.cached_tokens for t in truths[1::2]) / prefill * 1000
    assert warm < cold
    assert cold - warm == pytest.approx(saved, abs=60)


def shared(a: str, b: str) -> int:
    """Characters ``a`` and ``b`` have in common at their start."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


@pytest.mark.parametrize(("requests", "concurrency"), [(10, 3), (5, 2), (6, 4)])
async def test_pairs_stay_whole_at_any_concurrency_and_an_odd_count_ends_on_a_first_turn(
    requests: int, concurrency: int
) -> None:
    scenario = sim.Scenario(ttft_ms=0, tokens_per_s=5000, output_tokens=5, prefix_cache=True)
    async with sim.serve(sim.Simulator(scenario)) as url:
        options = RunOptions(requests, concurrency, FAST)
        result = await run_workload([endpoint(url, "openai-chat")], CACHED, options)
    assert len(result.samples) == result.run.requested == result.run.completed == requests
    assert all(s.ok for s in result.samples)
    turns: dict[str | None, list[int | None]] = {}
    for s in sorted(result.samples, key=lambda s: s.started_at):
        turns.setdefault(s.group_id, []).append(s.prefix_turn)
    assert sorted(turns.values()) == sorted([[1, 2]] * (requests // 2) + [[1]] * (requests % 2))


def test_a_pairs_turns_share_their_prefix_to_the_character() -> None:
    (one, two), other = build_turns(CACHED, 7), build_prompt(CACHED, 8)
    a, b = one.messages[0].text, two.messages[0].text
    assert shared(a, b) > 0.98 * len(a) and a != b and one.task != two.task
    assert shared(a, other.messages[0].text) < 4  # another pair: its own nonce
    assert abs(one.input_tokens - 10_000) <= 200 and abs(two.input_tokens - 10_000) <= 200


# A cached count that is no count is refused (None) and kept raw for the record, in every protocol's field.
_HOSTILE = {
    "openai-chat": 'data: {{"choices":[{{"delta":{{"content":"hi"}},"finish_reason":"stop"}}]}}\n\n'
    'data: {{"choices":[],"usage":{{"prompt_tokens":10,"completion_tokens":1,"prompt_tokens_details":{{"cached_tokens":{v}}}}}}}\n\n'
    "data: [DONE]\n\n",
    "openai-responses": 'event: response.output_text.delta\ndata: {{"type":"response.output_text.delta","delta":"hi"}}\n\n'
    'event: response.completed\ndata: {{"type":"response.completed","response":{{"usage":{{"input_tokens":10,"output_tokens":1,"input_tokens_details":{{"cached_tokens":{v}}}}}}}}}\n\n',
    "anthropic": 'event: message_start\ndata: {{"type":"message_start","message":{{"id":"m","usage":{{"input_tokens":10,"cache_read_input_tokens":{v}}}}}}}\n\n'
    'event: content_block_delta\ndata: {{"type":"content_block_delta","delta":{{"type":"text_delta","text":"hi"}}}}\n\n'
    'event: message_delta\ndata: {{"type":"message_delta","delta":{{"stop_reason":"end_turn"}},"usage":{{"output_tokens":1}}}}\n\n'
    'event: message_stop\ndata: {{"type":"message_stop"}}\n\n',
    "gemini": 'data: {{"candidates":[{{"content":{{"parts":[{{"text":"hi"}}]}},"finishReason":"STOP"}}],"usageMetadata":{{"promptTokenCount":10,"candidatesTokenCount":1,"cachedContentTokenCount":{v}}}}}\r\n\r\n',
}  # fmt: skip
_FIELD = {"openai-chat": "cached_tokens", "openai-responses": "cached_tokens", "anthropic": "cache_read_input_tokens",
          "gemini": "cachedContentTokenCount"}  # fmt: skip


@pytest.mark.parametrize("protocol", sorted(_HOSTILE))
@pytest.mark.parametrize("value", ["-1", '"9"', "true", "1e12", "2.5", "[1]"])
def test_a_hostile_cached_count_is_refused_and_kept_raw(protocol: ProtocolName, value: str) -> None:
    raw = _HOSTILE[protocol].format(v=value).encode()
    rec = Recording(t_start_ns=0, t_sent_ns=0, t_headers_ns=1, t_end_ns=3, http_status=200, chunks=[(2, raw)])
    timeline = protocol_for(protocol).decode(rec)
    assert timeline.failure is None, timeline.failure
    assert timeline.usage is not None and timeline.usage.cached_tokens is None
    assert timeline.usage.input_tokens == 10  # the other counts are kept
    assert timeline.usage_raw == {_FIELD[protocol]: json.dumps(json.loads(value))}


@pytest.mark.parametrize("protocol", sorted(_HOSTILE))
def test_a_sane_cached_count_is_read(protocol: ProtocolName) -> None:
    raw = _HOSTILE[protocol].format(v="6").encode()
    rec = Recording(t_start_ns=0, t_sent_ns=0, t_headers_ns=1, t_end_ns=3, http_status=200, chunks=[(2, raw)])
    usage = protocol_for(protocol).decode(rec).usage
    assert usage is not None and usage.cached_tokens == 6
    assert usage.input_tokens == (16 if protocol == "anthropic" else 10)  # Anthropic's 10 leave the 6 out
