"""Distance on loopback: a TCP proxy that holds every byte ``one_way_ms`` in each direction (no tc netem here).

Each direction of each connection is a queue of (release time, bytes): a reader stamps a chunk as it arrives
and a forwarder writes it at arrival + one_way_ms. Chunks wait side by side, not one after another, so a
stream of many chunks is shifted by one_way_ms, never slowed by one_way_ms per chunk. TCP_NODELAY is set on
both sides so the kernel adds no batching of its own. Releases are never early and up to 1 ms late: the
event loop's timers wait on epoll, which counts whole milliseconds.

What it cannot delay is the TCP handshake: the kernel accepts a connection before the proxy sees it. So,
through a proxy, a client's ``connect_ms`` measures loopback, while anything that waits for an answer (a TLS
handshake, an HTTP round trip, TTFT) sees 2 x one_way_ms more than direct.

Memory is bounded: a direction holding ``buffer_bytes`` stops reading until its forwarder catches up, so a
fast sender meets TCP back-pressure as it would on a slow path.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections import deque
from types import TracebackType
from urllib.parse import urlsplit, urlunsplit

from tokenpace.errors import SimulatorError

READ_BYTES = 64 * 1024


class _Pipe:
    """One direction of one connection: chunks waiting for their release time, and the bytes they hold."""

    def __init__(self, proxy: DelayProxy) -> None:
        self.proxy = proxy
        self.chunks: deque[tuple[float, bytes]] = deque()  # (release time on the loop's clock, data); b"": EOF
        self.arrived = asyncio.Event()
        self.drained = asyncio.Event()
        self.held = 0

    async def read(self, reader: asyncio.StreamReader) -> None:
        """Stamp each chunk as it arrives, pausing while the pipe holds its cap."""
        loop = asyncio.get_running_loop()
        while True:
            while self.held >= self.proxy.buffer_bytes:
                self.drained.clear()
                await self.drained.wait()
            data = await reader.read(READ_BYTES)
            self.chunks.append((loop.time() + self.proxy.one_way_s, data))
            self._count(len(data))
            self.arrived.set()
            if not data:
                return

    async def forward(self, writer: asyncio.StreamWriter) -> None:
        """Write each chunk at its release time, in order; pass the end of the stream on as a half close."""
        loop = asyncio.get_running_loop()
        while True:
            while not self.chunks:
                self.arrived.clear()
                await self.arrived.wait()
            due, data = self.chunks[0]
            # Each wait is until an absolute time, so chunks that arrived together leave together.
            await asyncio.sleep(max(0.0, due - loop.time()))
            self.chunks.popleft()
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()
            self._count(-len(data))
            self.drained.set()

    def _count(self, n: int) -> None:
        self.held += n
        self.proxy.held += n
        self.proxy.peak = max(self.proxy.peak, self.held)


def _no_delay(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class DelayProxy:
    """Listens on 127.0.0.1 (a free port: ``port``) and forwards to target_host:target_port, one_way_ms each way.

    ``async with DelayProxy(...) as proxy`` runs it on the current event loop; ``with DelayProxy(...) as proxy``
    runs it on a loop of its own in a thread, beside blocking code or code that runs its own loop.
    """

    def __init__(self, target_host: str, target_port: int, one_way_ms: float, buffer_bytes: int = 4 * 2**20) -> None:
        if one_way_ms < 0 or buffer_bytes < 1:
            raise SimulatorError(
                f"a delay proxy needs one_way_ms >= 0 and buffer_bytes >= 1 ({one_way_ms}, {buffer_bytes})"
            )
        self.target_host, self.target_port = target_host, target_port
        self.one_way_s = one_way_ms / 1000
        self.buffer_bytes = buffer_bytes
        self.port = 0
        self.held = 0  # bytes held now, all connections and directions together
        self.peak = 0  # the most one direction of one connection has held
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._thread: threading.Thread | None = None
        self._stop: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None

    def via(self, url: str) -> str:
        """``url`` with its host and port replaced by the proxy's: the same path, reached through the delay."""
        parts = urlsplit(url)
        return urlunsplit(parts._replace(netloc=f"127.0.0.1:{self.port}"))

    async def __aenter__(self) -> DelayProxy:
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    def __enter__(self) -> DelayProxy:
        ready = threading.Event()

        async def main() -> None:
            self._stop = (asyncio.get_running_loop(), asyncio.Event())
            async with self:
                ready.set()
                await self._stop[1].wait()

        self._thread = threading.Thread(target=lambda: asyncio.run(main()), name="delay-proxy", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise SimulatorError("the delay proxy's thread did not start")
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._stop is not None and self._thread is not None:
            loop, stop = self._stop
            loop.call_soon_threadsafe(stop.set)
            self._thread.join(10)

    async def _connection(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._carry(client_r, client_w)
        except asyncio.CancelledError:
            pass  # closing the proxy: a handler that ended cancelled would make asyncio log a traceback
        finally:
            self._tasks.discard(task)

    async def _carry(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        up, down = _Pipe(self), _Pipe(self)
        target_w: asyncio.StreamWriter | None = None
        try:
            _no_delay(client_w)
            async with asyncio.TaskGroup() as tg:
                # Reading starts before the target is reached, so the first bytes are stamped when they came.
                tg.create_task(up.read(client_r))
                target_r, target_w = await asyncio.open_connection(self.target_host, self.target_port)
                _no_delay(target_w)
                tg.create_task(up.forward(target_w))
                tg.create_task(down.read(target_r))
                tg.create_task(down.forward(client_w))
        except* OSError:
            pass  # a reset or a refused target: the other side is closed below, as a cut cable would be
        finally:
            self.held -= up.held + down.held
            for writer in (client_w, target_w):
                if writer is not None:
                    writer.close()
