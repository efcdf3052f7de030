"""Bounded JSON reading: items and lines come out whole with the line they start on, however the bytes are cut."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokenpace.errors import ConfigError
from tokenpace.prompts import jsonrecords
from tokenpace.prompts.jsonrecords import array_items, json_lines, open_bounded

ITEMS = [{"n": i, "text": "ünïcödé ✓ " * i, "nested": {"list": [1, 2, {"deep": "x"}]}} for i in range(40)]


def items(path: Path, max_item: int = 10_000, max_bytes: int = 10**9) -> list[tuple[int, object, jsonrecords.Span]]:
    with open_bounded(path, max_bytes) as f:
        return list(array_items(path, f, max_bytes, max_item))


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 1 << 20])
def test_array_items_come_whole_with_their_line_whatever_the_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(jsonrecords, "CHUNK", chunk)  # cuts land inside multi-byte characters too
    path = tmp_path / "a.json"
    text = json.dumps(ITEMS, indent=1, ensure_ascii=False)
    path.write_text(text, encoding="utf-8")
    got = items(path)
    assert [doc for _, doc, _ in got] == ITEMS
    starts = [text.index(f'"n": {i},') for i in range(40)]
    assert [line for line, _, _ in got] == [text[:at].count("\n") for at in starts]  # the line of each item's "{"
    assert [jsonrecords.read_span(path, line, span) for line, _, span in got] == ITEMS  # byte spans, read again


@pytest.mark.parametrize("chunk", [1, 5, 1 << 20])
def test_spans_count_bytes_not_characters_after_a_bom(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(jsonrecords, "CHUNK", chunk)
    path = tmp_path / "a.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(ITEMS[:5], ensure_ascii=False).encode())
    data = path.read_bytes()
    for _, doc, (start, end) in items(path):
        assert json.loads(data[start:end]) == doc


def test_json_lines_skip_blank_lines_and_keep_numbering(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a": 1}\n\n  \r\n{"a": 2}\r\n[3]')
    with open_bounded(path, 100) as f:
        got = list(json_lines(path, f, 100, 20))
    assert [(n, doc) for n, doc, _ in got] == [(1, {"a": 1}), (4, {"a": 2}), (5, [3])]
    assert [span for _, _, span in got] == [(0, 9), (14, 24), (24, 27)]


def test_bytes_read_are_bounded_even_when_the_file_grew(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a": 1}\n' * 10)
    f = open_bounded(path, 1000)
    with f, pytest.raises(ConfigError, match="over the 30-byte limit"):
        list(json_lines(path, f, 30, 20))  # as if the file had been 30 bytes when it was opened
    path.write_text(json.dumps(ITEMS))
    f = open_bounded(path, 10**9)
    with f, pytest.raises(ConfigError, match="over the 100-byte limit"):
        list(array_items(path, f, 100, 10**6))
