"""Reading a response body within its caps: every chunk timestamped, the bytes counted, broken framing noticed.

The caps hold on what aiohttp hands over, which is after ``Content-Encoding`` is undone. aiohttp inflates a
compressed body in bounded steps as it is read (its ``DeflateBuffer`` caps each step), so a gzip bomb costs
about the cap in memory and stops as soon as the cap is passed (tests/clients/test_hostile_wire.py).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import aiohttp

from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.timing import Recording


@dataclass(frozen=True, slots=True)
class Limits:
    """Bytes one response may bring, counted after decompression: in all, and in one line (an SSE or NDJSON line)."""

    response_bytes: int = 32 * 2**20  # 500 tokens take ~100 kB of SSE; 300 times that is still a measurement
    line_bytes: int = 2**20  # one event's JSON; a 1200x840 image echoed back is ~250 kB


class BadFraming(aiohttp.ClientPayloadError):
    """The body broke HTTP/1.1 framing (a chunk size that is none): aiohttp's C parser drops it silently."""


def size(n: int) -> str:
    """``n`` bytes in the largest binary unit that divides it (MiB, KiB), else in bytes."""
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


def watch_framing(r: aiohttp.ClientResponse) -> None:
    """Fail the body's reader when the connection is dropped for broken framing, which aiohttp does not.

    Its C parser closes the connection on a bad chunk size and stops the idle timer, but never tells the
    body's reader: the read would wait for the total timeout. When the connection goes while the body is
    neither finished nor failed and the protocol holds a parse error, this fails the body at once.
    """
    proto = r.connection.protocol if r.connection is not None else None
    closed = proto.closed if proto is not None else None
    if proto is None or closed is None:
        return

    def lost(future: asyncio.Future[None]) -> None:
        if not future.cancelled():
            future.exception()  # retrieved, so asyncio does not log it as forgotten
        error = proto.exception()
        if error is not None and not r.content.is_eof() and r.content.exception() is None:
            what = str(getattr(error, "message", error)).split(":")[0][:80]  # the reason, not the bytes it quotes
            r.content.set_exception(BadFraming(f"bad response: invalid HTTP framing ({what})"))

    closed.add_done_callback(lost)


async def read_body(r: aiohttp.ClientResponse, limits: Limits, rec: Recording) -> None:
    """Every chunk with its arrival time, until the end or a cap; the caps cost two counters per chunk."""
    clock = time.perf_counter_ns
    chunks = rec.chunks
    total = line = 0  # bytes in all, and since the last line ending
    watch_framing(r)
    async for data in r.content.iter_any():
        chunks.append((clock(), data))
        total += len(data)
        end = data.rfind(b"\n")
        if end < 0:
            end = data.rfind(b"\r")
        line = line + len(data) if end < 0 else len(data) - end - 1
        if total > limits.response_bytes:
            why = f"response passed its {size(limits.response_bytes)} cap (--max-response-bytes); reading stopped"
        elif line > limits.line_bytes:
            why = f"a line of the response passed its {size(limits.line_bytes)} cap; reading stopped"
        else:
            continue
        rec.failure = Failure(ErrorKind.RESPONSE_TOO_LARGE, why)
        return
