"""Newline-delimited JSON lines out of recorded chunks, each stamped with the arrival of the chunk that completed it.

NDJSON has no grammar beyond "one JSON text per line", so this is only a line splitter; JSON decoding is the
caller's. Lines are split on raw bytes and decoded whole, so a chunk boundary inside a UTF-8 character is
harmless; bytes that are not UTF-8 raise ``UnicodeDecodeError``, as in ``sse.events``. A line cut into many
chunks is kept as a list of pieces and joined once, so splitting is linear in the size of the response. Like
``sse.events``, this runs after the stream, never while it is timed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NdjsonLine:
    t_ns: int
    text: str


def lines(chunks: Iterable[tuple[int, bytes]]) -> Iterator[NdjsonLine]:
    """Yield each non-blank line with the arrival time of the chunk holding its newline.

    A last line without a newline is yielded too (stamped with the last chunk), so a stream cut mid-line
    shows up as a line the caller cannot parse rather than vanishing.
    """
    pending: list[bytes] = []  # pieces of the line not yet ended, joined once: linear, however long the line
    t_last = 0
    for t_ns, data in chunks:
        t_last = t_ns
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            pending.append(data[start:end])
            line = b"".join(pending)
            pending.clear()
            start = end + 1
            if line.strip():
                yield NdjsonLine(t_ns, line.decode("utf-8").rstrip("\r"))
        if start < len(data):
            pending.append(data[start:])
    line = b"".join(pending)
    if line.strip():
        yield NdjsonLine(t_last, line.decode("utf-8").rstrip("\r"))
