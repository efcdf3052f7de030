"""The SSE and NDJSON splitters: the WHATWG event-stream grammar, arrival stamps, and linear time on big input."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from tokenpace.clients import ndjson, sse


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
