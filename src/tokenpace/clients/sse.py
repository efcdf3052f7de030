"""Server-sent events out of recorded chunks, each stamped with the arrival of the chunk that completed it.

The WHATWG event-stream grammar (https://html.spec.whatwg.org/multipage/server-sent-events.html): lines end in
CRLF, LF or CR; ``data`` lines of one event are joined by LF; ``event`` names it; a line starting with ``:`` is
a comment; a field without a colon has an empty value; one leading BOM is dropped; a blank line dispatches the
event, if it has data. Parsing runs after the stream, never while it is timed, and is linear in the size of
the response: partial lines and data lines are kept as lists of pieces and joined once (sseclient-py's
``data += line`` made a 6 MB response take minutes). Bytes that are not UTF-8 raise ``UnicodeDecodeError``.

Unlike the specification, an event still open when the recording ends is yielded (stamped with the last
chunk), as it was before: a stream cut mid-event then shows as an event the caller cannot parse.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

_LINE_END = re.compile(rb"\r\n|\r|\n")
_BOM_BYTES = "\ufeff".encode()  # the BOM in UTF-8: dropped before decoding, as it would be after


class SseEvent(NamedTuple):
    """One dispatched event (a tuple: made in C, a third of a frozen dataclass's cost, once per streamed token)."""

    t_ns: int
    name: str
    data: str


_tuple_new = tuple.__new__  # SseEvent's own __new__ is Python code: this skips it on the path every token takes


class _Event:
    """The event being read: its name and its data lines so far."""

    __slots__ = ("data", "name")

    def __init__(self) -> None:
        self.name = ""
        self.data: list[str] = []

    def line(self, line: str) -> None:
        """Apply one non-blank line (a field, or a comment)."""
        if line.startswith("data:"):  # nearly every line: said first
            self.data.append(line[6:] if line.startswith(" ", 5) else line[5:])
            return
        if line.startswith(":"):
            return
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self.data.append(value)
        elif field == "event":
            self.name = value
        # id and retry steer reconnection, which a recording never does; other fields are ignored.

    def dispatch(self, t_ns: int) -> SseEvent | None:
        """The finished event (None when it had no data, as the grammar says), the state reset."""
        data = self.data
        event = SseEvent(t_ns, self.name or "message", data[0] if len(data) == 1 else "\n".join(data)) if data else None
        self.name, self.data = "", []
        return event


def events(chunks: Iterable[tuple[int, bytes]]) -> Iterator[SseEvent]:
    """Yield each event with the arrival time of the chunk holding the end of the blank line that ended it.

    Each chunk is split into lines on bytes at once (CR and LF never occur inside a UTF-8 character; a chunk
    without CR is split on LF alone, in C) and the lines are decoded one by one, so the events before a line
    that is not UTF-8 are yielded before the error is raised.
    """
    event = _Event()
    pending: list[bytes] = []  # the pieces of a line not yet ended
    after_cr = False  # the last chunk ended in CR: a LF opening the next one belongs to that line ending
    first = True  # the first line may open with a BOM
    t_ns = 0
    for t_ns, data in chunks:
        if not data:
            continue
        # Nearly every chunk of a stream is one whole "data: ...\n\n" event read on its own: yielded as it is.
        if (
            not pending
            and not after_cr
            and not event.data
            and not event.name
            and data.startswith(b"data: ")
            and data.endswith(b"\n\n")
            and data.count(b"\n") == 2
            and b"\r" not in data
        ):
            first = False
            yield _tuple_new(SseEvent, (t_ns, "message", data[6:-2].decode("utf-8")))
            continue
        if after_cr and data.startswith(b"\n"):
            data = data[1:]
        after_cr = data.endswith(b"\r")
        lines = _LINE_END.split(data) if b"\r" in data else data.split(b"\n")
        rest = lines.pop()  # after the last line ending: the start of a line not yet ended
        if lines:
            if pending:
                pending.append(lines[0])
                lines[0] = b"".join(pending)
                pending.clear()
            if first:
                lines[0] = lines[0].removeprefix(_BOM_BYTES)
                first = False
            for raw in lines:
                if raw:
                    event.line(raw.decode("utf-8"))
                elif (done := event.dispatch(t_ns)) is not None:
                    yield done
        if rest:
            pending.append(rest)
    if pending:
        line = b"".join(pending)
        event.line((line.removeprefix(_BOM_BYTES) if first else line).decode("utf-8"))
    if (done := event.dispatch(t_ns)) is not None:
        yield done
