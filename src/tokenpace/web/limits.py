"""What keeps readers of the board from starving the sampler that shares their event loop.

A flood of page requests once served 22.6 req/s with a 61 s p99, and a sample timed meanwhile read TTFT 379 ms
against a true 150: views ran on Starlette's 40-thread pool, every one of them holding the GIL the timing loop
needs. Now:

* views run on a pool of ``VIEW_THREADS`` threads (in ``tokenpace serve`` each waits on the worker process
  that renders: renderer.py), and a warm page is answered from the memo on the loop;
* beyond ``MAX_IN_FLIGHT`` requests in flight the answer is 503 with ``Retry-After`` at once (``/health`` has
  its own small allowance, so a flood of pages never hides the service's health);
* connections: at most ``MAX_CONNECTIONS`` (past that the longest-idle one is closed), and one that has not
  sent a complete request head within ``HEADER_TIMEOUT_S`` of opening (or of its last response) is closed:
  uvicorn has no header-read timeout of its own, and a slowloris client that sends a byte every few seconds
  resets its keep-alive timer forever;
* a request head over ``MAX_HEAD_BYTES`` is answered 431 and the connection closed. h11's own limit holds
  only for a head still incomplete in its buffer (one that arrives whole in one read passed at any size), and
  uvicorn's 400 for it was lost: closing with the rest of a 1 MiB head unread resets the connection, and the
  client read no status. So the 431 is written, our side shut, and what the client still sends is read and
  dropped until it closes (for at most ``LINGER_S``). Every head is measured where h11 is about to read it,
  so a pipelined request's (sent behind the first, buffered while the first is answered) is measured too;
* a request with both ``Content-Length`` and ``Transfer-Encoding`` is answered 400 and the connection closed
  the same way (RFC 9112 section 6.3): the two framings disagree on where the body ends, and bytes one
  counts as body the other would serve as the next request (request smuggling).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import h11
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

T = TypeVar("T")
VIEW_THREADS = 2  # page computations at once: the rest wait, off the loop
MAX_IN_FLIGHT = 64  # requests running or waiting for a view thread; more: 503 at once
HEALTH_IN_FLIGHT = 8  # /health's own allowance, outside MAX_IN_FLIGHT
RETRY_AFTER_S = 2
MAX_CONNECTIONS = 512  # open HTTP connections; a new one past this evicts the longest-idle one
HEADER_TIMEOUT_S = 10.0  # from a connection's opening (or its last response) to a complete request head
KEEP_ALIVE_S = 5  # uvicorn's timeout_keep_alive: an idle keep-alive connection closes after this
MAX_HEAD_BYTES = 16 * 1024  # request line and headers, up to the blank line that ends them; more is a 431
LINGER_S = 2.0  # after a refusal (431, 400), how long what the client still sends is read and dropped before closing
_ANSWER = b"HTTP/1.1 %s\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\ncontent-length: %d\r\n\r\n%s"
_HEAD_END = re.compile(rb"\n\r?\n")  # where h11 ends a head: a blank line, CRLF or bare LF
BACKLOG = 128  # connections the kernel queues before accept


class ViewPool:
    """At most ``threads`` views computing at once, off the event loop; the rest wait their turn."""

    def __init__(self, threads: int = VIEW_THREADS) -> None:
        self._threads = threads
        self._limiter: anyio.CapacityLimiter | None = None

    async def run(self, fn: Callable[[], T]) -> T:
        if self._limiter is None:  # made on the loop that serves: anyio binds it there
            self._limiter = anyio.CapacityLimiter(self._threads)
        return await anyio.to_thread.run_sync(fn, limiter=self._limiter)


class InFlightLimit:
    """ASGI middleware: 503 with Retry-After past ``limit`` requests in flight (``/health`` counted apart)."""

    def __init__(self, app: ASGIApp, limit: int = MAX_IN_FLIGHT, health_limit: int = HEALTH_IN_FLIGHT) -> None:
        self.app = app
        self.limits = {False: limit, True: health_limit}
        self.in_flight = {False: 0, True: 0}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        health = scope.get("path") == "/health"
        if self.in_flight[health] >= self.limits[health]:
            await _busy(send, self.in_flight[health])
            return
        self.in_flight[health] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight[health] -= 1


async def _busy(send: Send, count: int) -> None:
    body = f"busy: {count} requests in flight; retry in {RETRY_AFTER_S} s\n".encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(RETRY_AFTER_S).encode()),
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _Refused(Exception):
    """A request answered before uvicorn sees it: its status and why, then the connection closes."""

    def __init__(self, status: str, why: str) -> None:
        super().__init__(why)
        self.status, self.why = status, why


class _CheckedConnection(h11.Connection):
    """h11's server side, refusing a head over MAX_HEAD_BYTES wherever it stands in the stream (the first
    request's or a pipelined one's) and a request framed both by length and by chunks."""

    def next_event(self) -> Any:
        if self.their_state is h11.IDLE:  # a head is next: all of it that has arrived is in the buffer
            pending, _ = self.trailing_data
            if len(pending) >= MAX_HEAD_BYTES and _HEAD_END.search(pending, 0, MAX_HEAD_BYTES) is None:
                raise _Refused("431 Request Header Fields Too Large", f"request head over {MAX_HEAD_BYTES} bytes")
        event = super().next_event()
        if isinstance(event, h11.Request):
            names = {name for name, _ in event.headers}  # h11 gives them lowercase
            if b"content-length" in names and b"transfer-encoding" in names:
                raise _Refused("400 Bad Request", "Content-Length with Transfer-Encoding (RFC 9112 section 6.3)")
        return event


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a request-head deadline and a cap on open connections."""

    header_timeout_s = HEADER_TIMEOUT_S
    max_connections = MAX_CONNECTIONS

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.conn = _CheckedConnection(h11.SERVER, MAX_HEAD_BYTES)  # nothing was read yet with uvicorn's own
        self._deadline: asyncio.TimerHandle | None = None
        self._refused = False
        self._arm()
        if len(self.connections) > self.max_connections:
            self._evict()

    def _arm(self) -> None:
        """Wait for a complete request head, from now on, for header_timeout_s."""
        self._disarm()
        self._idle_since = time.monotonic()
        self._waiting_for = self.cycle  # a new request replaces the cycle: then the head has arrived
        self._deadline = self.loop.call_later(self.header_timeout_s, self._expire)

    def _disarm(self) -> None:
        deadline, self._deadline = getattr(self, "_deadline", None), None
        if deadline is not None:
            deadline.cancel()

    def _idle(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _close(self) -> None:
        if not self.transport.is_closing():
            with contextlib.suppress(h11.LocalProtocolError):
                self.conn.send(h11.ConnectionClosed())
            self.transport.close()

    def _expire(self) -> None:
        self._deadline = None
        if self.cycle is self._waiting_for and self._idle():
            self._close()

    def _evict(self) -> None:
        """Close the longest-idle connection to make room (this one, if every other is busy)."""
        idle = [c for c in self.connections if isinstance(c, GuardedH11Protocol) and c is not self and c._idle()]
        victim = min(idle, key=lambda c: c._idle_since) if idle else self
        victim._close()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # the refusal is sent: the rest of the request is dropped unread
        super().data_received(data)
        if self.cycle is not self._waiting_for:
            self._disarm()

    def handle_events(self) -> None:
        try:
            super().handle_events()
        except _Refused as refused:
            self._refuse(refused)

    def _refuse(self, refused: _Refused) -> None:
        self._refused = True
        self._disarm()
        body = f"{refused.why}\n".encode()
        self.transport.write(_ANSWER % (refused.status.encode(), len(body), body))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER_S, self.transport.close)

    def on_response_complete(self) -> None:
        super().on_response_complete()  # may refuse a pipelined request already buffered
        if not self.transport.is_closing() and not self._refused:
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def server_options(**overrides: Any) -> dict[str, Any]:
    """uvicorn.Config keyword arguments with every limit above; ``overrides`` replace any of them."""
    options: dict[str, Any] = {
        "http": GuardedH11Protocol,
        "limit_concurrency": 2 * MAX_CONNECTIONS,  # uvicorn's own 503, a backstop behind InFlightLimit
        "timeout_keep_alive": KEEP_ALIVE_S,
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
        "backlog": BACKLOG,
        "log_level": "warning",
        "access_log": False,
        "lifespan": "off",
    }
    return options | overrides


def guarded(header_timeout_s: float, max_connections: int) -> type[GuardedH11Protocol]:
    """The protocol with other limits (tests use short ones)."""
    attrs: dict[str, Callable[..., Any] | float | int] = {
        "header_timeout_s": header_timeout_s,
        "max_connections": max_connections,
    }
    return type("GuardedH11ProtocolWith", (GuardedH11Protocol,), attrs)
