"""Reading a hostile file's JSON records within bounds: JSONL lines, or the items of one JSON array.

Both read bytes a bounded piece at a time, so neither a line without an end nor a file of hundreds of MB sits
in memory whole (a JSON array is decoded item by item, the buffer holding one item and a chunk). Each record
comes with its byte span in the file, so a reader may keep the spans and read a record again when it needs
it (``read_span``) instead of holding them all. Every problem is a one-line ConfigError that names the file
and the line it is on: ``PATH:LINE: what``.
"""

from __future__ import annotations

import codecs
import json
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from tokenpace.errors import ConfigError

CHUNK = 1 << 20  # bytes read at a time from a JSON array
_SPACE = re.compile(r"[ \t\r\n]*")  # JSON's whitespace


def bad(path: Path, line: int, what: str) -> ConfigError:
    return ConfigError(f"{path}:{line}: {what}")


def _too_big(path: Path, max_bytes: int) -> ConfigError:
    return ConfigError(f"{path}: over the {max_bytes}-byte limit; keep fewer records in it")


def open_bounded(path: Path, max_bytes: int) -> BinaryIO:
    """The file for reading: a regular file (not a pipe or device, which could stream forever)."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{path}: not a regular file; give a .jsonl or ShareGPT .json file")
        if info.st_size > max_bytes:
            raise _too_big(path, max_bytes)
        return path.open("rb")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def _read_bounded(path: Path, read: Callable[[int], bytes], size: int) -> bytes:
    """``read(size)``, an I/O error a one-line ConfigError: /proc/self/mem is a "regular" file that fails."""
    try:
        return read(size)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror or exc})") from None


Span = tuple[int, int]  # a record's first byte in the file, and the byte after its last


def read_span(path: Path, line: int, span: Span) -> Any:
    """The JSON value at ``span`` of the file, read again; one that no longer parses is a one-line ConfigError."""
    try:
        with path.open("rb") as f:
            f.seek(span[0])
            data = f.read(span[1] - span[0])
        text = data.decode("utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it again ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise bad(path, line, "not UTF-8 text (the file changed since it was read)") from None
    return _load(path, line, text)


def _load(path: Path, line: int, text: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise bad(path, line, "JSON nested too deep") from None
    except ValueError as exc:
        raise bad(path, line, f"not valid JSON ({getattr(exc, 'msg', exc)})") from None


def json_lines(path: Path, f: BinaryIO, max_bytes: int, max_line: int) -> Iterator[tuple[int, Any, Span]]:
    """(line number, value, span) of each line that is not blank, each line at most ``max_line`` bytes.

    Bytes read are bounded too: the file may have grown since it was measured. A UTF-8 BOM is dropped.
    """
    n = read = 0
    while data := _read_bounded(path, f.readline, max_line + 1):
        n, read = n + 1, read + len(data)
        if len(data) > max_line:
            raise bad(path, n, f"a line over {max_line} bytes; split or shorten it")
        if read > max_bytes:
            raise _too_big(path, max_bytes)
        try:
            text = data.decode("utf-8-sig" if n == 1 else "utf-8")
        except UnicodeDecodeError:
            raise bad(path, n, "not UTF-8 text") from None
        if text.strip():
            yield n, _load(path, n, text), (read - len(data), read)


def array_items(path: Path, f: BinaryIO, max_bytes: int, max_item: int) -> Iterator[tuple[int, Any, Span]]:
    """(line it starts on, value, span) of each item of the one JSON array ``f`` holds, read a chunk at a time.

    An item that is neither complete nor valid JSON within ``max_item`` characters is refused. What follows
    the array's closing bracket is not read.
    """
    decoder = json.JSONDecoder()
    utf8 = codecs.getincrementaldecoder("utf-8-sig")()
    buf, pos, line, eof, read = "", 0, 1, False, 0
    start = f.tell()
    # at: the file's byte offset of buf[mark]; a BOM is dropped by the decoder, so buf starts after it
    at = start + (3 if _read_bounded(path, f.read, 3) == codecs.BOM_UTF8 else 0)
    f.seek(start)
    mark = 0

    def byte(p: int) -> int:
        """The file's byte offset of buf[p] (p >= mark), counted on from the last one asked: linear in all."""
        nonlocal at, mark
        at += len(buf[mark:p].encode())
        mark = p
        return at

    def more() -> None:
        nonlocal buf, pos, eof, read, mark
        byte(pos)  # buf[:pos] is dropped: keep the count of its bytes
        mark = 0
        data = _read_bounded(
            path, f.read, max(CHUNK, len(buf) - pos)
        )  # at least doubles what an unfinished item has to parse
        read += len(data)
        if read > max_bytes:
            raise _too_big(path, max_bytes)
        try:
            text = utf8.decode(data, final=not data)
        except UnicodeDecodeError:
            raise bad(path, line + buf.count("\n", pos), "not UTF-8 text (here or on the lines after)") from None
        buf, pos, eof = buf[pos:] + text, 0, not data

    def skip_space() -> str:
        """The next character that is not JSON whitespace, "" at the end of the file."""
        nonlocal pos, line
        while True:
            match = _SPACE.match(buf, pos)
            end = match.end() if match else pos
            line += buf.count("\n", pos, end)
            pos = end
            if pos < len(buf) or eof:
                return buf[pos] if pos < len(buf) else ""
            more()

    if skip_space() != "[":
        raise bad(path, line, "the file must hold one JSON array")
    pos += 1
    first = True
    while True:
        if skip_space() == "]" and first:
            return
        try:
            item, end = decoder.raw_decode(buf, pos)
        except RecursionError:
            raise bad(path, line, "JSON nested too deep") from None
        except json.JSONDecodeError as exc:
            if not eof and len(buf) - pos <= max_item:
                more()
                continue
            why = f"not valid JSON ({exc.msg}), or an item over {max_item} characters"
            raise bad(path, line + buf.count("\n", pos, exc.pos), why) from None
        if end - pos > max_item:
            raise bad(path, line, f"an item over {max_item} characters")
        yield line, item, (byte(pos), byte(end))
        line += buf.count("\n", pos, end)
        pos, first = end, False
        c = skip_space()
        if c == "]":
            return
        if c != ",":
            raise bad(path, line, "expected , or ] after an item of the array")
        pos += 1
