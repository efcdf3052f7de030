"""The client's kept-alive connections: one per concurrent stream, opened ahead and reused, as a session would.

A request takes the origin's most recently used idle connection, or opens one (clients/connect.py); when its
response was read whole and the server keeps the connection, the connection goes back. At most ``limit``
connections are open: the oldest idle one is closed to make room, and a request past the limit waits for one.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import time
from collections.abc import Callable
from types import TracebackType

from tokenpace.clients.body import Limits, Response
from tokenpace.clients.connect import WebOrigin, open_link
from tokenpace.clients.head import encode_head
from tokenpace.clients.http1 import HttpConnection, Reads
from tokenpace.measure.timing import Recording


class Client:
    """What every request of a run shares: connections, the TLS context, and who is told of each write and read."""

    def __init__(
        self,
        limit: int,
        connect_s: float,
        on_sent: Callable[[Recording], None] | None = None,
        reads: Reads | None = None,
    ) -> None:
        self.limit = max(1, limit)
        self.connect_s = connect_s
        self.on_sent, self.reads = on_sent, reads
        self._idle: dict[WebOrigin, list[HttpConnection]] = {}
        self._open: set[HttpConnection | _Opening] = set()
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()  # requests past the limit
        self._context: ssl.SSLContext | None = None
        self._closed = False

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        self._closed = True
        for conn in list(self._open):
            if isinstance(conn, HttpConnection):
                conn.close()
        self._open.clear()
        self._idle.clear()

    async def tls(self) -> ssl.SSLContext:
        """The system's trust store (SSL_CERT_FILE where set), loaded once and off the loop (~50 ms of CPU)."""
        if self._context is None:
            loop = asyncio.get_running_loop()
            context = await loop.run_in_executor(None, ssl.create_default_context)
            context.set_alpn_protocols(["http/1.1"])
            self._context = context
        return self._context

    async def connection(self, origin: WebOrigin, rec: Recording | None = None) -> HttpConnection:
        """An idle connection to ``origin``, or a new one (its opening timed into ``rec``)."""
        idle = self._idle.get(origin, [])
        while idle:  # the most recently used first; one the server has closed meanwhile frees its slot
            if not (conn := idle.pop()).closed:
                return conn
            self._forget(conn)
        while len(self._open) >= self.limit and not self._close_oldest_idle():
            self._waiting.append(waiter := asyncio.get_running_loop().create_future())
            await waiter
        context = await self.tls() if origin.scheme == "https" else None
        if rec is not None:
            rec.t_connect_start_ns = time.perf_counter_ns()
        self._open.add(placeholder := _Opening())  # the slot is taken while the connection opens
        try:
            conn = HttpConnection(await open_link(origin, self.connect_s, context), self.reads)
        finally:
            self._forget(placeholder)
        if rec is not None:
            rec.t_connected_ns = time.perf_counter_ns()
        self._open.add(conn)
        return conn

    def _close_oldest_idle(self) -> bool:
        for idle in self._idle.values():
            if idle:
                conn = idle.pop(0)
                self._forget(conn)
                conn.close()
                return True
        return False

    def _forget(self, conn: HttpConnection | _Opening) -> None:
        self._open.discard(conn)
        while self._waiting:
            if not (waiter := self._waiting.popleft()).done():
                waiter.set_result(None)
                break

    def give_back(self, origin: WebOrigin, conn: HttpConnection) -> None:
        """A connection whose response was read whole: kept for the next request, unless it closed."""
        if not conn.reusable or self._closed:
            self._forget(conn)
            conn.close()
        else:
            self._idle.setdefault(origin, []).append(conn)

    async def send(
        self,
        method: str,
        origin: WebOrigin,
        target: str,
        headers: dict[str, str],
        body: bytes,
        rec: Recording,
        limits: Limits,
        *,
        stream: bool,
        keep: int,
        cap: int,
        idle_s: float,
        head: bytes | None = None,
    ) -> tuple[Response, HttpConnection]:
        """One request on a connection of the pool; the response once read (see HttpConnection.send).

        ``head``: the request line and headers built ahead for ``target``, else built here. The connection goes
        back to the pool when the response was read whole.
        """
        conn = await self.connection(origin, rec)
        if head is None:
            head = encode_head(method, target, origin.authority, headers, len(body) if body else None)
        try:
            response = await conn.send([head, body] if body else [head], rec, limits, stream, keep, cap, idle_s,
                                       self.on_sent)  # fmt: skip
        except BaseException:
            self._forget(conn)
            conn.close()
            raise
        self.give_back(origin, conn)
        return response, conn


class _Opening:
    """A connection being opened: it counts against the limit before it exists."""
