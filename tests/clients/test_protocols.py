# ruff: noqa: E501  (the wire fixtures are verbatim protocol lines, as long as providers send them)
"""Every wire protocol decodes genuine byte streams, cut where real networks cut them, into the same typed events.

Each fixture is a stream in the exact format its provider documents (SSE ``event:``/``data:`` lines, Gemini's
CRLF-separated SSE, Ollama's NDJSON), delivered in chunks cut mid-line, mid-UTF-8 character, between the two
newlines that end an event, or with several events in one chunk. Chunk ``i`` arrives at ``(i + 1) * 100`` ms
after the request was sent, so each event's time says exactly which chunk completed it.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tokenpace.clients import ndjson, protocol_for
from tokenpace.clients.base import HttpRequest
from tokenpace.config.endpoints import PROTOCOLS, Endpoint
from tokenpace.config.presets import PRESETS, ProtocolName, preset
from tokenpace.errors import ConfigError
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.metrics import compute
from tokenpace.measure.timing import EventKind, Recording, Timeline, Usage
from tokenpace.prompts.prompt import Message, Prompt

MS = 1_000_000


def recording(raw: bytes, *cuts: int, failure: Failure | None = None) -> Recording:
    """``raw`` arriving in pieces cut at byte offsets ``cuts``: piece ``i`` at ``(i + 1) * 100`` ms."""
    bounds = [0, *cuts, len(raw)]
    assert bounds == sorted(bounds), bounds
    chunks = [((i + 1) * 100 * MS, raw[a:b]) for i, (a, b) in enumerate(itertools.pairwise(bounds))]
    return Recording(
        t_start_ns=0, t_sent_ns=0, t_headers_ns=50 * MS, t_end_ns=chunks[-1][0] + MS, http_status=200, chunks=chunks,
        failure=failure,
    )  # fmt: skip


def pos(raw: bytes, *anchors: str, offset: int = 0) -> int:
    """Where the last of ``anchors`` starts, each searched after the one before, plus ``offset`` bytes."""
    at = -1
    for anchor in anchors:
        at = raw.index(anchor.encode(), at + 1)
    return at + offset


def shape(t: Timeline) -> list[tuple[str, int]]:
    """Each event as (kind letter, arrival in ms)."""
    return [(e.kind.value, e.t_ns // MS) for e in t.events]


def decode(protocol: ProtocolName, raw: bytes, *cuts: int, failure: Failure | None = None) -> Timeline:
    return protocol_for(protocol).decode(recording(raw, *cuts, failure=failure))


# --- genuine streams ----------------------------------------------------------------------------------

COMPLETIONS = """\
data: {"id":"cmpl-7f3a","object":"text_completion","created":1754000000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}

data: {"id":"cmpl-7f3a","object":"text_completion","created":1754000000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"text":"Héllo","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}

data: {"id":"cmpl-7f3a","object":"text_completion","created":1754000000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"text":", wörld ✓","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}

data: {"id":"cmpl-7f3a","object":"text_completion","created":1754000000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length","stop_reason":null}],"usage":null}

data: {"id":"cmpl-7f3a","object":"text_completion","created":1754000000,"model":"Qwen/Qwen3-8B","choices":[],"usage":{"prompt_tokens":5,"total_tokens":9,"completion_tokens":4}}

data: [DONE]

""".encode()

RESPONSES = """\
event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_68a1f0","object":"response","created_at":1755000000,"status":"in_progress","error":null,"incomplete_details":null,"model":"o4-mini-2025-04-16","output":[],"usage":null}}

event: response.in_progress
data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_68a1f0","object":"response","created_at":1755000000,"status":"in_progress","error":null,"incomplete_details":null,"model":"o4-mini-2025-04-16","output":[],"usage":null}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"rs_01","type":"reasoning","summary":[]}}

event: response.reasoning_summary_part.added
data: {"type":"response.reasoning_summary_part.added","sequence_number":3,"item_id":"rs_01","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}}

event: response.reasoning_summary_text.delta
data: {"type":"response.reasoning_summary_text.delta","sequence_number":4,"item_id":"rs_01","output_index":0,"summary_index":0,"delta":"**Greeting** in French…"}

event: response.reasoning_summary_text.done
data: {"type":"response.reasoning_summary_text.done","sequence_number":5,"item_id":"rs_01","output_index":0,"summary_index":0,"text":"**Greeting** in French…"}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":6,"output_index":1,"item":{"id":"msg_01","type":"message","status":"in_progress","content":[],"role":"assistant"}}

event: response.content_part.added
data: {"type":"response.content_part.added","sequence_number":7,"item_id":"msg_01","output_index":1,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":8,"item_id":"msg_01","output_index":1,"content_index":0,"delta":"Bonjour","logprobs":[]}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":9,"item_id":"msg_01","output_index":1,"content_index":0,"delta":" à tous 🎉","logprobs":[]}

event: response.output_text.done
data: {"type":"response.output_text.done","sequence_number":10,"item_id":"msg_01","output_index":1,"content_index":0,"text":"Bonjour à tous 🎉","logprobs":[]}

event: response.content_part.done
data: {"type":"response.content_part.done","sequence_number":11,"item_id":"msg_01","output_index":1,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":"Bonjour à tous 🎉"}}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":12,"output_index":1,"item":{"id":"msg_01","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Bonjour à tous 🎉"}],"role":"assistant"}}

event: response.completed
data: {"type":"response.completed","sequence_number":13,"response":{"id":"resp_68a1f0","object":"response","created_at":1755000000,"status":"completed","error":null,"incomplete_details":null,"model":"o4-mini-2025-04-16","output":[{"id":"rs_01","type":"reasoning","summary":[{"type":"summary_text","text":"**Greeting** in French…"}]},{"id":"msg_01","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Bonjour à tous 🎉"}],"role":"assistant"}],"usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":0},"output_tokens":84,"output_tokens_details":{"reasoning_tokens":64},"total_tokens":96}}}

""".encode()

ANTHROPIC = r"""event: message_start
data: {"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"They want a greeting…"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Grüß Gott"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":", 世界!"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"Wien\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}

""".encode()

OLLAMA = """\
{"model":"qwen3:0.6b","created_at":"2025-08-04T08:52:19.385406455Z","message":{"role":"assistant","content":""},"done":false}
{"model":"qwen3:0.6b","created_at":"2025-08-04T08:52:19.412337201Z","message":{"role":"assistant","content":"","thinking":"Okay, "},"done":false}
{"model":"qwen3:0.6b","created_at":"2025-08-04T08:52:19.431954132Z","message":{"role":"assistant","content":"","thinking":"a greeting…"},"done":false}
{"model":"qwen3:0.6b","created_at":"2025-08-04T08:52:19.458760946Z","message":{"role":"assistant","content":"Ça"},"done":false}
{"model":"qwen3:0.6b","created_at":"2025-08-04T08:52:19.480149113Z","message":{"role":"assistant","content":" va? 👍"},"done":false}
{"model":"qwen3:0.6b","created_at":"2025-08-04T08:52:19.501203372Z","message":{"role":"assistant","content":""},"done_reason":"stop","done":true,"total_duration":4883583458,"load_duration":1334875,"prompt_eval_count":26,"prompt_eval_duration":342546000,"eval_count":282,"eval_duration":4535599000}
""".encode()

GEMINI = """\
data: {"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 8,"totalTokenCount": 8,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 8}]},"modelVersion": "gemini-2.5-flash","responseId": "mHZoaJ2nBoqUxN8P4uLkkAo"}

data: {"candidates": [{"content": {"parts": [{"text": "**Planning** a reply…","thought": true}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 8,"totalTokenCount": 60,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 8}],"thoughtsTokenCount": 52},"modelVersion": "gemini-2.5-flash","responseId": "mHZoaJ2nBoqUxN8P4uLkkAo"}

data: {"candidates": [{"content": {"parts": [{"text": "Olá"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 8,"candidatesTokenCount": 1,"totalTokenCount": 61,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 8}],"thoughtsTokenCount": 52},"modelVersion": "gemini-2.5-flash","responseId": "mHZoaJ2nBoqUxN8P4uLkkAo"}

data: {"candidates": [{"content": {"parts": [{"text": ", mundo ☀️"}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 8,"candidatesTokenCount": 5,"totalTokenCount": 65,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 8}],"thoughtsTokenCount": 52},"modelVersion": "gemini-2.5-flash","responseId": "mHZoaJ2nBoqUxN8P4uLkkAo"}

""".replace("\n", "\r\n").encode()  # Google's SSE ends lines with CRLF


STREAMS: dict[ProtocolName, bytes] = {
    "openai-completions": COMPLETIONS,
    "openai-responses": RESPONSES,
    "anthropic": ANTHROPIC,
    "ollama": OLLAMA,
    "gemini": GEMINI,
}


def test_openai_completions_stream() -> None:
    raw = COMPLETIONS
    t = decode(
        "openai-completions",
        raw,
        pos(raw, "Héllo", offset=2),  # inside é
        pos(raw, "Héllo", "\n\n", offset=1),  # between the two newlines that end the event
        pos(raw, "[DONE]", offset=3),  # several events in one chunk, then [DONE] cut in two
    )
    assert shape(t) == [("o", 100), ("c", 300), ("c", 300), ("f", 300), ("u", 300), ("d", 400)]
    assert t.token_events[0].text == "Héllo"  # the empty first choice is not the first token
    assert t.text(EventKind.CONTENT) == "Héllo, wörld ✓"
    assert t.usage == Usage(5, 4, None)
    assert t.response_id == "cmpl-7f3a"
    assert [e.text for e in t.events if e.kind is EventKind.FINISH] == ["length"]
    assert t.failure is None
    assert compute(t).ttft_ms == 300


def test_openai_responses_stream() -> None:
    raw = RESPONSES
    t = decode(
        "openai-responses",
        raw,
        pos(raw, "…", offset=1),  # inside the reasoning summary's first multi-byte character
        pos(raw, "🎉", offset=2),  # inside the emoji of the second text delta
        pos(raw, "event: response.completed", offset=10),  # inside the event line of the last event
    )
    assert shape(t) == [
        *[("o", 100)] * 4,  # created, in_progress, output_item.added, reasoning_summary_part.added
        ("r", 200),
        *[("o", 200)] * 3,  # reasoning_summary_text.done, output_item.added, content_part.added
        ("c", 200),
        ("c", 300),
        *[("o", 300)] * 3,  # output_text.done, content_part.done, output_item.done: no text counted twice
        ("u", 400),
        ("f", 400),
        ("d", 400),
    ]
    assert t.text(EventKind.REASONING) == "**Greeting** in French…"
    assert t.text(EventKind.CONTENT) == "Bonjour à tous 🎉"
    assert t.usage == Usage(12, 84, 64, 0)
    assert t.response_id == "resp_68a1f0"
    assert [e.text for e in t.events if e.kind is EventKind.FINISH] == ["completed"]
    assert t.failure is None
    assert compute(t).ttft_ms == 200
    assert compute(t).ttfat_ms == 200


def test_anthropic_stream() -> None:
    raw = ANTHROPIC
    t = decode(
        "anthropic",
        raw,
        pos(raw, "event: ping", offset=3),
        pos(raw, "…", offset=2),
        pos(raw, "世", offset=1),
        pos(raw, "event: message_delta", "\n\n", offset=1),
    )
    assert shape(t) == [
        ("o", 100),  # message_start
        ("o", 100),  # content_block_start
        ("o", 200),  # ping: never the first token
        ("r", 300),
        ("o", 300),  # signature_delta
        ("o", 300),
        ("o", 300),
        ("c", 300),
        ("c", 400),
        ("o", 400),
        ("o", 400),  # content_block_start of the tool use
        ("o", 400),  # its empty input_json_delta
        ("t", 400),
        ("o", 400),
        ("f", 500),
        ("u", 500),
        ("d", 500),
    ]
    assert t.text(EventKind.REASONING) == "They want a greeting…"
    assert t.text(EventKind.CONTENT) == "Grüß Gott, 世界!"
    assert t.text(EventKind.TOOL_CALL) == '{"location": "Wien"}'
    assert t.usage == Usage(472, 89, None, 0)  # input from message_start, output from message_delta
    assert t.response_id == "msg_01XFDUDYJgAACzvnptvVoYEL"
    assert [e.text for e in t.events if e.kind is EventKind.FINISH] == ["tool_use"]
    assert t.failure is None
    assert compute(t).ttft_ms == 300


def test_ollama_stream() -> None:
    raw = OLLAMA
    t = decode(
        "ollama",
        raw,
        pos(raw, "Okay", offset=2),  # mid-line
        pos(raw, "Okay", "\n", offset=1),  # a chunk that ends exactly at a newline
        pos(raw, "👍", offset=1),  # inside the emoji; the line before it arrives in the same chunk
        pos(raw, '"done":true', offset=4),  # the last line arrives in two pieces
    )
    assert shape(t) == [
        ("o", 100),
        ("r", 200),
        ("r", 300),
        ("c", 300),
        ("c", 400),
        ("f", 500),
        ("u", 500),
        ("d", 500),
    ]
    assert t.text(EventKind.REASONING) == "Okay, a greeting…"
    assert t.text(EventKind.CONTENT) == "Ça va? 👍"
    assert t.usage == Usage(26, 282, None)
    assert t.server_timings == {
        "total_duration": 4883583458,
        "load_duration": 1334875,
        "prompt_eval_duration": 342546000,
        "eval_duration": 4535599000,
        "eval_count": 282,
        "prompt_eval_count": 26,
    }
    assert [e.text for e in t.events if e.kind is EventKind.FINISH] == ["stop"]
    assert t.failure is None
    assert compute(t).ttft_ms == 200
    # Kept with the sample: the server's own view survives the stored timeline's round trip.
    assert Timeline.from_json(t.to_json()).server_timings == t.server_timings


def test_gemini_stream() -> None:
    raw = GEMINI
    t = decode(
        "gemini",
        raw,
        pos(raw, "\r\n\r\n", offset=3),  # between CR and LF of the blank line that ends the first event
        pos(raw, "…", offset=1),
        pos(raw, "☀", offset=2),
    )
    # A CR alone ends a line (WHATWG), so the first event is complete with the CR: the LF adds nothing to it.
    assert shape(t) == [("o", 100), ("r", 300), ("c", 300), ("c", 400), ("f", 400), ("u", 400)]
    assert t.text(EventKind.REASONING) == "**Planning** a reply…"
    assert t.text(EventKind.CONTENT) == "Olá, mundo ☀️"
    assert t.usage == Usage(8, 57, 52)  # output = candidates + thoughts
    assert t.response_id == "mHZoaJ2nBoqUxN8P4uLkkAo"
    assert [e.text for e in t.events if e.kind is EventKind.FINISH] == ["STOP"]
    assert t.failure is None  # no [DONE] in this protocol: the finish reason ends it
    assert compute(t).ttft_ms == 300


def test_every_stream_decodes_the_same_in_one_chunk_or_byte_by_byte() -> None:
    for name, raw in STREAMS.items():
        whole = decode(name, raw)
        trickle = decode(name, raw, *range(1, len(raw)))
        assert [(e.kind, e.text) for e in trickle.events] == [(e.kind, e.text) for e in whole.events], name
        assert trickle.usage == whole.usage and trickle.failure is None and whole.failure is None, name


# --- how streams fail ------------------------------------------------------------------------------------


def _ending(name: ProtocolName) -> int:
    """Where the event that ends each golden stream (its finish reason or terminator) starts: the start of the
    line that begins with ``line`` and comes last before ``anchor``."""
    raw = STREAMS[name]
    anchor, line = {
        "openai-completions": ('"finish_reason":"length"', b"data:"),
        "openai-responses": ("event: response.completed", b"event:"),
        "anthropic": ("event: message_delta", b"event:"),
        "ollama": ('"done":true', b""),
        "gemini": ('"finishReason"', b"data:"),
    }[name]
    return raw.rindex(b"\n" + line, 0, pos(raw, anchor)) + 1


ERRORS = {
    "openai-completions": (
        'data: {"error":{"object":"error","message":"CUDA out of memory","type":"InternalServerError","code":500}}\n\n',
        "CUDA out of memory",
    ),
    "openai-responses": (
        'event: error\ndata: {"type":"error","code":"server_error","message":"The server had an error while processing your request.","param":null,"sequence_number":14}\n\n',
        "The server had an error while processing your request.",
    ),
    "anthropic": (
        'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
        "Overloaded",
    ),
    "ollama": (
        '{"error":"an error was encountered while running the model: unexpected EOF"}\n',
        "an error was encountered while running the model: unexpected EOF",
    ),
    "gemini": (
        'data: {"error": {"code": 503,"message": "The model is overloaded. Please try again later.","status": "UNAVAILABLE"}}\r\n\r\n',
        "The model is overloaded. Please try again later.",
    ),
}

MALFORMED = {
    "openai-completions": 'data: {"id":"cmpl-7f3a","choices":[{"index":0,"text":"trunc\n\n',
    "openai-responses": "event: response.output_text.delta\ndata: {not json}\n\n",
    "anthropic": 'event: content_block_delta\ndata: ["a list, not an event object"]\n\n',
    "ollama": "this is not JSON\n",
    "gemini": 'data: {"candidates": [\r\n\r\n',
}


@pytest.mark.parametrize("name", STREAMS)
def test_stream_without_its_ending_is_incomplete(name: ProtocolName) -> None:
    raw = STREAMS[name][: _ending(name)]
    t = decode(name, raw, len(raw) // 2)
    assert t.token_events, "text arrived before the cut"
    assert t.failure is not None and t.failure.kind is ErrorKind.INCOMPLETE_STREAM


@pytest.mark.parametrize("name", STREAMS)
def test_error_event_mid_stream_is_a_stream_error_with_its_message(name: ProtocolName) -> None:
    raw = STREAMS[name]
    event, message = ERRORS[name]
    broken = raw[: _ending(name)] + event.encode()
    t = decode(name, broken, _ending(name) + 5)
    assert t.failure is not None
    assert t.failure.kind is ErrorKind.STREAM_ERROR
    assert message in t.failure.message
    errors = [e for e in t.events if e.kind is EventKind.ERROR]
    assert [e.text for e in errors] == [message]
    assert errors[0].t_ns == 200 * MS
    assert not errors[0].is_token


@pytest.mark.parametrize("name", STREAMS)
def test_unparsable_event_is_a_malformed_stream_even_when_it_ends_cleanly(name: ProtocolName) -> None:
    raw = STREAMS[name]
    broken = raw[: _ending(name)] + MALFORMED[name].encode() + raw[_ending(name) :]
    t = decode(name, broken)
    assert t.failure is not None and t.failure.kind is ErrorKind.MALFORMED_STREAM
    assert t.failure.message.startswith("bad event")


@pytest.mark.parametrize("name", STREAMS)
def test_bytes_that_are_not_utf8_are_a_malformed_stream_not_a_crash(name: ProtocolName) -> None:
    raw = STREAMS[name]
    line = b"\xff\xfe not UTF-8\n" if name == "ollama" else b'data: {"x": "\xff"}\n\n'
    t = decode(name, raw[: _ending(name)] + line + raw[_ending(name) :])
    assert t.failure is not None and t.failure.kind is ErrorKind.MALFORMED_STREAM
    assert t.token_events, "what was decoded before the bad bytes is kept"


@pytest.mark.parametrize(
    ("name", "event"),
    [
        ("openai-chat", 'data: {"id":"c1","choices":5}\n\n'),
        ("openai-completions", 'data: {"id":"c1","choices":[{"text":7}],"usage":"many"}\n\n'),
        (
            "openai-responses",
            'event: response.completed\ndata: {"type":"response.completed","response":{"usage":{"output_tokens_details":7}}}\n\n',
        ),
        ("anthropic", 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":"text"}\n\n'),
        ("ollama", '{"message":{"role":"assistant","tool_calls":5},"done":false}\n'),
        ("gemini", 'data: {"candidates": [5]}\r\n\r\n'),
    ],
)
def test_event_of_an_unexpected_shape_is_a_malformed_stream_not_a_crash(name: ProtocolName, event: str) -> None:
    t = decode(name, event.encode())
    assert t.failure is not None and t.failure.kind is ErrorKind.MALFORMED_STREAM, t.failure
    assert t.failure.message.startswith("undecodable stream")


@pytest.mark.parametrize("name", STREAMS)
def test_transport_failure_outranks_what_the_stream_shows(name: ProtocolName) -> None:
    event, _ = ERRORS[name]
    raw = STREAMS[name][: _ending(name)] + event.encode()
    t = decode(name, raw, failure=Failure(ErrorKind.IDLE_TIMEOUT, "idle timeout after 30 s"))
    assert t.failure is not None and t.failure.kind is ErrorKind.IDLE_TIMEOUT


@pytest.mark.parametrize("name", STREAMS)
def test_has_token_only_once_text_arrived(name: ProtocolName) -> None:
    proto = protocol_for(name)
    raw = STREAMS[name]
    first = next(e for e in proto.decode(recording(raw)).events if e.is_token)
    before = raw[: pos(raw, first.text) - 1]  # everything up to (not including) the first text
    assert not proto.has_token(recording(before))
    assert proto.has_token(recording(raw))


def test_responses_incomplete_at_the_output_cap_is_a_clean_finish() -> None:
    raw = RESPONSES[: _ending("openai-responses")] + (
        b"event: response.incomplete\n"
        b'data: {"type":"response.incomplete","sequence_number":13,"response":{"id":"resp_68a1f0","object":"response","status":"incomplete","error":null,"incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":12,"output_tokens":16,"output_tokens_details":{"reasoning_tokens":8},"total_tokens":28}}}\n\n'
    )
    t = decode("openai-responses", raw)
    assert t.failure is None
    assert [e.text for e in t.events if e.kind is EventKind.FINISH] == ["max_output_tokens"]
    assert t.usage == Usage(12, 16, 8)
    assert t.events[-1].kind is EventKind.DONE


def test_responses_failed_is_a_stream_error() -> None:
    raw = RESPONSES[: _ending("openai-responses")] + (
        b"event: response.failed\n"
        b'data: {"type":"response.failed","sequence_number":13,"response":{"id":"resp_68a1f0","object":"response","status":"failed","error":{"code":"server_error","message":"The model failed to generate a response."},"incomplete_details":null,"usage":null}}\n\n'
    )
    t = decode("openai-responses", raw)
    assert t.failure is not None and t.failure.kind is ErrorKind.STREAM_ERROR
    assert "The model failed to generate a response." in t.failure.message


def test_responses_tool_call_and_the_sse_event_name_as_fallback_type() -> None:
    raw = (
        b"event: response.created\n"
        b'data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_9","status":"in_progress"}}\n\n'
        b"event: response.function_call_arguments.delta\n"
        b'data: {"type":"response.function_call_arguments.delta","sequence_number":3,"item_id":"fc_1","output_index":0,"delta":"{\\"city\\":"}\n\n'
        b"event: response.output_text.delta\n"  # a server that names the event but leaves "type" out of the data
        b'data: {"delta":"Paris"}\n\n'
        b"event: response.completed\n"
        b'data: {"type":"response.completed","sequence_number":5,"response":{"id":"resp_9","status":"completed"}}\n\n'
    )
    t = decode("openai-responses", raw)
    assert [(e.kind, e.text) for e in t.token_events] == [
        (EventKind.TOOL_CALL, '{"city":'),
        (EventKind.CONTENT, "Paris"),
    ]
    assert t.failure is None and t.usage is None


def test_gemini_function_call_and_blocked_prompt() -> None:
    call = (
        'data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "get_weather","args": {"city": "Zürich"}}}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 40,"candidatesTokenCount": 7,"totalTokenCount": 47},"modelVersion": "gemini-2.5-flash","responseId": "r1"}\r\n\r\n'
    ).encode()
    t = decode("gemini", call)
    assert [(e.kind, e.text) for e in t.token_events] == [(EventKind.TOOL_CALL, 'get_weather{"city": "Zürich"}')]
    assert t.usage == Usage(40, 7, None) and t.failure is None

    blocked = 'data: {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},"usageMetadata": {"promptTokenCount": 12,"totalTokenCount": 12},"modelVersion": "gemini-2.5-flash","responseId": "r2"}\r\n\r\n'
    t = decode("gemini", blocked.encode())
    assert [e.text for e in t.events if e.kind is EventKind.FINISH] == ["PROHIBITED_CONTENT"]
    assert t.failure is not None and t.failure.kind is ErrorKind.EMPTY_OUTPUT


def test_ollama_tool_call() -> None:
    raw = (
        '{"model":"qwen3:0.6b","created_at":"2025-08-04T08:52:19.4Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Zürich"}}}]},"done":false}\n'
        '{"model":"qwen3:0.6b","created_at":"2025-08-04T08:52:19.5Z","message":{"role":"assistant","content":""},"done_reason":"stop","done":true,"eval_count":9}\n'
    ).encode()
    t = decode("ollama", raw)
    assert [(e.kind, e.text) for e in t.token_events] == [(EventKind.TOOL_CALL, 'get_weather{"city": "Zürich"}')]
    assert t.server_timings == {"eval_count": 9} and t.failure is None


def test_anthropic_message_delta_input_count_wins_when_given() -> None:
    raw = ANTHROPIC.replace(b'"usage":{"output_tokens":89}', b'"usage":{"input_tokens":480,"output_tokens":89}')
    assert decode("anthropic", raw).usage == Usage(480, 89, None, 0)


# --- the NDJSON line splitter ----------------------------------------------------------------------------


def test_ndjson_lines_carry_the_arrival_of_the_chunk_that_completed_them() -> None:
    chunks = [(1, b'{"a":"\xc3'), (2, b'\xa9"}\r\n\n{"b":1}\n{"c"'), (3, b":2}")]
    assert list(ndjson.lines(chunks)) == [
        ndjson.NdjsonLine(2, '{"a":"é"}'),
        ndjson.NdjsonLine(2, '{"b":1}'),
        ndjson.NdjsonLine(3, '{"c":2}'),  # a last line without its newline is still yielded
    ]
    assert list(ndjson.lines([])) == []


# --- requests ------------------------------------------------------------------------------------------

KEY = "sk-canary-0123456789"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR-not-a-real-image"
B64 = base64.b64encode(PNG).decode()


def build(
    name: ProtocolName, base: str, monkeypatch: pytest.MonkeyPatch, **kw: Any
) -> tuple[HttpRequest, dict[str, Any]]:
    monkeypatch.setenv("TP_TEST_KEY", KEY)
    endpoint = Endpoint("p", "model-x", base, protocol=name, api_key_env="TP_TEST_KEY", **kw)
    prompt = Prompt((Message("user", "Describe ça.", (PNG,)),), 77, 3, "f" * 16)
    req = protocol_for(name).request(endpoint, prompt)
    assert KEY not in req.url and "key=" not in req.url  # the key goes only into a header
    assert req.secrets[0] == KEY
    assert sum(KEY in v for v in req.headers.values()) == 1
    assert req.headers["Content-Type"] == "application/json"
    return req, json.loads(req.body)


def test_openai_completions_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TP_TEST_KEY", KEY)
    endpoint = Endpoint("p", "model-x", "https://h/v1", protocol="openai-completions", api_key_env="TP_TEST_KEY")
    prompt = Prompt((Message("system", "Be brief."), Message("user", "Say ça.")), 77, 3, "f" * 16)
    req = protocol_for("openai-completions").request(endpoint, prompt)
    assert req.url == "https://h/v1/completions"
    assert req.headers["Authorization"] == f"Bearer {KEY}" and req.secrets == (KEY,)
    assert json.loads(req.body) == {
        "model": "model-x",
        "prompt": "Be brief.\n\nSay ça.",
        "max_tokens": 77,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with pytest.raises(ConfigError, match="cannot send images"):
        build("openai-completions", "https://h/v1", monkeypatch)


def test_openai_responses_request(monkeypatch: pytest.MonkeyPatch) -> None:
    req, body = build("openai-responses", "https://api.openai.com/v1", monkeypatch)
    assert req.url == "https://api.openai.com/v1/responses"
    assert req.headers["Authorization"] == f"Bearer {KEY}"
    assert body == {
        "model": "model-x",
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Describe ça."},
                    {"type": "input_image", "image_url": f"data:image/png;base64,{B64}"},
                ],
            }
        ],
        "max_output_tokens": 77,
        "stream": True,
        "store": False,
    }


def test_anthropic_request(monkeypatch: pytest.MonkeyPatch) -> None:
    req, body = build("anthropic", "https://api.anthropic.com/v1", monkeypatch)
    assert req.url == "https://api.anthropic.com/v1/messages"
    assert req.headers["x-api-key"] == KEY
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert "Authorization" not in req.headers
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64}}
    assert body == {
        "model": "model-x",
        "max_tokens": 77,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Describe ça."}, image]}],
        "stream": True,
    }


def test_anthropic_system_message_goes_to_the_system_field(monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = Endpoint("p", "m", "https://api.anthropic.com/v1", protocol="anthropic")
    prompt = Prompt((Message("system", "Be brief."), Message("user", "Hi")), 5, 3, "f" * 16)
    req = protocol_for("anthropic").request(endpoint, prompt)
    body = json.loads(req.body)
    assert body["system"] == "Be brief." and body["messages"] == [{"role": "user", "content": "Hi"}]
    assert "x-api-key" not in req.headers and req.secrets == ()  # no key configured: none sent


def test_endpoint_headers_override_defaults_but_never_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    headers = (("Anthropic-Version", "2024-01-01"), ("X-Api-Key", "from-the-config-file"), ("anthropic-beta", "x"))
    req, _ = build("anthropic", "https://opencode.ai/zen/v1", monkeypatch, headers=headers)
    lowered = {k.lower(): v for k, v in req.headers.items()}
    assert len(lowered) == len(req.headers)  # no header name sent twice
    assert lowered["anthropic-version"] == "2024-01-01"
    assert lowered["x-api-key"] == KEY
    assert lowered["anthropic-beta"] == "x"
    # Scrubbed wherever a server echoes them: the key and configured values, but not words as short as "x".
    assert req.secrets == (KEY, "2024-01-01", "from-the-config-file")


def test_ollama_request(monkeypatch: pytest.MonkeyPatch) -> None:
    req, body = build("ollama", "https://ollama.com", monkeypatch)
    assert req.url == "https://ollama.com/api/chat"
    assert req.headers["Authorization"] == f"Bearer {KEY}"
    assert body == {
        "model": "model-x",
        "messages": [{"role": "user", "content": "Describe ça.", "images": [B64]}],
        "stream": True,
        "options": {"num_predict": 77},
    }
    local = Endpoint("ollama", "qwen3:0.6b", "http://127.0.0.1:11434", protocol="ollama")
    assert protocol_for("ollama").warm_url(local) == "http://127.0.0.1:11434/api/tags"
    prompt = Prompt((Message("user", "Hi"),), 5, 1, "f" * 16)
    assert "Authorization" not in protocol_for("ollama").request(local, prompt).headers


def test_gemini_request(monkeypatch: pytest.MonkeyPatch) -> None:
    base = "https://generativelanguage.googleapis.com/v1beta"
    req, body = build("gemini", base, monkeypatch)
    assert req.url == f"{base}/models/model-x:streamGenerateContent?alt=sse"
    assert req.headers["x-goog-api-key"] == KEY
    assert "Authorization" not in req.headers
    assert body == {
        "contents": [
            {
                "role": "user",
                "parts": [{"text": "Describe ça."}, {"inline_data": {"mime_type": "image/png", "data": B64}}],
            }
        ],
        "generationConfig": {"maxOutputTokens": 77},
    }
    assert protocol_for("gemini").warm_url(Endpoint("g", "m", base, protocol="gemini")) == f"{base}/models"


def test_openai_chat_request_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    req, body = build("openai-chat", "https://api.groq.com/openai/v1", monkeypatch, headers=(("X-Team", "speed"),))
    assert req.url == "https://api.groq.com/openai/v1/chat/completions"
    assert list(req.headers) == ["Content-Type", "Accept", "X-Team", "Authorization"]
    assert req.headers["Authorization"] == f"Bearer {KEY}"
    assert body["max_tokens"] == 77 and body["stream_options"] == {"include_usage": True}
    assert body["messages"][0]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{B64}"},
    }


# --- registry and presets --------------------------------------------------------------------------------


def test_every_configured_protocol_is_registered() -> None:
    for name in PROTOCOLS:
        assert protocol_for(name).name == name
    with pytest.raises(ConfigError, match="known: anthropic, gemini, ollama, openai-chat"):
        protocol_for("smoke-signals")  # type: ignore[arg-type]  # what a store row may hold


def test_presets_are_complete_and_consistent() -> None:
    expected = {
        "openai", "anthropic", "gemini", "groq", "cerebras", "together", "fireworks", "openrouter", "deepseek",
        "mistral", "ollama-cloud", "opencode-zen", "opencode-go", "ollama", "llama.cpp", "vllm", "sglang",
    }  # fmt: skip
    assert expected <= set(PRESETS)
    for name, p in PRESETS.items():
        assert p.name == name and p.note and "\n" not in p.note
        assert protocol_for(p.protocol).name == p.protocol
        assert not p.base_url.endswith("/")
        local = p.base_url.startswith("http://127.0.0.1")
        assert local == (p.api_key_env is None), name
        assert local or p.base_url.startswith("https://"), name
    assert preset("groq").base_url == "https://api.groq.com/openai/v1"
    assert (preset("anthropic").protocol, preset("anthropic").api_key_env) == ("anthropic", "ANTHROPIC_API_KEY")
    assert (preset("ollama-cloud").protocol, preset("ollama-cloud").base_url) == ("ollama", "https://ollama.com")


def test_unknown_preset_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown preset 'grok' \(known: openai, anthropic, .*sglang\)"):
        preset("grok")


def test_readme_lists_every_preset_as_the_table_holds_it() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([^`]+)` \| `([^`]+)` \| `([^`]+)` \| `?([A-Z_]+|none)", readme, re.MULTILINE)
    listed = {name: (protocol, url, None if key == "none" else key) for name, protocol, url, key in rows}
    shown = {p.name: p.protocol if p.routes is None else "per model" for p in PRESETS.values()}
    assert listed == {p.name: (shown[p.name], p.base_url, p.api_key_env) for p in PRESETS.values()}


def test_reasoning_sent_under_both_names_counts_once() -> None:
    from tokenpace.clients.openai_chat import _delta_events

    events = _delta_events(5, {"delta": {"reasoning_content": " think", "reasoning": " think"}})
    assert [(e.kind, e.text) for e in events] == [(EventKind.REASONING, " think")]


_INPUT_COUNT = {
    "openai-completions": "prompt_tokens",
    "openai-responses": "input_tokens",
    "anthropic": "input_tokens",
    "ollama": "prompt_eval_count",
    "gemini": "promptTokenCount",
}


@pytest.mark.parametrize("name", STREAMS)
@pytest.mark.parametrize(
    ("bad", "raw"),
    [
        ("1e999", "Infinity"),  # JSON that Python reads as inf
        ("-1e12", "-1000000000000.0"),
        ("1099511627776", "1099511627776"),  # 2**40: past any context window, and PostgreSQL's INTEGER
        ("123456789012345678901234567890", "1.2345678901234568e+29"),  # past 64 bits: orjson reads a float
        ("NaN", "NaN"),  # not JSON, though Python's json reads it (and orjson does not)
        ('"12"', '"12"'),
        ("true", "true"),
        ('{"n": 1}', '{"n": 1}'),
    ],
)
def test_impossible_usage_counts_are_dropped_and_kept_raw(name: ProtocolName, bad: str, raw: str) -> None:
    field = _INPUT_COUNT[name]
    hostile = re.sub(rf'("{field}"\s*:\s*)\d+'.encode(), lambda m: m[1] + bad.encode(), STREAMS[name])
    assert hostile != STREAMS[name]
    t = decode(name, hostile)
    assert t.failure is None and t.usage is not None
    assert t.usage.input_tokens is None and t.usage.output_tokens is not None  # the sane count is kept
    stored = json.loads(t.to_json())
    assert stored["usage_raw"] == {field: raw}
    assert Timeline.from_json(t.to_json()).usage == t.usage
    assert compute(t).provider_input_tokens is None


def test_stored_usage_is_checked_again_when_read_back() -> None:
    t = decode("openai-completions", STREAMS["openai-completions"])
    doc = json.loads(t.to_json())
    doc["usage"] = [float("inf"), -5, 7]  # a row written before usage was checked at the boundary
    assert Timeline.from_json(json.dumps(doc)).usage == Usage(None, None, 7)


@pytest.mark.parametrize("name", STREAMS)
def test_has_token_looks_past_a_long_prefix_without_text(name: ProtocolName) -> None:
    # 100 kB of keep-alive comments (NDJSON: blank lines) before the first text: past the prefix looked at first.
    filler = b"\n" * 100_000 if name == "ollama" else b": keep-alive\n\n" * 7000
    raw = filler + STREAMS[name]
    proto = protocol_for(name)
    assert proto.has_token(recording(raw, *range(1000, len(raw), 1000)))
    assert not proto.has_token(recording(filler, *range(1000, len(filler), 1000)))


CHAT = Prompt(
    (Message("system", "Be brief."), Message("user", "Hi."), Message("assistant", "Hello!"), Message("user", "Bye?")),
    50, 9, "f" * 16,
)  # fmt: skip
# What each protocol's body holds for CHAT: the turns as (role, text), in the protocol's own words.
CHAT_TURNS = {
    "openai-chat": [("system", "Be brief."), ("user", "Hi."), ("assistant", "Hello!"), ("user", "Bye?")],
    "openai-responses": [("system", "Be brief."), ("user", "Hi."), ("assistant", "Hello!"), ("user", "Bye?")],
    "ollama": [("system", "Be brief."), ("user", "Hi."), ("assistant", "Hello!"), ("user", "Bye?")],
    "anthropic": [("user", "Hi."), ("assistant", "Hello!"), ("user", "Bye?")],
    "gemini": [("user", "Hi."), ("model", "Hello!"), ("user", "Bye?")],
}


def chat_turns(name: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    if name == "gemini":
        return [(c["role"], c["parts"][0]["text"]) for c in body["contents"]]
    return [(m["role"], m["content"]) for m in body["input" if name == "openai-responses" else "messages"]]


@pytest.mark.parametrize("name", PROTOCOLS)
def test_a_chat_is_sent_turn_by_turn_with_its_roles(name: ProtocolName) -> None:
    endpoint = Endpoint("p", "m", "https://h/v1", protocol=name)
    body = json.loads(protocol_for(name).request(endpoint, CHAT).body)
    if name == "openai-completions":  # no roles on the wire: a labelled transcript ending on the reply's cue
        assert body["prompt"] == "Be brief.\n\nUser: Hi.\n\nAssistant: Hello!\n\nUser: Bye?\n\nAssistant:"
        return
    assert chat_turns(name, body) == CHAT_TURNS[name]
    if name == "anthropic":
        assert body["system"] == "Be brief."
    if name == "gemini":
        assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
