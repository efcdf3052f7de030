"""The SSE and NDJSON splitters: the WHATWG event-stream grammar, arrival stamps, and linear time on big input."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any

import pytest

from tokenpace.clients import ndjson, protocol_for, sse
from tokenpace.config.presets import ProtocolName
from tokenpace.measure.metrics import compute
from tokenpace.measure.timing import Recording


def stamped(*pieces: bytes) -> list[tuple[int, bytes]]:
    """Piece ``i`` arrives at time ``i + 1``."""
    return [(i + 1, p) for i, p in enumerate(pieces)]


def events(*pieces: bytes) -> list[tuple[int, str, str]]:
    return [(e.t_ns, e.name, e.data) for e in sse.events(stamped(*pieces))]


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending(eol: bytes) -> None:
    raw = eol.join([b"event: a", b"data: one", b"data: two", b"", b"data: three", b"", b""])
    assert events(raw) == [(1, "a", "one\ntwo"), (1, "message", "three")]


def test_crlf_split_between_its_two_characters_is_one_line_ending() -> None:
    # The \r ends the blank line, so the event is complete with the first piece; the \n is not another line.
    assert events(b"data: x\r\n\r", b"\ndata: y\r\n\r\n") == [(1, "message", "x"), (2, "message", "y")]


def test_event_is_stamped_with_the_piece_that_completed_it() -> None:
    assert events(b"da", b"ta: he", b"llo\n", b"\n", b"data: 2\n\ndata: 3\n\n") == [
        (4, "message", "hello"),
        (5, "message", "2"),
        (5, "message", "3"),
    ]


def test_comments_bom_fields_without_colon_and_spaces() -> None:
    raw = b"\xef\xbb\xbf: comment\ndata\nid: 7\nretry: 10\nunknown: x\n\ndata:no space\ndata:  two spaces\n\n"
    assert events(raw) == [(1, "message", ""), (1, "message", "no space\n two spaces")]


def test_only_the_first_bom_is_stripped_and_an_event_without_data_is_not_dispatched() -> None:
    assert events(b"\xef\xbb\xbf", b"event: ping\n\n\xef\xbb\xbfdata: x\n\n") == []  # the 2nd BOM names a field


def test_utf8_character_cut_between_pieces() -> None:
    raw = "data: héllo ✓\n\n".encode()
    cut = raw.index("✓".encode()) + 1
    assert events(raw[:cut], raw[cut:]) == [(2, "message", "héllo ✓")]


def test_bytes_that_are_not_utf8_raise() -> None:
    with pytest.raises(UnicodeDecodeError):
        events(b"data: \xff\n\n")


def test_an_event_cut_at_the_end_is_still_yielded_for_the_caller_to_judge() -> None:
    assert events(b"data: [DONE]\n") == [(1, "message", "[DONE]")]
    assert events(b'data: {"cut') == [(1, "message", '{"cut')]


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        ([b"data: a\n\n", b"data: b\n\n"], [(1, "message", "a"), (2, "message", "b")]),  # the short path
        ([b"event: x\n", b"data: a\n\n"], [(2, "x", "a")]),  # a name already read: not a whole event
        ([b"data: a\n", b"data: b\n\n"], [(2, "message", "a\nb")]),  # a data line already read
        ([b"data: a", b"data: b\n\n"], [(2, "message", "adata: b")]),  # the rest of a line already begun
        ([b"data: a\r", b"\ndata: b\n\n"], [(2, "message", "a\nb")]),  # a CRLF cut between its two bytes
        ([b"data:  two spaces\n\n"], [(1, "message", " two spaces")]),  # only one space goes
        ([b"data: a\n\ndata: b\n\n"], [(1, "message", "a"), (1, "message", "b")]),  # two events in one piece
    ],
)
def test_a_piece_that_is_one_whole_event_reads_as_the_grammar_says(
    pieces: list[bytes], expected: list[tuple[int, str, str]]
) -> None:
    """The short path for a piece holding exactly one whole event gives what the grammar gives, and is not taken
    where what came before it is part of the event."""
    assert events(*pieces) == expected


def test_ndjson_lines_and_a_cut_last_line() -> None:
    lines = ndjson.lines(stamped(b'{"a":', b'1}\r\n\n{"b":2}\n{"c"'))
    assert [(x.t_ns, x.text) for x in lines] == [(2, '{"a":1}'), (2, '{"b":2}'), (2, '{"c"')]


def _pieces(raw: bytes, size: int = 256) -> list[tuple[int, bytes]]:
    return [(i, raw[i : i + size]) for i in range(0, len(raw), size)]


@pytest.mark.parametrize(
    ("parse", "make"),
    [
        (sse.events, lambda n: b"data: x\n" * (n // 8) + b"\n"),  # one event of many data lines
        (sse.events, lambda n: b"data: " + b"x" * n + b"\n\n"),  # one line across many pieces
        (ndjson.lines, lambda n: b'{"x":"' + b"x" * n + b'"}\n'),
    ],
    ids=["sse-many-lines", "sse-one-long-line", "ndjson-one-long-line"],
)
def test_parsing_is_linear_in_the_size_of_the_response(
    parse: Callable[[Iterable[tuple[int, bytes]]], Any], make: Callable[[int], bytes]
) -> None:
    """6 MiB in 256-byte pieces: a linear parser needs well under a second, a quadratic one many minutes.

    The bound is generous so a busy machine never trips it; rejoining the pending line on every piece (the
    quadratic cost) copies about 70 GB here.
    """
    chunks = _pieces(make(6 * 2**20))
    start = time.perf_counter()
    assert sum(1 for _ in parse(chunks)) == 1
    assert time.perf_counter() - start < 10


# A token event of each protocol, and what ends its stream (bench/decode.py times the same streams at 400k).
TOKEN_AND_END: dict[ProtocolName, tuple[bytes, bytes]] = {
    "openai-chat": (b'data: {"choices":[{"delta":{"content":" hi"}}]}\n\n', b"data: [DONE]\n\n"),
    "openai-completions": (b'data: {"choices":[{"text":" hi"}]}\n\n', b"data: [DONE]\n\n"),
    "openai-responses": (
        b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":" hi"}\n\n',
        b'event: response.completed\ndata: {"type":"response.completed","response":{"id":"r"}}\n\n',
    ),
    "anthropic": (
        b'event: content_block_delta\ndata: {"type":"content_block_delta",'
        b'"delta":{"type":"text_delta","text":" hi"}}\n\n',
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ),
    "gemini": (
        b'data: {"candidates":[{"content":{"parts":[{"text":" hi"}]}}]}\n\n',
        b'data: {"candidates":[{"content":{"parts":[{"text":"."}]},"finishReason":"STOP"}]}\n\n',
    ),
    "ollama": (b'{"message":{"content":" hi"},"done":false}\n', b'{"message":{"content":""},"done":true}\n'),
}


def _calls_to_decode(protocol: ProtocolName, events: int) -> int:
    """Function calls, Python and C, made to decode a stream of ``events`` token events (100 to a chunk, and
    one in 100 cut into single bytes) and to compute its metrics and stored JSON: work counted without a clock."""
    token, end = TOKEN_AND_END[protocol]
    chunks = [(i, token * 99) for i in range(events // 100)]
    chunks += [(events, bytes([b])) for b in token * (events // 100)] + [(events + 1, end)]
    rec = Recording(t_start_ns=0, t_sent_ns=0, t_end_ns=events + 2, http_status=200, chunks=chunks)
    calls = 0

    def count(_frame: FrameType, event: str, _arg: object) -> None:
        nonlocal calls
        calls += event in ("call", "c_call")

    sys.setprofile(count)
    try:
        timeline = protocol_for(protocol).decode(rec)
        compute(timeline)
        timeline.to_json()
    finally:
        sys.setprofile(None)
    assert timeline.failure is None and len(timeline.token_events) >= events, timeline.failure  # gemini: one more
    return calls


@pytest.mark.parametrize("protocol", sorted(TOKEN_AND_END))
def test_decoding_a_stream_is_linear_in_its_events(protocol: ProtocolName) -> None:
    """Four times the events, four times the calls, give or take the fixed part: a step that went back over the
    events or chunks before it (a quadratic one: 400k events took 13-25 s) would make it sixteen times."""
    _calls_to_decode(protocol, 100)  # what is loaded once (the vocabulary, imports) is not counted below
    small, large = _calls_to_decode(protocol, 1_000), _calls_to_decode(protocol, 4_000)
    assert 3 * small < large < 4.5 * small, (small, large)
