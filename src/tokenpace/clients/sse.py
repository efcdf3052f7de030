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
from dataclasses import dataclass

_LINE_END = re.compile(rb"\r\n|\r|\n")
_BOM = "\ufeff"


@dataclass(frozen=True, slots=True)
class SseEvent:
    t_ns: int
    name: str
    data: str


class _Event:
    """The event being read: its name and its data lines so far."""

    __slots__ = ("data", "name")

    def __init__(self) -> None:
        self.name = ""
        self.data: list[str] = []

    def line(self, line: str) -> None:
        """Apply one non-blank line (a field, or a comment)."""
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
        event = SseEvent(t_ns, self.name or "message", "\n".join(self.data)) if self.data else None
        self.name, self.data = "", []
        return event


def events(chunks: Iterable[tuple[int, bytes]]) -> Iterator[SseEvent]:
    """Yield each event with the arrival time of the chunk holding the end of the blank line that ended it.

    Lines are split on bytes (CR and LF never occur inside a UTF-8 character) and decoded one by one, so the
    events before a line that is not UTF-8 are yielded before the error is raised.
    """
    event = _Event()
    pending: list[bytes] = []  # the pieces of a line not yet ended
    after_cr = False  # the last chunk ended in CR: a LF opening the next one belongs to that line ending
    first = True  # the first line may open with a BOM
    t_ns = 0
    for t_ns, data in chunks:
        start = 1 if after_cr and data.startswith(b"\n") else 0
        if data:
            after_cr = False
        for match in _LINE_END.finditer(data, start):
            pending.append(data[start : match.start()])
            line = b"".join(pending).decode("utf-8")
            pending.clear()
            start = match.end()
            if first:
                line, first = line.removeprefix(_BOM), False
            if line:
                event.line(line)
            elif (done := event.dispatch(t_ns)) is not None:
                yield done
            after_cr = start == len(data) and match.group() == b"\r"
        if start < len(data):
            pending.append(data[start:])
    if pending:
        line = b"".join(pending).decode("utf-8")
        event.line(line.removeprefix(_BOM) if first else line)
    if (done := event.dispatch(t_ns)) is not None:
        yield done
