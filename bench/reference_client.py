"""The bare-client reference for bench/fidelity.py: a minimal streaming client, a closed loop of N streams on uvloop.

Written for the benchmark only, to show what this machine and truth server allow a client, so that tokenpace is
judged against a floor measured in the same run. What it is: asyncio's Protocol API on uvloop, one keep-alive
connection per stream opened before the clock, every request's bytes (tokenpace's own prompts, built by
tokenpace.prompts, in an OpenAI chat body shaped like tokenpace's) built before the clock, ``perf_counter_ns()``
taken first thing in ``data_received``, one arrival time per SSE event found there (events counted by their
``\\n\\n`` ends), the first event carrying content text found as it arrives, and each stream's next request written
from the callback that read the end of its last. What it is not: a client. It parses HTTP/1.1 just enough for
bench/truth_server.py and ``tokenpace sim`` (a status line, an x-request-id header, chunked framing known to end in
``\\r\\n0\\r\\n\\r\\n``), never decodes the JSON, follows no redirect, retries nothing and keeps no text: a server that
strays from that shape fails the request, it is never read correctly.

The closed loop is tokenpace's: stream k's first request is due ``k * stagger`` after the start (the same
CLOSED_LOOP_STAGGER_S), each later one the moment the stream's last ended, until ``requests`` are sent; a
request's ``asked_ns`` is when it was due (a late timer counts as the client's wait), ``sent_ns`` is just before
``transport.write``.
"""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter_ns, process_time
from typing import cast

from tokenpace.config.workloads import Workload
from tokenpace.prompts.prompt import build_turns

MAX_HEAD = 64 * 1024
MAX_EVENTS = 100_000  # per request: a stream that never ends is bounded by the level's timeout and this
END = b"\r\n0\r\n\r\n"  # the chunked body's last chunk after the one before it: the connection is free again
CONTENT = b'"content":"'  # then a character other than '"': an event carrying content text


@dataclass(slots=True)
class Sent:
    """One request as the reference saw it: when it was due and written, and when each of its events arrived."""

    stream: int
    round: int  # 0: the stream's first request (its connection's first; released with the first burst)
    asked_ns: int
    sent_ns: int
    arrivals: list[int] = field(default_factory=list)  # one perf_counter_ns per SSE event, in order
    first: int = -1  # the index in arrivals of the first event carrying content text; -1: none
    request_id: str | None = None
    error: str | None = None  # None: the stream ended as the protocol says
    end_ns: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None and self.end_ns > 0 and self.first >= 0 and self.request_id is not None


def request_bytes(host: str, port: int, workload: Workload, seed: int, model: str = "sim") -> bytes:
    """A streaming chat request for prompt ``seed``: the body tokenpace's openai_chat client sends for it."""
    prompt = build_turns(workload, seed)[0]
    body = json.dumps({
        "model": model,
        "messages": [{"role": m.role, "content": m.text} for m in prompt.messages],
        "max_tokens": prompt.max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }).encode()  # fmt: skip
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
    return f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body


class Loop:
    """The closed loop's state shared by its streams: the requests to send, those sent, and when all are done."""

    def __init__(self, requests: list[bytes], streams: int) -> None:
        self.requests = requests
        self.next = 0
        self.sent: list[Sent] = []
        self.running = streams
        self.done = asyncio.get_running_loop().create_future()

    def take(self) -> bytes | None:
        if self.next >= len(self.requests):
            return None
        self.next += 1
        return self.requests[self.next - 1]

    def stopped(self) -> None:
        self.running -= 1
        if self.running == 0 and not self.done.done():
            self.done.set_result(None)


class Stream(asyncio.Protocol):
    """One stream of the closed loop: one connection, one request at a time."""

    def __init__(self, loop: Loop, k: int) -> None:
        self.loop, self.k, self.rounds = loop, k, 0
        self.cur: Sent | None = None
        self.head: bytearray | None = None  # the response head while it is incomplete; None once read
        self.last = b""  # the previous read, for an end or an event's "\n\n" split between two reads
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not asyncio.Transport subclasses

    def send(self, asked_ns: int) -> None:
        data = None if self.closed else self.loop.take()
        if data is None:
            self.cur = None
            self.transport.close()
            self.loop.stopped()
            return
        self.head, self.last = bytearray(), b""
        self.cur = Sent(self.k, self.rounds, asked_ns, perf_counter_ns())
        self.loop.sent.append(self.cur)
        self.rounds += 1
        self.transport.write(data)  # sent_ns above: the write is the last thing before the request leaves

    def data_received(self, data: bytes) -> None:
        t = perf_counter_ns()
        cur = self.cur
        if cur is None:  # bytes nobody asked for
            return self.fail("bytes after the stream's end")
        if self.head is not None:
            self.head += data
            if (end := self.head.find(b"\r\n\r\n")) < 0:
                if len(self.head) > MAX_HEAD:
                    self.fail("response head too long")
                return
            head, data = bytes(self.head[:end]), bytes(self.head[end + 4 :])
            self.head = None
            lower = head.lower()
            if not lower.startswith(b"http/1.1 200 ") or b"\r\ntransfer-encoding: chunked" not in lower:
                return self.fail(head.split(b"\r\n", 1)[0].decode("latin-1"))
            if (at := lower.find(b"\r\nx-request-id:")) >= 0:
                cur.request_id = head[at + 2 :].split(b"\r\n", 1)[0].partition(b":")[2].strip().decode("latin-1")
        n = data.count(b"\n\n") + (self.last[-1:] == b"\n" and data[:1] == b"\n")
        if cur.first < 0 and (at := data.find(CONTENT)) >= 0:
            while at >= 0 and data[at + len(CONTENT) : at + len(CONTENT) + 1] == b'"':  # "content":"" is no text
                at = data.find(CONTENT, at + 1)
            if at >= 0:
                cur.first = len(cur.arrivals) + data.count(b"\n\n", 0, at)
        cur.arrivals += [t] * n
        if data.endswith(END) or (len(data) < len(END) and (self.last + data).endswith(END)):
            cur.end_ns = t
            return self.send(t)
        if len(cur.arrivals) > MAX_EVENTS:
            return self.fail(f"over {MAX_EVENTS} events")
        self.last = data

    def fail(self, why: str) -> None:
        if self.cur is not None and self.cur.error is None:
            self.cur.error = why
        self.closed = True
        self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.cur is not None:
            if self.cur.error is None:
                self.cur.error = f"connection lost: {exc}"
            self.cur = None
            self.loop.stopped()
        self.closed = True


@dataclass(frozen=True, slots=True)
class Level:
    """What one closed loop sent, and the process CPU its requests' bytes took to build (prompts included)."""

    sent: list[Sent]
    build_cpu_s: float


async def closed_loop(
    host: str, port: int, requests: list[bytes], streams: int, stagger_s: float, timeout_s: float
) -> list[Sent]:
    """Send ``requests`` over ``streams`` keep-alive connections, each stream's next when its last has ended."""
    aio = asyncio.get_running_loop()
    loop = Loop(requests, streams)

    def stream(k: int) -> Callable[[], Stream]:
        return lambda: Stream(loop, k)

    opened = await asyncio.gather(*(aio.create_connection(stream(k), host, port) for k in range(streams)))
    conns = [protocol for _, protocol in opened]
    t0 = perf_counter_ns()

    def due(conn: Stream, asked_ns: int) -> None:
        # uvloop's timers may fire up to a millisecond early: a request is never written before it is due
        if (rest := asked_ns - perf_counter_ns()) > 0:
            aio.call_later(rest / 1e9, due, conn, asked_ns)
        else:
            conn.send(asked_ns)

    for k, conn in enumerate(conns):
        asked = t0 + round(k * stagger_s * 1e9)
        aio.call_later(max(0.0, (asked - perf_counter_ns()) / 1e9), due, conn, asked)
    try:
        async with asyncio.timeout(timeout_s):
            await loop.done
    except TimeoutError:
        for conn in conns:
            conn.fail(f"the level's {timeout_s:g} s ran out")
    return loop.sent


def run(
    host: str,
    port: int,
    workload: Workload,
    *,
    streams: int,
    requests: int,
    seed: int = 1,
    stagger_s: float = 0.0,
    timeout_s: float = 600.0,
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None,
) -> Level:
    """Build the requests (prompts seed .. seed + requests - 1, tokenpace's seeds for its run with ``seed``), then
    run the closed loop on its own event loop (uvloop if none given) with garbage collection off."""
    if loop_factory is None:
        import uvloop

        loop_factory = uvloop.new_event_loop
    cpu0 = process_time()
    built = [request_bytes(host, port, workload, seed + i) for i in range(requests)]
    build_cpu_s = process_time() - cpu0
    was = gc.isenabled()
    gc.disable()  # no collection in the window either: its few objects live as long as the level
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return Level(runner.run(closed_loop(host, port, built, streams, stagger_s, timeout_s)), build_cpu_s)
    finally:
        if was:
            gc.enable()
