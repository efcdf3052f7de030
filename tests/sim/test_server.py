"""The simulator as a real server on a free port, read by the official openai client and by raw aiohttp."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import time
from typing import Any

import aiohttp
import openai
import pytest
from aiohttp import web
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam

from tests.simkit import FAST, MS, PROMPT, Raw, fast, only, post
from tokenpace.errors import SimulatorError
from tokenpace.prompts.tokens import count_tokens
from tokenpace.sim import NON_ASCII_WORDS, WORDS, Scenario, Simulator, Truth, serve, serve_forever

pytestmark = pytest.mark.usefixtures("quiet_server")
MESSAGES: list[ChatCompletionMessageParam] = [{"role": "user", "content": PROMPT}]


async def raw_chat(url: str, model: str = "sim", stream: bool = True, **extra: Any) -> Raw:
    return await post(f"{url}/chat/completions", {"model": model, "messages": MESSAGES, "stream": stream, **extra})


async def openai_stream(url: str, model: str = "sim", **extra: Any) -> list[ChatCompletionChunk]:
    async with openai.AsyncOpenAI(base_url=url, api_key="x") as client:
        stream = await client.chat.completions.create(
            model=model, messages=MESSAGES, stream=True, stream_options={"include_usage": True}, **extra
        )
        return [chunk async for chunk in stream]


def times(truth: Truth, *kinds: str) -> list[int]:
    return [t for t, kind, _ in truth.events if kind in kinds]


async def test_o200k_count_of_a_500_token_stream_equals_completion_tokens() -> None:
    sim = Simulator(Scenario(ttft_ms=0, tokens_per_s=100_000, output_tokens=500))
    async with serve(sim) as url:
        chunks = await openai_stream(url)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert chunks[-1].usage is not None
    assert count_tokens(text) == chunks[-1].usage.completion_tokens == only(sim).completion_tokens == 500


async def test_openai_client_stream_matches_truth() -> None:
    sim = Simulator(Scenario(ttft_ms=5, tokens_per_s=2000, output_tokens=30))
    async with serve(sim) as url:
        chunks = await openai_stream(url)
    truth = only(sim)
    assert {c.id for c in chunks} == {truth.id}
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == truth.text("content")
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    usage = chunks[-1].usage
    assert usage is not None and chunks[-1].choices == []
    assert (usage.prompt_tokens, usage.completion_tokens) == (truth.prompt_tokens, truth.completion_tokens)
    assert usage.completion_tokens == 30 and usage.prompt_tokens == count_tokens(PROMPT) > 0
    assert usage.total_tokens == usage.prompt_tokens + 30


async def test_openai_client_non_streaming_waits_the_whole_generation() -> None:
    sim = Simulator(Scenario(ttft_ms=20, tokens_per_s=1000, output_tokens=50, reasoning_tokens=10))
    async with serve(sim) as url, openai.AsyncOpenAI(base_url=url, api_key="x") as client:
        reply = await client.chat.completions.create(model="sim", messages=MESSAGES)
    truth = only(sim)
    assert reply.id == truth.id and reply.object == "chat.completion"
    assert reply.choices[0].message.content == truth.text("content")
    assert reply.choices[0].finish_reason == "stop"
    assert (reply.choices[0].message.model_extra or {})["reasoning_content"] == truth.text("reasoning")
    assert reply.usage is not None and reply.usage.completion_tokens == truth.completion_tokens == 60
    # sent when a stream would have sent its last token: 20 ms + 59 tokens at 1000/s
    assert times(truth, "content")[0] - truth.t_received_ns >= (20 + 59) * MS


async def test_raw_wire_format_and_truth_endpoint() -> None:
    sim = Simulator(fast(output_tokens=5))
    async with serve(sim) as url:
        raw = await raw_chat(url, model="sim")
        async with aiohttp.ClientSession() as session:
            rid = raw.headers["x-request-id"]
            async with session.get(url.removesuffix("/v1") + f"/sim/truth/{rid}") as r:
                assert r.status == 200
                doc = await r.json()
            async with session.get(url.removesuffix("/v1") + "/sim/truth/chatcmpl-nope") as r:
                assert r.status == 404 and "message" in (await r.json())["error"]
    assert raw.status == 200 and raw.headers["Content-Type"] == "text/event-stream"
    assert raw.payloads[-1] == "[DONE]"
    created = raw.chunks[0]["created"]
    head = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": "sim"}
    head["system_fingerprint"] = None

    def choice(delta: dict[str, str], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    truth = sim.truth[rid]
    words = [text for _, kind, text in truth.events if kind == "content"]
    expected = [choice({"role": "assistant", "content": ""}), *(choice({"content": w}) for w in words)]
    assert raw.chunks == [*expected, choice({}, "stop")]  # no usage: the request did not ask for it
    assert [kind for _, kind, _ in truth.events] == ["role"] + ["content"] * 5 + ["finish", "done"]
    # Each event left between its stamp and its write's return, and the next one's stamp came after that.
    sent = [t for t, _, _ in truth.events]
    assert len(truth.written) == len(sent) and all(t <= done for t, done in zip(sent, truth.written, strict=True))
    for (t, done), (t_next, _) in itertools.pairwise(zip(sent, truth.written, strict=True)):
        assert t_next == t or done <= t_next  # one write's events share their stamps
    assert Truth.from_dict(doc) == truth and doc == json.loads(json.dumps(truth.to_dict()))
    assert all(w in WORDS for w in words)


async def test_usage_chunk_follows_the_scenario_and_the_request() -> None:
    models = {"always": fast(usage="always"), "never": fast(usage="never")}
    async with serve(Simulator(FAST, models)) as url:
        asked = await raw_chat(url, stream_options={"include_usage": True})
        not_asked = await raw_chat(url)
        always = await raw_chat(url, "always")
        never = await raw_chat(url, "never", stream_options={"include_usage": True})
    for raw, due in ((asked, True), (not_asked, False), (always, True), (never, False)):
        last = raw.chunks[-1]
        assert (last["choices"] == [] and last["usage"]["completion_tokens"] == 20) is due
        assert all(("usage" in c) is due for c in raw.chunks)  # OpenAI adds "usage": null to every chunk


async def test_models_health_and_bad_requests() -> None:
    async with serve(Simulator(FAST, {"fast": FAST})) as url, aiohttp.ClientSession() as session:
        async with session.get(f"{url}/models") as r:
            assert [m["id"] for m in (await r.json())["data"]] == ["sim", "fast"]
        async with session.get(url.removesuffix("/v1") + "/health") as r:
            assert await r.json() == {"status": "ok"}
        bad_bodies: list[Any] = [b"{not json", {"model": "sim"}, {"messages": [], "max_tokens": 0}, [1]]
        for bad in bad_bodies:
            data = bad if isinstance(bad, bytes) else json.dumps(bad).encode()
            async with session.post(f"{url}/chat/completions", data=data) as r:
                error = (await r.json())["error"]
                assert r.status == 400 and error["type"] == "invalid_request_error" and error["message"]


async def test_api_key_is_required_when_set() -> None:
    sim = Simulator(FAST, api_key="sk-sim")
    async with serve(sim) as url, aiohttp.ClientSession() as session:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            async with session.post(f"{url}/chat/completions", json={"messages": []}, headers=headers) as r:
                assert r.status == 401 and (await r.json())["error"]["code"] == "invalid_api_key"
        async with openai.AsyncOpenAI(base_url=url, api_key="sk-sim") as client:
            reply = await client.chat.completions.create(model="sim", messages=MESSAGES)
            assert reply.choices[0].message.content
        with pytest.raises(openai.AuthenticationError):
            async with openai.AsyncOpenAI(base_url=url, api_key="wrong") as client:
                await client.chat.completions.create(model="sim", messages=MESSAGES)
    assert len(sim.truth) == 1


async def test_max_tokens_caps_output_and_reasoning_counts_toward_it() -> None:
    models = {"reasoner": fast(output_tokens=10, reasoning_tokens=5)}
    async with serve(Simulator(FAST, models)) as url:
        capped = await raw_chat(url, max_tokens=7, stream_options={"include_usage": True})
        both = await raw_chat(url, "reasoner", max_tokens=100, max_completion_tokens=8)
        uncapped = await raw_chat(url, max_tokens=500)
    assert len(capped.deltas()) == 7 and capped.chunks[-2]["choices"][0]["finish_reason"] == "length"
    assert capped.chunks[-1]["usage"]["completion_tokens"] == 7
    assert (len(both.deltas("reasoning_content")), len(both.deltas())) == (5, 3)
    assert both.chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert len(uncapped.deltas()) == 20 and uncapped.chunks[-1]["choices"][0]["finish_reason"] == "stop"


async def test_the_model_field_chooses_the_scenario() -> None:
    sim = Simulator(FAST, {"short": fast(output_tokens=3)})
    async with serve(sim) as url:
        short, unknown = await raw_chat(url, "short"), await raw_chat(url, "gpt-unknown")
    assert len(short.deltas()) == 3 and {c["model"] for c in short.chunks} == {"short"}
    assert len(unknown.deltas()) == 20 and {c["model"] for c in unknown.chunks} == {"gpt-unknown"}


@pytest.mark.parametrize(
    ("error", "status", "exception"),
    [("429", 429, openai.RateLimitError), ("500", 500, openai.InternalServerError)],
)
async def test_http_errors(error: str, status: int, exception: type[openai.APIStatusError]) -> None:
    sim = Simulator(Scenario(error=error))
    async with serve(sim) as url:
        raw = await raw_chat(url)
        with pytest.raises(exception):
            async with openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0) as client:
                await client.chat.completions.create(model="sim", messages=MESSAGES, stream=True)
    body = json.loads(raw.body)
    if error == "429":
        assert raw.headers["Retry-After"] == "1"
        assert body == {
            "error": {
                "message": "Rate limit reached for requests",
                "type": "rate_limit_error",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        }
    else:
        assert body["error"]["type"] == "server_error" and body["error"]["code"] is None
    assert raw.status == status and raw.headers["x-request-id"] in sim.truth
    assert [kind for _, kind, _ in sim.truth[raw.headers["x-request-id"]].events] == ["error"]


async def test_malformed_event_midway_then_the_stream_goes_on() -> None:
    async with serve(Simulator(fast(error="malformed"))) as url:
        raw = await raw_chat(url)
    broken = [i for i, p in enumerate(raw.payloads) if p.startswith("{") and not _parses(p)]
    assert len(broken) == 1 and raw.payloads[broken[0]] == '{"choices": [{"delta": {"content": "x"'
    assert broken[0] == 1 + 10  # role chunk, then half of the 20 tokens
    assert raw.payloads[-1] == "[DONE]"
    good = [json.loads(p) for p in raw.payloads if _parses(p) and p != "[DONE]"]
    assert sum("content" in c["choices"][0]["delta"] for c in good) == 21  # role chunk's "" + 20 tokens


def _parses(payload: str) -> bool:
    try:
        json.loads(payload)
    except ValueError:
        return False
    return True


async def test_cut_drops_the_connection_midway() -> None:
    sim = Simulator(fast(error="cut"))
    async with serve(sim) as url:
        raw = await raw_chat(url)
    assert isinstance(raw.error, aiohttp.ClientPayloadError)
    assert "[DONE]" not in raw.payloads and len(raw.deltas()) == 10
    assert [kind for _, kind, _ in only(sim).events] == ["role"] + ["content"] * 10
    assert only(sim).completion_tokens == 10


async def test_endless_keeps_going_until_the_client_leaves() -> None:
    sim = Simulator(Scenario(ttft_ms=0, tokens_per_s=1000, output_tokens=5, error="endless"))
    async with serve(sim) as url, aiohttp.ClientSession() as session:
        body = {"model": "sim", "messages": MESSAGES, "stream": True}
        async with session.post(f"{url}/chat/completions", json=body) as r:
            seen = 0
            async for line in r.content:
                seen += line.startswith(b'data: {"id"')
                if seen > 40:
                    break
        await asyncio.sleep(0.05)
        stopped_at = only(sim).completion_tokens
        await asyncio.sleep(0.1)  # 100 more tokens would be due if the handler were still running
    assert 40 <= stopped_at == only(sim).completion_tokens < 100
    assert {kind for _, kind, _ in only(sim).events} == {"role", "content"}


async def test_app_on_a_plain_runner_lets_disconnected_clients_go_quietly() -> None:
    """Without serve()'s handler cancellation, the next write notices the client is gone."""
    sim = Simulator(Scenario(ttft_ms=0, tokens_per_s=1000, error="endless"))
    runner = web.AppRunner(sim.app())
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
        async with aiohttp.ClientSession() as session:
            body = {"model": "sim", "messages": MESSAGES, "stream": True}
            async with session.post(f"{url}/chat/completions", json=body) as r:
                await r.content.readline()
        await asyncio.sleep(0.05)
        stopped_at = only(sim).completion_tokens
        await asyncio.sleep(0.05)
        assert stopped_at == only(sim).completion_tokens < 50
    finally:
        await runner.cleanup()


async def test_midstream_error_event_ends_the_stream() -> None:
    async with serve(Simulator(fast(error="midstream"))) as url:
        raw = await raw_chat(url)
    assert raw.error is None and "[DONE]" not in raw.payloads
    error = {"error": {"message": "upstream overloaded", "type": "server_error"}}
    assert json.loads(raw.payloads[-1]) == error
    assert len(raw.deltas()) == 10


async def test_failures_without_streaming() -> None:
    models = {e: fast(error=e) for e in ("malformed", "midstream", "cut")}
    async with serve(Simulator(FAST, models)) as url:
        malformed = await raw_chat(url, "malformed", stream=False)
        midstream = await raw_chat(url, "midstream", stream=False)
        with pytest.raises(aiohttp.ServerDisconnectedError):
            await raw_chat(url, "cut", stream=False)
    assert malformed.status == 200 and not _parses(malformed.body.decode())
    assert midstream.status == 500 and json.loads(midstream.body)["error"]["message"] == "upstream overloaded"


async def test_error_rate_is_seeded_and_reproducible() -> None:
    statuses = []
    for _ in range(2):
        async with serve(Simulator(fast(error="429", error_rate=0.5, seed=7))) as url:
            statuses.append([(await raw_chat(url, stream=False)).status for _ in range(16)])
    assert statuses[0] == statuses[1] and set(statuses[0]) == {200, 429}


async def test_same_seed_same_text() -> None:
    texts = []
    for seed in (1, 1, 2):
        sim = Simulator(fast(seed=seed))
        async with serve(sim) as url:
            await raw_chat(url)
        texts.append(only(sim).text())
    assert texts[0] == texts[1] != texts[2]


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_comes_before_content_in_the_configured_field(field: str) -> None:
    sim = Simulator(fast(reasoning_tokens=4, output_tokens=3, reasoning_field=field))
    async with serve(sim) as url:
        raw = await raw_chat(url, stream_options={"include_usage": True})
    keys = [next(iter(c["choices"][0]["delta"])) for c in raw.chunks[1:-2]]
    assert keys == [field] * 4 + ["content"] * 3
    assert raw.chunks[-1]["usage"]["completion_tokens"] == 7
    assert raw.chunks[-1]["usage"]["completion_tokens_details"] == {"reasoning_tokens": 4}
    assert "".join(raw.deltas(field)) == only(sim).text("reasoning")


async def test_final_burst_sends_the_rest_in_one_last_chunk() -> None:
    sim = Simulator(Scenario(ttft_ms=0, tokens_per_s=500, output_tokens=20, final_burst=True))
    async with serve(sim) as url:
        raw = await raw_chat(url)
    assert [count_tokens(d) for d in raw.deltas()] == [1, 19]  # the first token, then the burst
    truth = only(sim)
    assert truth.events[-3][1] == "content"  # the burst is the last token event
    assert truth.events[-3][0] - truth.t_received_ns >= 19 * 2 * MS  # held back until the last token was due


async def test_tokens_per_chunk() -> None:
    sim = Simulator(fast(output_tokens=10, tokens_per_chunk=3))
    async with serve(sim) as url:
        raw = await raw_chat(url, stream_options={"include_usage": True})
    assert [count_tokens(d) for d in raw.deltas()] == [3, 3, 3, 1]
    assert raw.chunks[-1]["usage"]["completion_tokens"] == 10


async def test_ttft_is_honoured() -> None:
    sim = Simulator(Scenario(ttft_ms=100, tokens_per_s=1000, output_tokens=3))
    async with serve(sim) as url:
        await raw_chat(url)
    truth = only(sim)
    role, first = times(truth, "role")[0], times(truth, "content")[0]
    assert role - truth.t_received_ns < 30 * MS  # the role chunk goes out at once
    assert 100 * MS <= first - truth.t_received_ns < 180 * MS


async def test_rate_is_honoured_without_drift() -> None:
    # 100 tokens due every 5 ms. The test stalls the loop for 150 ms after token 10, as a loaded machine does at
    # random: on the absolute schedule the tokens due meanwhile go out at once and the stream is back on time.
    # Sleeping 5 ms after each send instead would be late by the stall (and more) to the end; both are read off
    # the simulator's own send times, which no load can make early.
    sim = Simulator(Scenario(ttft_ms=0, tokens_per_s=200, output_tokens=100))
    async with serve(sim) as url:
        reply = asyncio.create_task(raw_chat(url))
        while not sim.truth or only(sim).completion_tokens < 10:  # noqa: ASYNC110 - the stream is being served
            await asyncio.sleep(0.001)
        time.sleep(0.15)  # noqa: ASYNC251 - the point: on the loop's thread, the simulator cannot send meanwhile
        await reply
    truth = only(sim)
    sent = times(truth, "content")
    late_ms = [(t - truth.t_received_ns) / MS - k * 5 for k, t in enumerate(sent)]
    assert len(sent) == 100 and min(late_ms) >= 0  # never early: never faster than 200 tok/s
    gaps = [(b - a) / MS for a, b in itertools.pairwise(sent)]
    assert sum(g < 1 for g in gaps) >= 20  # the ~30 tokens due in the stall went out back to back
    assert min(late_ms[-20:]) < 75  # and the stream caught up: a drifting one is >= 150 ms late here


async def test_stall_pauses_once() -> None:
    sim = Simulator(Scenario(ttft_ms=0, tokens_per_s=1000, output_tokens=8, stall_after_tokens=3, stall_ms=150.0))
    async with serve(sim) as url:
        await raw_chat(url)
    sent = times(only(sim), "content")
    gaps = [(b - a) / MS for a, b in itertools.pairwise(sent)]
    assert sent[3] - only(sim).t_received_ns >= (3 + 150) * MS  # on schedule: a late token 3 shortens the gap
    assert gaps[2] > 100 and max(gaps[:2] + gaps[3:]) < 50


async def test_jitter_spreads_gaps_around_the_schedule() -> None:
    sim = Simulator(Scenario(ttft_ms=0, tokens_per_s=100, output_tokens=30, jitter_ms=4, seed=3))
    async with serve(sim) as url:
        await raw_chat(url)
    sent = times(only(sim), "content")
    gaps = [(b - a) / MS for a, b in itertools.pairwise(sent)]
    assert min(gaps) < 7 and max(gaps) > 13  # 10 ms +- up to 8 ms
    # absolute targets: the last is due 290 +- 4 ms after the first token's target, the jitter does not add up
    assert 290 - 4 <= (sent[-1] - only(sim).t_received_ns) / MS < 290 + 60


async def test_non_ascii_text_survives_the_openai_client() -> None:
    sim = Simulator(fast(output_tokens=40, non_ascii=True))
    async with serve(sim) as url:
        chunks = await openai_stream(url)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == only(sim).text("content") and not text.isascii()
    assert [w for w in text.split(" ")[1:] if " " + w not in NON_ASCII_WORDS] == []
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 40


async def test_serve_forever_serves_until_cancelled() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    task = asyncio.create_task(serve_forever(Simulator(FAST), "127.0.0.1", port))
    async with aiohttp.ClientSession() as session:
        deadline = time.monotonic() + 2
        while True:
            try:
                async with session.get(f"http://127.0.0.1:{port}/health") as r:
                    assert await r.json() == {"status": "ok"}
                    break
            except aiohttp.ClientConnectionError:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        with pytest.raises(aiohttp.ClientConnectionError):
            async with session.get(f"http://127.0.0.1:{port}/health"):
                pass


async def test_a_port_in_use_is_a_simulator_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(SimulatorError, match="choose another port"):
            async with serve(Simulator(), port=int(taken.getsockname()[1])):
                pass


async def test_prefill_rate_makes_ttft_grow_with_the_prompt() -> None:
    scenario = Scenario(ttft_ms=20, prefill_tokens_per_s=20_000, tokens_per_s=1000, output_tokens=2)
    simulator = Simulator(scenario)
    firsts = []
    async with serve(simulator) as url, aiohttp.ClientSession() as session:
        for words in (10, 4000):
            body = {"model": "sim", "stream": True, "messages": [{"role": "user", "content": " the" * words}]}
            async with session.post(f"{url}/chat/completions", json=body) as resp:
                await resp.read()
                truth = simulator.truth[resp.headers["x-request-id"]]
            first = next(t for t, kind, _ in truth.events if kind == "content")
            firsts.append((truth.prompt_tokens, (first - truth.t_received_ns) / 1e6))
    (small_tokens, small_ms), (big_tokens, big_ms) = firsts
    assert small_tokens == 10 and big_tokens == 4000
    assert small_ms >= 20 + 10 / 20
    assert big_ms >= 20 + 4000 / 20  # 200 ms of prefill
    assert big_ms - small_ms == pytest.approx((4000 - 10) / 20, abs=40)


async def test_a_long_running_simulator_keeps_only_its_latest_truths() -> None:
    """Under serve a simulator runs for weeks: it keeps its last N truths, not 100k requests of 16 kB each."""
    assert Simulator().truth_kept == 1_000  # what serve's in-process simulators and `tokenpace sim` keep
    sim = Simulator(FAST, truth_kept=5)
    async with serve(sim) as url:
        ids = [(await raw_chat(url)).headers["x-request-id"] for _ in range(12)]
        async with aiohttp.ClientSession() as session:
            root = url.removesuffix("/v1")
            statuses = [(await session.get(f"{root}/sim/truth/{i}")).status for i in (ids[0], ids[-1])]
    assert list(sim.truth) == ids[-5:] and statuses == [404, 200]  # the oldest are forgotten
    one = len(json.dumps(sim.truth[ids[-1]].to_dict()))
    assert sum(len(json.dumps(t.to_dict())) for t in sim.truth.values()) <= 5 * one * 1.1  # size: N of them
    with pytest.raises(SimulatorError, match="truth_kept"):
        Simulator(truth_kept=0)


async def test_max_streams_queues_requests_beyond_the_capacity() -> None:
    # 2 slots, 6 requests of ~95 ms each at once (50 ms TTFT, 9 gaps of 5 ms): three waves, each starting when
    # the wave before has ended. Read off the simulator's send times, which a loaded machine can only make later.
    simulator = Simulator(fast(ttft_ms=50, tokens_per_s=200, output_tokens=10, max_streams=2))
    async with serve(simulator) as url:
        await asyncio.gather(*(raw_chat(url) for _ in range(6)))
    spans = sorted(
        (min(t for t, kind, _ in truth.events if kind == "content") - truth.t_received_ns,
         max(t for t, _, _ in truth.events) - truth.t_received_ns)
        for truth in simulator.truth.values()
    )  # fmt: skip
    firsts = [first / MS for first, _ in spans]
    # Never early: the first wave at 50 ms, the second after a whole stream (95) and its own TTFT, the third
    # after two whole streams; no slot is free sooner (without the cap all six come at 50 ms).
    assert firsts[0] >= 50 and firsts[2] >= 95 + 50 and firsts[4] >= 2 * 95 + 50, firsts
    # Two at a time, never more: from first token to last event (inside each stream's slot), two overlap.
    edges = sorted([(first, 1) for first, _ in spans] + [(last, -1) for _, last in spans], key=lambda e: (e[0], e[1]))
    assert max(itertools.accumulate(step for _, step in edges)) == 2


async def test_max_requests_per_s_begins_requests_on_a_schedule_of_its_own() -> None:
    # 20 requests/s: five sent at once begin 50 ms apart, each TTFT (10 ms) counted from its begin; the wait is
    # queueing, not a cold start. The schedule is the simulator's, so its capacity is exact however busy it is.
    simulator = Simulator(fast(ttft_ms=10, tokens_per_s=1000, output_tokens=2, max_requests_per_s=20))
    async with serve(simulator) as url:
        await asyncio.gather(*(raw_chat(url) for _ in range(5)))
        await asyncio.sleep(0.06)  # past the last one's slot (the fifth began at 200 ms, the next could at 250)
        await raw_chat(url)  # the queue drained: begins at once
    truths = sorted(simulator.truth.values(), key=lambda t: t.t_received_ns)
    firsts = sorted(min(t for t, kind, _ in truth.events if kind == "content") for truth in truths[:5])
    start = min(t.t_received_ns for t in truths[:5])
    assert all(first - start >= (10 + 50 * i) * MS for i, first in enumerate(firsts)), firsts
    assert all(truth.cold_start_ms == 0 for truth in truths)
    late = truths[-1]
    assert min(t for t, kind, _ in late.events if kind == "content") - late.t_received_ns < 45 * MS
    with pytest.raises(SimulatorError, match="max_requests_per_s must be > 0"):
        Scenario(max_requests_per_s=0)


def test_max_streams_must_be_positive() -> None:
    with pytest.raises(SimulatorError, match="max_streams must be >= 1"):
        Scenario(max_streams=0)


async def test_counting_a_long_prompt_leaves_the_loop_free_for_other_requests() -> None:
    """Prompt tokens are counted off the event loop: a burst of long prompts must not hold back other handlers.

    Seen from the loop that also runs the server: while the long prompt is being counted, its truth already
    exists with no count yet, and the loop keeps running (this test's own polling is a task on it).
    """
    sim = Simulator(fast(output_tokens=1))
    prompt = " the speed of light" * 100_000  # 400k tokens: a count of tens of milliseconds at least
    async with serve(sim) as url:
        body = {"model": "sim", "stream": True, "messages": [{"role": "user", "content": prompt}]}
        request = asyncio.create_task(post(f"{url}/chat/completions", body))
        seen_uncounted = False
        while not request.done():
            seen_uncounted |= any(t.prompt_tokens == 0 for t in sim.truth.values())
            await asyncio.sleep(0)
        raw = await request
    assert raw.status == 200 and raw.deltas() == [only(sim).text("content")]
    assert seen_uncounted  # a count on the loop would have finished before this loop could look
    assert only(sim).prompt_tokens == count_tokens(prompt) == 400_000
