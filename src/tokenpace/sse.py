"""Server-sent events out of recorded chunks, each stamped with the arrival of the chunk that completed it.

Parsing runs after the stream, never while it is timed; the SSE grammar itself is sseclient-py's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import sseclient


@dataclass(frozen=True, slots=True)
class SseEvent:
    t_ns: int
    name: str
    data: str


def parse(chunks: Iterable[tuple[int, bytes]]) -> Iterator[SseEvent]:
    """Yield each event with the arrival time of the last chunk it needed."""
    arrival = [0]

    def source() -> Iterator[bytes]:
        for t_ns, data in chunks:
            arrival[0] = t_ns
            yield data

    # sseclient pulls lazily and yields an event as soon as the chunk completing it has been read, so the
    # timestamp of the chunk last pulled is the arrival time of that event.
    for event in sseclient.SSEClient(source()).events():
        yield SseEvent(arrival[0], event.event, event.data)
