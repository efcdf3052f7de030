"""Every protocol the simulator speaks, read by that provider's official SDK and by raw aiohttp, against the truth."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import anthropic
import httpx
import httpx2
import ollama
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from tests.simkit import FAST, MS, PROMPT, Raw, fast, only, post
from tokenpace.config.endpoints import PROTOCOLS
from tokenpace.prompts.tokens import count_tokens
from tokenpace.sim import NON_ASCII_WORDS, Scenario, Simulator, Truth, serve

pytestmark = pytest.mark.usefixtures("quiet_server")
KEY = "sk-sim"
# (finish when complete, finish when the token cap cut it short), as each protocol spells them
FINISH = {
    "openai-chat": ("stop", "length"),
    "openai-completions": ("stop", "length"),
    "openai-responses": ("completed", "max_output_tokens"),
    "anthropic": ("end_turn", "max_tokens"),
    "ollama": ("stop", "length"),
    "gemini": ("STOP", "MAX_TOKENS"),
}
TERMINATOR = {
    "openai-chat": "[DONE]",
    "openai-completions": "[DONE]",
    "openai-responses": "response.completed",
    "anthropic": "message_stop",
    "ollama": "done",
    "gemini": None,
}


def only_first(sim: Simulator) -> Truth:
    return next(iter(sim.truth.values()))


def kinds(truth: Truth) -> list[str]:
    return [kind for _, kind, _ in truth.events]


def times_of(truth: Truth, *wanted: str) -> list[int]:
    return [t for t, kind, _ in truth.events if kind in wanted]


# --- the official SDKs -------------------------------------------------------------------------------------------


@dataclass
class Got:
    """What an official SDK assembled from one stream."""

    content: str = ""
    reasoning: str = ""
    finish: str | None = None
    usage: tuple[int | None, int | None] | None = None  # (input, output tokens) as the SDK reports them
    id: str | None = None
    errors: list[str] = field(default_factory=list)  # error events the SDK handed over without raising


MESSAGES: list[Any] = [{"role": "user", "content": PROMPT}]


async def _chat(url: str, cap: int | None, key: str) -> Got:
    got = Got()
    async with openai.AsyncOpenAI(base_url=url, api_key=key, max_retries=0) as client:
        stream = await client.chat.completions.create(
            model="sim", messages=MESSAGES, stream=True, stream_options={"include_usage": True},
            max_tokens=cap if cap else openai.omit,
        )  # fmt: skip
        async for chunk in stream:
            got.id = chunk.id
            if chunk.usage is not None:
                got.usage = (chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
            for choice in chunk.choices:
                got.content += choice.delta.content or ""
                got.reasoning += (choice.delta.model_extra or {}).get("reasoning_content", "")
                got.finish = choice.finish_reason or got.finish
    return got


async def _completions(url: str, cap: int | None, key: str) -> Got:
    got = Got()
    async with openai.AsyncOpenAI(base_url=url, api_key=key, max_retries=0) as client:
        stream = await client.completions.create(
            model="sim", prompt=PROMPT, stream=True, stream_options={"include_usage": True},
            max_tokens=cap if cap else openai.omit,
        )  # fmt: skip
        async for chunk in stream:
            got.id = chunk.id
            if chunk.usage is not None:
                got.usage = (chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
            for choice in chunk.choices:
                got.content += choice.text
                got.finish = choice.finish_reason or got.finish
    return got


async def _responses(url: str, cap: int | None, key: str) -> Got:
    got = Got()
    async with openai.AsyncOpenAI(base_url=url, api_key=key, max_retries=0) as client:
        stream = await client.responses.create(
            model="sim", input=PROMPT, stream=True, max_output_tokens=cap if cap else openai.omit
        )
        async for event in stream:
            if event.type == "response.output_text.delta":
                got.content += event.delta
            elif event.type == "response.reasoning_summary_text.delta":
                got.reasoning += event.delta
            elif event.type == "error":
                got.errors.append(event.message)
            elif event.type in ("response.completed", "response.incomplete"):
                response, got.id = event.response, event.response.id
                details = response.incomplete_details
                got.finish = details.reason if details is not None else response.status
                if response.usage is not None:
                    got.usage = (response.usage.input_tokens, response.usage.output_tokens)
    return got


async def _anthropic(url: str, cap: int | None, key: str) -> Got:
    async with (
        anthropic.AsyncAnthropic(base_url=url.removesuffix("/v1"), api_key=key, max_retries=0) as client,
        client.messages.stream(model="sim", max_tokens=cap or 4096, messages=MESSAGES) as stream,
    ):
        message = await stream.get_final_message()
    got = Got(id=message.id, finish=message.stop_reason)
    got.usage = (message.usage.input_tokens, message.usage.output_tokens)
    for block in message.content:
        if block.type == "text":
            got.content += block.text
        elif block.type == "thinking":
            got.reasoning += block.thinking
    return got


async def _ollama(url: str, cap: int | None, key: str) -> Got:
    got = Got()
    client = ollama.AsyncClient(host=url.removesuffix("/v1"), headers={"Authorization": f"Bearer {key}"})
    options = {"num_predict": cap} if cap else None
    async for part in await client.chat(model="sim", messages=MESSAGES, stream=True, options=options):
        got.content += part.message.content or ""
        got.reasoning += part.message.thinking or ""
        if part.done:
            got.finish = part.done_reason
            if part.eval_count is not None:
                got.usage = (part.prompt_eval_count, part.eval_count)
    return got


def gemini_client(url: str, key: str = KEY, **options: Any) -> genai.Client:
    """google-genai takes the server root and adds the API version itself ("v1" unless told otherwise)."""
    return genai.Client(api_key=key, http_options=genai_types.HttpOptions(base_url=url.removesuffix("/v1"), **options))


async def _gemini(url: str, cap: int | None, key: str) -> Got:
    got = Got()
    client = gemini_client(url, key)
    config = genai_types.GenerateContentConfig(max_output_tokens=cap)
    try:
        async for chunk in await client.aio.models.generate_content_stream(model="sim", contents=PROMPT, config=config):
            got.id = chunk.response_id
            (candidate,) = chunk.candidates or []
            for part in (candidate.content.parts if candidate.content else None) or []:
                if part.thought:
                    got.reasoning += part.text or ""
                else:
                    got.content += part.text or ""
            if candidate.finish_reason is not None:
                got.finish = candidate.finish_reason.value
                if (meta := chunk.usage_metadata) is not None:
                    got.usage = (
                        meta.prompt_token_count,
                        (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
                    )
    finally:
        await client.aio.aclose()
    return got


SDK: dict[str, Callable[[str, int | None, str], Awaitable[Got]]] = {
    "openai-chat": _chat,
    "openai-completions": _completions,
    "openai-responses": _responses,
    "anthropic": _anthropic,
    "ollama": _ollama,
    "gemini": _gemini,
}


async def sdk(protocol: str, url: str, cap: int | None = None, key: str = KEY) -> Got:
    return await SDK[protocol](url, cap, key)


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an SDK's exception carries."""
    if isinstance(exc, openai.APIStatusError | anthropic.APIStatusError):
        return exc.status_code
    if isinstance(exc, ollama.ResponseError):
        return exc.status_code
    if isinstance(exc, genai_errors.APIError):
        return exc.code
    return None


# --- raw HTTP ------------------------------------------------------------------------------------------------------


def request_of(protocol: str, stream: bool = True, cap: int | None = None, model: str = "sim") -> tuple[str, Any]:
    """The route and JSON body of a plain request in ``protocol``."""
    caps = {"max_tokens": cap} if cap else {}
    usage = {"stream_options": {"include_usage": True}} if stream else {}
    match protocol:
        case "openai-chat":
            return "/v1/chat/completions", {"model": model, "messages": MESSAGES, "stream": stream, **usage, **caps}
        case "openai-completions":
            return "/v1/completions", {"model": model, "prompt": PROMPT, "stream": stream, **usage, **caps}
        case "openai-responses":
            body = {"model": model, "input": PROMPT, "stream": stream}
            return "/v1/responses", body | ({"max_output_tokens": cap} if cap else {})
        case "anthropic":
            return "/v1/messages", {"model": model, "messages": MESSAGES, "max_tokens": cap or 4096, "stream": stream}
        case "ollama":
            return "/api/chat", {"model": model, "messages": MESSAGES, "stream": stream} | (
                {"options": {"num_predict": cap}} if cap else {}
            )
        case "gemini":
            method = "streamGenerateContent?alt=sse" if stream else "generateContent"
            config = {"generationConfig": {"maxOutputTokens": cap}} if cap else {}
            return f"/v1beta/models/{model}:{method}", {
                "contents": [{"role": "user", "parts": [{"text": PROMPT}]}]
            } | config
    raise AssertionError(protocol)


async def raw(
    protocol: str, url: str, stream: bool = True, cap: int | None = None, headers: Mapping[str, str] | None = None
) -> Raw:
    path, body = request_of(protocol, stream, cap)
    return await post(url.removesuffix("/v1") + path, body, headers)


def parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


# --- every protocol, through its official SDK ----------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_official_sdk_streams_the_truths_text_usage_and_id(protocol: str) -> None:
    sim = Simulator(fast(output_tokens=30, reasoning_tokens=4))
    async with serve(sim) as url:
        got = await sdk(protocol, url)
    truth = only(sim)
    if protocol == "openai-completions":  # no reasoning channel: the thinking is text, as raw-prompted models write it
        assert (got.content, got.reasoning) == (truth.text(), "")
    else:
        assert (got.content, got.reasoning) == (truth.text("content"), truth.text("reasoning"))
    assert count_tokens(truth.text("content")) == 30 and count_tokens(truth.text("reasoning")) == 4
    assert got.usage == (truth.prompt_tokens, truth.completion_tokens) == (count_tokens(PROMPT), 34)
    assert got.finish == truth.text("finish") == FINISH[protocol][0]
    assert got.id == (None if protocol == "ollama" else truth.id)
    assert kinds(truth)[-1] == ("usage" if protocol == "gemini" else "done")
    assert truth.text("done") == (TERMINATOR[protocol] or "")


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_the_token_cap_counts_reasoning_and_ends_with_the_length_finish(protocol: str) -> None:
    sim = Simulator(fast(output_tokens=20, reasoning_tokens=3))
    async with serve(sim) as url:
        got = await sdk(protocol, url, cap=7)
    truth = only(sim)
    assert count_tokens(truth.text("reasoning")) == 3 and count_tokens(truth.text("content")) == 4
    assert got.content == (truth.text() if protocol == "openai-completions" else truth.text("content"))
    assert got.usage == (truth.prompt_tokens, 7) and got.finish == truth.text("finish") == FINISH[protocol][1]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_non_ascii_text_round_trips(protocol: str) -> None:
    sim = Simulator(fast(output_tokens=25, non_ascii=True))
    async with serve(sim) as url:
        got = await sdk(protocol, url)
    assert got.content == only(sim).text("content") and not got.content.isascii()
    assert [w for w in got.content.split(" ")[1:] if " " + w not in NON_ASCII_WORDS] == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_usage_never(protocol: str) -> None:
    """Usage goes where the protocol allows it to go missing; Anthropic's SDK needs it, so it always comes."""
    sim = Simulator(fast(usage="never"))
    async with serve(sim) as url:
        got = await sdk(protocol, url)
    truth = only(sim)
    assert got.content == truth.text("content") and got.finish == FINISH[protocol][0]
    if protocol == "anthropic":
        assert got.usage == (truth.prompt_tokens, 20) and "usage" in kinds(truth)
    else:
        assert got.usage is None and "usage" not in kinds(truth)


ERROR_SHAPES: dict[str, dict[int, tuple[Any, ...]]] = {
    "openai": {429: ("rate_limit_error", "rate_limit_exceeded"), 500: ("server_error", None)},
    "anthropic": {429: ("error", "rate_limit_error"), 500: ("error", "api_error")},
    "ollama": {429: (str,), 500: (str,)},
    "gemini": {429: (429, "RESOURCE_EXHAUSTED"), 500: (500, "INTERNAL")},
}


def error_shape(protocol: str, doc: dict[str, Any]) -> tuple[Any, ...]:
    """The fields that say what an error is, where each provider puts them."""
    if protocol.startswith("openai"):
        return doc["error"]["type"], doc["error"]["code"]
    if protocol == "anthropic":
        return doc["type"], doc["error"]["type"]
    if protocol == "ollama":
        return (type(doc["error"]),)
    return doc["error"]["code"], doc["error"]["status"]


@pytest.mark.parametrize("error", ["429", "500"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_http_errors_in_each_providers_shape(protocol: str, error: str) -> None:
    sim = Simulator(fast(error=error))
    async with serve(sim) as url:
        with pytest.raises(Exception) as caught:  # each SDK its own tree: the status is checked
            await sdk(protocol, url)
        reply = await raw(protocol, url)
    status = int(error)
    assert status_of(caught.value) == reply.status == status
    assert error_shape(protocol, json.loads(reply.body)) == ERROR_SHAPES[protocol.split("-")[0]][status]
    assert (reply.headers.get("Retry-After") == "1") is (status == 429)
    assert all(kinds(t) == ["error"] for t in sim.truth.values()) and reply.headers["x-request-id"] in sim.truth


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_midstream_error_after_half_the_tokens(protocol: str) -> None:
    sim = Simulator(fast(error="midstream"))
    async with serve(sim) as url:
        if protocol == "openai-responses":  # the SDK hands the error event over; its stream helper would raise
            got = await sdk(protocol, url)
            assert got.errors == ["upstream overloaded"] and got.finish is None
        else:
            with pytest.raises(Exception) as caught:  # the type is checked below
                await sdk(protocol, url)
            expected = {
                "openai-chat": openai.APIError,
                "openai-completions": openai.APIError,
                "anthropic": anthropic.APIStatusError,
                "ollama": ollama.ResponseError,
                "gemini": genai_errors.ServerError,
            }[protocol]
            assert type(caught.value) is expected, repr(caught.value)
    truth = only(sim)
    assert kinds(truth).count("content") == 10 and kinds(truth)[-1] == "error" and "finish" not in kinds(truth)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_malformed_event_midway_then_the_stream_goes_on(protocol: str) -> None:
    sim = Simulator(fast(error="malformed"))
    async with serve(sim) as url:
        reply = await raw(protocol, url)
        with pytest.raises(Exception) as caught:  # the type is checked below
            await sdk(protocol, url)
    truth = only_first(sim)  # the raw request's
    frames = reply.frames()
    assert [data for _, data in frames if data != "[DONE]" and not parses(data)] == [truth.text("malformed")]
    assert frames[-1][1] == "[DONE]" or parses(frames[-1][1])  # the stream went on to its end
    assert kinds(truth).count("malformed") == 1 and kinds(truth).count("content") == 20
    assert kinds(truth).index("malformed") > [i for i, k in enumerate(kinds(truth)) if k == "content"][9]
    assert truth.text("done") == (TERMINATOR[protocol] or "") and "finish" in kinds(truth)
    expected = genai_errors.UnknownApiResponseError if protocol == "gemini" else json.JSONDecodeError
    assert isinstance(caught.value, expected), repr(caught.value)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_cut_drops_the_connection_midway(protocol: str) -> None:
    sim = Simulator(fast(error="cut"))
    async with serve(sim) as url:
        with pytest.raises(Exception) as caught:  # the type is checked below
            await sdk(protocol, url)
    expected = {
        "openai": openai.APIConnectionError,
        "anthropic": httpx2.RemoteProtocolError,  # the SDK lets its transport's error through
        "ollama": httpx.RemoteProtocolError,
        "gemini": aiohttp.ClientPayloadError,
    }[protocol.split("-")[0]]
    assert isinstance(caught.value, expected), repr(caught.value)
    truth = only(sim)
    assert kinds(truth).count("content") == 10 and not {"finish", "done", "error"} & set(kinds(truth))


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_non_streamed_replies_come_when_the_last_token_would(protocol: str) -> None:
    sim = Simulator(Scenario(ttft_ms=10, tokens_per_s=1000, output_tokens=20, reasoning_tokens=5))
    async with serve(sim) as url:
        reply = await raw(protocol, url, stream=False)
    truth = only(sim)
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("application/json")
    assert reply.headers["x-request-id"] == truth.id
    doc = json.loads(reply.body)
    content, reasoning = truth.text("content"), truth.text("reasoning")
    assert count_tokens(content) == 20 and count_tokens(reasoning) == 5
    match protocol:
        case "openai-chat":
            assert doc["choices"][0]["message"] | {"refusal": None} == {
                "role": "assistant", "content": content, "refusal": None, "reasoning_content": reasoning
            }  # fmt: skip
        case "openai-completions":
            assert doc["choices"][0]["text"] == reasoning + content and doc["usage"]["completion_tokens"] == 25
        case "openai-responses":
            assert [i["type"] for i in doc["output"]] == ["reasoning", "message"] and doc["status"] == "completed"
            assert doc["output"][1]["content"][0]["text"] == content and doc["usage"]["output_tokens"] == 25
        case "anthropic":
            assert [b.get("thinking", b.get("text")) for b in doc["content"]] == [reasoning, content]
            assert doc["stop_reason"] == "end_turn" and doc["usage"]["output_tokens"] == 25
        case "ollama":
            assert doc["message"] == {"role": "assistant", "content": content, "thinking": reasoning}
            assert doc["done"] is True and doc["eval_count"] == 25
        case "gemini":
            assert doc["candidates"][0]["content"]["parts"] == [{"text": reasoning, "thought": True}, {"text": content}]
            assert doc["usageMetadata"]["thoughtsTokenCount"] == 5 and doc["responseId"] == truth.id
    assert times_of(truth, "content")[0] - truth.t_received_ns >= (10 + 24) * MS


# --- one schedule, each protocol's preamble, keys, lists and bad requests -----------------------------------------


async def test_one_scenario_one_schedule_in_every_protocol() -> None:
    """Same seed, same text and chunking; the same absolute schedule whatever the wire format."""
    scenario = Scenario(ttft_ms=30, tokens_per_s=500, output_tokens=12, tokens_per_chunk=3, seed=5)
    texts = []
    for protocol in PROTOCOLS:
        sim = Simulator(scenario)
        async with serve(sim) as url:
            reply = await raw(protocol, url)
        truth = only(sim)
        assert reply.status == 200 and reply.headers["x-request-id"] == truth.id
        sent = times_of(truth, "content")
        texts.append([text for _, kind, text in truth.events if kind == "content"])
        assert len(sent) == 4 and sent[0] - truth.t_received_ns >= 30 * MS
        assert 30 + 18 <= (sent[-1] - truth.t_received_ns) / MS < 30 + 18 + 40  # 9 tokens after the first at 500/s
    assert all(t == texts[0] for t in texts) and [count_tokens(t) for t in texts[0]] == [3, 3, 3, 3]


PREAMBLE = {  # the truth kinds before the first token, with role_chunk
    "openai-chat": ["role"],
    "openai-completions": [],
    "openai-responses": ["other"] * 4,  # response.created, .in_progress, output_item.added, content_part.added
    "anthropic": ["other"] * 3,  # message_start, content_block_start, ping
    "ollama": [],
    "gemini": ["role"],
}


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_role_chunk_is_the_protocols_token_free_preamble(protocol: str) -> None:
    """Sent at once with role_chunk; without, dropped where optional, sent with the first token where required."""
    for role_chunk in (True, False):
        sim = Simulator(Scenario(ttft_ms=40, tokens_per_s=1000, output_tokens=3, role_chunk=role_chunk))
        async with serve(sim) as url:
            got = await sdk(protocol, url)
        truth = only(sim)
        assert got.content == truth.text("content")
        first = kinds(truth).index("content")
        required = protocol in ("openai-responses", "anthropic")
        assert kinds(truth)[:first] == (PREAMBLE[protocol] if role_chunk or required else [])
        waited = [(t - truth.t_received_ns) / MS for t, _, _ in truth.events[:first]]
        assert all(w < 20 for w in waited) if role_chunk else all(w >= 40 for w in waited)


async def test_the_sdk_stream_helpers_accept_the_event_order() -> None:
    """openai's and anthropic's accumulating helpers check the order of items and blocks as they go."""
    sim = Simulator(fast(output_tokens=5, reasoning_tokens=3, role_chunk=False))
    async with serve(sim) as url, openai.AsyncOpenAI(base_url=url, api_key=KEY) as client:
        async with client.responses.stream(model="sim", input=PROMPT) as stream:
            response = await stream.get_final_response()
        got = await sdk("anthropic", url)
    first, second = sim.truth.values()
    assert response.output_text == first.text("content") and response.id == first.id
    assert response.usage is not None and response.usage.output_tokens_details.reasoning_tokens == 3
    assert (got.reasoning, got.content) == (second.text("reasoning"), second.text("content"))


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_the_api_key_is_checked_where_each_provider_wants_it(protocol: str) -> None:
    sim = Simulator(FAST, api_key=KEY)
    async with serve(sim) as url:
        got = await sdk(protocol, url)
        with pytest.raises(Exception) as caught:  # the status is checked
            await sdk(protocol, url, key="wrong")
        keyless = await raw(protocol, url)
        unversioned = await raw(protocol, url, headers={"x-api-key": KEY})
    assert got.content == only(sim).text("content")  # refused requests leave no truth
    assert status_of(caught.value) == (400 if protocol == "gemini" else 401)
    assert keyless.status == (403 if protocol == "gemini" else 401)
    if protocol == "anthropic":  # the key alone is not enough: anthropic-version is required too
        assert unversioned.status == 400 and "anthropic-version" in json.loads(unversioned.body)["error"]["message"]


async def test_model_lists_for_each_sdk() -> None:
    sim = Simulator(FAST, {"fast": FAST})
    async with serve(sim) as url:
        root = url.removesuffix("/v1")
        async with openai.AsyncOpenAI(base_url=url, api_key=KEY) as oai:
            assert [m.id async for m in oai.models.list()] == ["sim", "fast"]
        async with anthropic.AsyncAnthropic(base_url=root, api_key=KEY) as claude:
            assert [m.id async for m in claude.models.list()] == ["sim", "fast"]
        gemini = gemini_client(url)
        try:
            assert [m.name async for m in await gemini.aio.models.list()] == ["models/sim", "models/fast"]
        finally:
            await gemini.aio.aclose()
        assert [m.model for m in (await ollama.AsyncClient(host=root).list()).models] == ["sim", "fast"]
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{root}/v1beta/models") as r:
                assert [m["name"] for m in (await r.json())["models"]] == ["models/sim", "models/fast"]
            async with session.get(f"{root}/api/version") as r:
                assert isinstance((await r.json())["version"], str)


BAD_REQUESTS: dict[str, tuple[str, dict[str, Any], tuple[Any, ...]]] = {
    "openai-chat": ("/v1/chat/completions", {"model": "sim"}, ("invalid_request_error", None)),
    "openai-completions": ("/v1/completions", {"model": "sim", "prompt": 3}, ("invalid_request_error", None)),
    "openai-responses": ("/v1/responses", {"model": "sim"}, ("invalid_request_error", None)),
    "anthropic": ("/v1/messages", {"model": "sim", "messages": []}, ("error", "invalid_request_error")),
    "ollama": ("/api/chat", {"model": "sim", "messages": [], "options": {"num_predict": "x"}}, (str,)),
    "gemini": ("/v1beta/models/sim:streamGenerateContent", {"contents": []}, (400, "INVALID_ARGUMENT")),  # no alt=sse
}


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_bad_requests_in_each_providers_shape(protocol: str) -> None:
    path, body, shape = BAD_REQUESTS[protocol]
    async with serve(Simulator(FAST)) as url, aiohttp.ClientSession() as session:
        for data in (json.dumps(body).encode(), b"{not json"):
            async with session.post(url.removesuffix("/v1") + path, data=data) as r:
                assert r.status == 400 and error_shape(protocol, await r.json()) == shape


# --- each wire format, byte by byte --------------------------------------------------------------------------------


async def test_completions_wire_format() -> None:
    sim = Simulator(fast(output_tokens=3))
    async with serve(sim) as url:
        reply = await raw("openai-completions", url)
    truth, docs = only(sim), reply.docs()
    head = {"id": truth.id, "object": "text_completion", "created": docs[0]["created"], "model": "sim"}

    def chunk(text: str, finish: str | None = None) -> dict[str, Any]:
        return {
            **head,
            "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}],
            "usage": None,
        }

    words = [text for _, kind, text in truth.events if kind == "content"]
    usage = {"prompt_tokens": truth.prompt_tokens, "completion_tokens": 3, "total_tokens": truth.prompt_tokens + 3}
    assert docs == [*(chunk(w) for w in words), chunk("", "stop"), {**head, "choices": [], "usage": usage}]
    assert reply.frames()[-1] == (None, "[DONE]") and kinds(truth) == ["content"] * 3 + ["finish", "usage", "done"]


async def test_responses_wire_format() -> None:
    sim = Simulator(fast(output_tokens=3, reasoning_tokens=2))
    async with serve(sim) as url:
        reply = await raw("openai-responses", url)
    truth, docs = only(sim), reply.docs()
    assert [name for name, _ in reply.frames()] == [d["type"] for d in docs]
    assert [d["sequence_number"] for d in docs] == list(range(len(docs)))
    assert [d["type"].removeprefix("response.") for d in docs] == [
        "created", "in_progress",
        "output_item.added", "reasoning_summary_part.added", *["reasoning_summary_text.delta"] * 2,
        "reasoning_summary_text.done", "reasoning_summary_part.done", "output_item.done",
        "output_item.added", "content_part.added", *["output_text.delta"] * 3,
        "output_text.done", "content_part.done", "output_item.done",
        "completed",
    ]  # fmt: skip
    reasoning_id, message_id = docs[2]["item"]["id"], docs[9]["item"]["id"]
    assert {d["item_id"] for d in docs[3:8]} == {reasoning_id} == {docs[8]["item"]["id"]}
    assert {d["item_id"] for d in docs[10:16]} == {message_id} == {docs[16]["item"]["id"]}
    assert [d["output_index"] for d in (docs[2], docs[9])] == [0, 1]
    final = docs[-1]["response"]
    assert final["id"] == docs[0]["response"]["id"] == truth.id and final["status"] == "completed"
    assert final["output"] == [docs[8]["item"], docs[16]["item"]]
    assert final["output"][0]["summary"] == [{"type": "summary_text", "text": truth.text("reasoning")}]
    assert final["output"][1]["content"][0]["text"] == docs[14]["text"] == truth.text("content")
    prompt = truth.prompt_tokens
    assert final["usage"] == {
        "input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 2}, "total_tokens": prompt + 5,
    }  # fmt: skip
    tail = ["finish", "usage", "done"]
    assert kinds(truth) == ["other"] * 4 + ["reasoning"] * 2 + ["other"] * 5 + ["content"] * 3 + ["other"] * 3 + tail


async def test_responses_incomplete_when_capped() -> None:
    sim = Simulator(fast(output_tokens=10))
    async with serve(sim) as url:
        reply = await raw("openai-responses", url, cap=4)
    final = reply.docs()[-1]
    assert final["type"] == "response.incomplete" and reply.frames()[-1][0] == "response.incomplete"
    assert final["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["response"]["status"] == "incomplete" and final["response"]["usage"]["output_tokens"] == 4


async def test_anthropic_wire_format() -> None:
    sim = Simulator(fast(output_tokens=3, reasoning_tokens=2))
    async with serve(sim) as url:
        reply = await raw("anthropic", url)
    truth, docs = only(sim), reply.docs()
    assert [name for name, _ in reply.frames()] == [d["type"] for d in docs]
    shapes = [(d["type"], d.get("index"), d.get("delta", {}).get("type")) for d in docs]
    delta = "content_block_delta"
    assert shapes == [
        ("message_start", None, None), ("content_block_start", 0, None), ("ping", None, None),
        *[(delta, 0, "thinking_delta")] * 2, (delta, 0, "signature_delta"), ("content_block_stop", 0, None),
        ("content_block_start", 1, None), *[(delta, 1, "text_delta")] * 3, ("content_block_stop", 1, None),
        ("message_delta", None, None), ("message_stop", None, None),
    ]  # fmt: skip
    prompt = truth.prompt_tokens
    assert docs[0]["message"] == {
        "id": truth.id, "type": "message", "role": "assistant", "model": "sim", "content": [], "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": prompt, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0
        },
    }  # fmt: skip
    assert [d["content_block"] for d in (docs[1], docs[7])] == [
        {"type": "thinking", "thinking": ""},
        {"type": "text", "text": ""},
    ]
    assert "".join(d["delta"]["text"] for d in docs[8:11]) == truth.text("content")
    assert docs[-2] == {
        "type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"input_tokens": prompt, "output_tokens": 5},
    }  # fmt: skip
    assert kinds(truth) == ["other"] * 3 + ["reasoning"] * 2 + ["other"] * 3 + ["content"] * 3 + [
        "other", "finish", "usage", "done"
    ]  # fmt: skip


async def test_anthropic_pings_keep_a_long_stream_alive() -> None:
    sim = Simulator(fast(output_tokens=120))
    async with serve(sim) as url:
        reply = await raw("anthropic", url)
    names = [name for name, _ in reply.frames()]
    assert names.count("ping") == 1 + 2  # the opening one, then one after every 50 deltas
    assert names.index("ping", 3) == 3 + 50  # message_start, block start, ping, 50 deltas, ping


async def test_ollama_wire_format_and_true_durations() -> None:
    sim = Simulator(Scenario(ttft_ms=20, tokens_per_s=1000, output_tokens=4, reasoning_tokens=2))
    async with serve(sim) as url:
        reply = await raw("ollama", url)
    truth, docs = only(sim), reply.docs()
    assert reply.headers["Content-Type"] == "application/x-ndjson" and reply.headers["x-request-id"] == truth.id
    words = [(kind, text) for _, kind, text in truth.events if kind in ("reasoning", "content")]
    messages = [{"content": t} if k == "content" else {"content": "", "thinking": t} for k, t in words]
    assert [{k: d[k] for k in ("model", "message", "done")} for d in docs[:-1]] == [
        {"model": "sim", "message": {"role": "assistant", **m}, "done": False} for m in messages
    ]
    assert all(d["created_at"].endswith("Z") for d in docs)
    last = docs[-1]
    assert last["done"] is True and last["done_reason"] == "stop" and last["message"]["content"] == ""
    assert (last["prompt_eval_count"], last["eval_count"]) == (truth.prompt_tokens, 6)
    first_ns, last_ns = times_of(truth, "reasoning", "content")[0], times_of(truth, "content")[-1]
    assert last["prompt_eval_duration"] == first_ns - truth.t_received_ns >= 20 * MS
    assert last["eval_duration"] == last_ns - first_ns > 0
    # Events are never sent before they are due: the sixth token 20 + 5 x 1 ms after the request arrived. (The
    # eval duration alone has no floor on a busy machine: a late first token shortens it; CI saw 3.95 ms.)
    assert last_ns - truth.t_received_ns >= 25 * MS
    assert last["total_duration"] >= last["prompt_eval_duration"] + last["eval_duration"]
    assert kinds(truth) == ["reasoning"] * 2 + ["content"] * 4 + ["finish", "usage", "done"]


async def test_ollama_streams_unless_told_not_to() -> None:
    async with serve(Simulator(fast(output_tokens=3))) as url, aiohttp.ClientSession() as session:
        root = url.removesuffix("/v1")
        for extra, lines in (({}, 4), ({"stream": False}, 1)):
            async with session.post(f"{root}/api/chat", json={"model": "sim", "messages": MESSAGES, **extra}) as r:
                body = (await r.read()).decode()
            assert len(body.strip().split("\n")) == lines and json.loads(body.strip().split("\n")[-1])["done"] is True


async def test_gemini_wire_format() -> None:
    sim = Simulator(fast(output_tokens=3, reasoning_tokens=2))
    async with serve(sim) as url:
        reply = await raw("gemini", url)
    truth, docs = only(sim), reply.docs()
    assert {name for name, _ in reply.frames()} == {None} and "[DONE]" not in reply.body.decode()
    assert reply.body.count(b"\r\n\r\n") == len(docs) and b"\n\n" not in reply.body  # CRLF, as Google sends
    prompt = truth.prompt_tokens
    words = [(kind, text) for _, kind, text in truth.events if kind in ("reasoning", "content")]
    parts = [[{"text": ""}], *([{"text": t, "thought": True} if k == "reasoning" else {"text": t}] for k, t in words)]
    running = {"promptTokenCount": prompt, "totalTokenCount": prompt}
    assert docs[:-1] == [
        {"candidates": [{"content": {"parts": p, "role": "model"}, "index": 0}], "usageMetadata": running,
         "modelVersion": "sim", "responseId": truth.id}
        for p in parts
    ]  # fmt: skip
    assert docs[-1]["candidates"] == [
        {"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": "STOP", "index": 0}
    ]
    assert docs[-1]["usageMetadata"] == {
        "promptTokenCount": prompt, "candidatesTokenCount": 3, "totalTokenCount": prompt + 5, "thoughtsTokenCount": 2
    }  # fmt: skip
    assert kinds(truth) == ["role"] + ["reasoning"] * 2 + ["content"] * 3 + ["finish", "usage"]


async def test_gemini_answers_under_each_api_version() -> None:
    """google-genai posts to /v1 unless told otherwise; /v1beta is what Gemini documents; both are served."""
    sim = Simulator(fast(output_tokens=4))
    async with serve(sim) as url:
        client = gemini_client(url, api_version="v1beta")
        try:
            stream = await client.aio.models.generate_content_stream(model="sim", contents=PROMPT)
            text = "".join([chunk.text or "" async for chunk in stream])
        finally:
            await client.aio.aclose()
        got = await sdk("gemini", url)
    first, second = sim.truth.values()
    assert (text, got.content) == (first.text("content"), second.text("content"))
