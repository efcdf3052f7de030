"""The board's web server under hostile readers (issue 9 item 14): a real uvicorn on a free port, real sockets.

Bounded in count and time: a flood of 300 requests, a few dozen idle sockets, one slowloris; every wait has a
deadline far above what a busy 2-core machine needs, and nothing asserts how fast anything is (bench/flood.py
measures that).
"""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import uvicorn

from tests.web.test_origins import BUSY, ONCE, PRIVATE, STEADY, _write
from tokenpace.config.endpoints import Config
from tokenpace.serve import service
from tokenpace.store.database import open_store
from tokenpace.web import create_app
from tokenpace.web.limits import (
    BACKLOG,
    HEADER_TIMEOUT_S,
    KEEP_ALIVE_S,
    MAX_CONNECTIONS,
    MAX_HEAD_BYTES,
    GuardedH11Protocol,
    guarded,
    server_options,
)


class Running:
    """A uvicorn server with the service's options (and ``overrides``) on its own thread and loop."""

    def __init__(self, app: Any, **overrides: Any) -> None:
        self.sock = service.listen("127.0.0.1", 0)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = service._Server(uvicorn.Config(app, **server_options(**overrides)))
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve(sockets=[self.sock])))

    def __enter__(self) -> Running:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()
        assert not self.thread.is_alive()


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Any]:
    with open_store(str(tmp_path / "limits.db")) as store:
        _write(store)
        yield create_app(store, Config(endpoints=(STEADY, BUSY, ONCE, PRIVATE), source="limits-test.toml"))


def test_the_service_runs_uvicorn_with_every_limit() -> None:
    config = service.server_config(object())
    assert config.http is GuardedH11Protocol
    assert (config.timeout_keep_alive, config.h11_max_incomplete_event_size, config.backlog) == (
        KEEP_ALIVE_S, MAX_HEAD_BYTES, BACKLOG
    )  # fmt: skip
    assert config.limit_concurrency is not None and config.limit_concurrency >= MAX_CONNECTIONS
    assert GuardedH11Protocol.header_timeout_s == HEADER_TIMEOUT_S > 0


def _closed(sock: socket.socket, within_s: float) -> bool:
    """Whether the server closed this connection (EOF or reset) within the time given."""
    sock.settimeout(within_s)
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _health(url: str) -> int:
    with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=10) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        head = s.recv(64)
    return int(head.split()[1])


def test_idle_connections_are_closed_and_evicted_while_requests_are_answered(app: Any) -> None:
    with Running(app, http=guarded(header_timeout_s=1.0, max_connections=20)) as running:
        idle = [socket.create_connection(("127.0.0.1", running.port), timeout=10) for _ in range(30)]
        try:
            # Past 20 open connections, each new one closed the longest-idle: the first 10 went.
            assert all(_closed(s, 10) for s in idle[:10])
            assert _health(running.url) == 200
            # The rest never sent a request head: closed after the 1 s deadline, not held for ever.
            assert all(_closed(s, 10) for s in idle[10:])
            assert _health(running.url) == 200
        finally:
            for s in idle:
                s.close()


def test_a_slowloris_request_head_is_cut_off(app: Any) -> None:
    with Running(app, http=guarded(header_timeout_s=1.0, max_connections=20)) as running:
        s = socket.create_connection(("127.0.0.1", running.port), timeout=10)
        with s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            closed = False
            for _ in range(100):  # one byte every 0.1 s would take 10 s: the 1 s deadline ends it well before
                try:
                    s.sendall(b"a")
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
                    break
                if _closed(s, 0.1):
                    closed = True
                    break
        assert closed
        assert _health(running.url) == 200


async def _flood(url: str, count: int) -> tuple[Counter[int], list[int], bool]:
    """``count`` requests at once over as many connections, while /health is asked every 50 ms."""
    paths = ["/", "/leaderboard.json", "/leaderboard.csv", "/?sort=ttft", "/endpoint/steady/default/m", "/model/m"]
    paths += ["/metrics", "/methodology", "/?provider=nobody"]
    paths += ["/incidents", "/incidents.atom", "/status/steady", "/badge/endpoint/steady/default/m/uptime.svg"]
    paths += ["/badge/model/m/speed.svg", "/badge/model/m/uptime.svg"]
    paths += ["/route?model=m", "/route.json?model=m&format=litellm", "/routing"]
    statuses: Counter[int] = Counter()
    health: list[int] = []
    retry_after_everywhere = True
    done = asyncio.Event()
    timeout = aiohttp.ClientTimeout(total=60)
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, force_close=True), timeout=timeout) as flood,
        aiohttp.ClientSession(timeout=timeout) as doctor,
    ):

        async def one(i: int) -> None:
            nonlocal retry_after_everywhere
            async with flood.get(url + paths[i % len(paths)]) as r:
                await r.read()
                statuses[r.status] += 1
                if r.status == 503:
                    retry_after_everywhere &= r.headers.get("Retry-After", "").isdigit()

        async def watch() -> None:
            while not done.is_set():
                async with doctor.get(url + "/health") as r:
                    health.append(r.status)
                await asyncio.sleep(0.05)

        watcher = asyncio.create_task(watch())
        await asyncio.gather(*(one(i) for i in range(count)))
        done.set()
        await watcher
    return statuses, health, retry_after_everywhere


def test_a_flood_of_300_requests_gets_answers_or_503_and_health_keeps_answering(app: Any) -> None:
    with Running(app) as running:
        statuses, health, retry_after = asyncio.run(asyncio.wait_for(_flood(running.url, 300), 120))
        assert sum(statuses.values()) == 300 and set(statuses) <= {200, 503}, statuses
        assert statuses[200] > 0 and retry_after
        assert health and set(health) == {200}, health
        assert _health(running.url) == 200  # and it is still up


def _status_of_head(port: int, head_bytes: int, *, pieces: int = 1) -> int | None:
    """The status answered to a GET whose head is ``head_bytes`` long (one padded header), sent in ``pieces``
    writes; None where the server answered nothing (closed or reset)."""
    start = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: "
    head = start + b"a" * (head_bytes - len(start) - 4) + b"\r\n\r\n"
    assert len(head) == head_bytes
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        try:
            step = -(-len(head) // pieces)
            for i in range(0, len(head), step):
                s.sendall(head[i : i + step])
            answer = b""
            while b"\r\n" not in answer and (more := s.recv(4096)):
                answer += more
        except (ConnectionResetError, BrokenPipeError):
            return None
    return int(answer.split()[1]) if answer.startswith(b"HTTP/1.1 ") else None


@pytest.mark.parametrize("pieces", [1, 7])
def test_a_request_head_over_16_kib_is_a_431(app: Any, pieces: int) -> None:
    """Whole in one write or in pieces, under the limit or over it, up to 1 MiB: every head gets a status."""
    with Running(app) as running:
        assert _status_of_head(running.port, MAX_HEAD_BYTES, pieces=pieces) == 200
        for size in (MAX_HEAD_BYTES + 1, 20 * 1024, 200 * 1024, 1024 * 1024):
            assert _status_of_head(running.port, size, pieces=pieces) == 431, size
        assert _health(running.url) == 200  # and it serves on


def _answers(port: int, sent: bytes) -> tuple[list[int], bool]:
    """The statuses answered to ``sent`` (written at once) on one connection, and whether the server closed it."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(sent)
        got, closed = b"", False
        s.settimeout(5)  # the server closes within LINGER_S of a refusal; a connection kept open times out here
        try:
            while more := s.recv(65536):
                got += more
            closed = True
        except ConnectionResetError:
            closed = True
        except TimeoutError:
            pass
    return [int(status) for status in re.findall(rb"HTTP/1\.1 (\d{3}) ", got)], closed  # no body here says that


def test_a_pipelined_request_head_over_16_kib_is_a_431_too(app: Any) -> None:
    """The limit holds for every head on a connection, not only the first: a second request sent behind the
    first (HTTP/1.1 pipelining) waits in h11's buffer, where no read of ours would have seen it."""
    small = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    large = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * (20 * 1024) + b"\r\n\r\n"
    with Running(app) as running:
        assert _answers(running.port, small + large) == ([200, 431], True)
        assert _answers(running.port, small + small + large + small) == ([200, 200, 431], True)
        assert _health(running.url) == 200


def test_a_request_framed_by_length_and_by_chunks_is_refused_and_closed(app: Any) -> None:
    """Content-Length and Transfer-Encoding both: a 400 and the connection closed (RFC 9112 section 6.3), so
    the bytes after the chunked body are never served as a request of their own (request smuggling)."""
    smuggled = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    body = b"0\r\n\r\n" + smuggled
    head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n" % len(body)
    with Running(app) as running:
        assert _answers(running.port, head + body) == ([400], True)
        assert _health(running.url) == 200
