"""The HTTP transport every protocol shares: the timed hot path.

Request bytes are built before the clock starts, and while the stream runs each read costs one
``perf_counter_ns()`` and one list append; decoding happens after the stream ends. aiohttp's exceptions are
mapped to the failure taxonomy here and nowhere else.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace

import aiohttp

from tokenpace.clients.base import HttpRequest, one_line, redact
from tokenpace.failures import ErrorKind, Failure
from tokenpace.timing import Recording

MAX_ERROR_BODY = 4096
STALE_WINDOW_S = 0.5


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds. ``idle`` bounds any silence on the socket, before or after the first token."""

    connect: float = 10.0
    first_token: float = 60.0
    idle: float = 60.0  # as long as first_token: silence before the first byte counts as idle too
    total: float = 300.0


def _http_failure(status: int, body: bytes, secret: str | None) -> Failure:
    message = body.decode("utf-8", "replace")
    try:
        doc = json.loads(message)
        error = doc.get("error", doc) if isinstance(doc, dict) else doc
        message = str(error.get("message", error)) if isinstance(error, dict) else str(error)
    except ValueError:
        pass
    kind = ErrorKind.RATE_LIMITED if status == 429 else ErrorKind.HTTP_ERROR
    return Failure(kind, one_line(f"HTTP {status}: {redact(message, secret)}"), status)


def _client_failure(exc: aiohttp.ClientError, rec: Recording, secret: str | None) -> Failure:
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        kind = ErrorKind.CONNECT_TIMEOUT
    elif isinstance(exc, aiohttp.ServerTimeoutError):
        kind = ErrorKind.IDLE_TIMEOUT
    elif isinstance(exc, aiohttp.ClientConnectorError) or rec.t_headers_ns is None:
        kind = ErrorKind.CONNECT_ERROR
    else:
        kind = ErrorKind.INCOMPLETE_STREAM
    return Failure(kind, one_line(redact(f"{type(exc).__name__}: {exc}", secret)))


def trace_config() -> aiohttp.TraceConfig:
    """Records when a request had to open a new connection, so network set-up is told apart."""

    async def start(_s: aiohttp.ClientSession, ctx: SimpleNamespace, _p: object) -> None:
        if isinstance(ctx.trace_request_ctx, Recording):
            ctx.trace_request_ctx.t_connect_start_ns = time.perf_counter_ns()

    async def end(_s: aiohttp.ClientSession, ctx: SimpleNamespace, _p: object) -> None:
        if isinstance(ctx.trace_request_ctx, Recording):
            ctx.trace_request_ctx.t_connected_ns = time.perf_counter_ns()

    async def sent(_s: aiohttp.ClientSession, ctx: SimpleNamespace, _p: object) -> None:
        # aiohttp calls this just before handing the body (with the headers) to the transport.
        rec = ctx.trace_request_ctx
        if isinstance(rec, Recording) and rec.t_sent_ns is None:
            rec.t_sent_ns = time.perf_counter_ns()

    trace = aiohttp.TraceConfig()
    trace.on_connection_create_start.append(start)
    trace.on_connection_create_end.append(end)
    trace.on_request_chunk_sent.append(sent)
    return trace


def new_session(concurrency: int, timeouts: Timeouts) -> aiohttp.ClientSession:
    """A session whose pool holds one keep-alive connection per concurrent stream."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=concurrency, limit_per_host=0),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeouts.connect, sock_read=timeouts.idle),
        trace_configs=[trace_config()],
    )


async def warm(session: aiohttp.ClientSession, url: str, headers: Mapping[str, str], n: int) -> None:
    """Open ``n`` connections at once and leave them in the pool; failures here are not samples."""

    async def one() -> None:
        try:
            async with session.get(url, headers=headers) as resp:
                await resp.read()
        except (aiohttp.ClientError, TimeoutError):
            pass

    await asyncio.gather(*(one() for _ in range(n)))


async def _exchange(
    session: aiohttp.ClientSession,
    req: HttpRequest,
    timeouts: Timeouts,
    rec: Recording,
    has_token: Callable[[Recording], bool],
    expired: list[ErrorKind],
    start: float,
) -> None:
    loop = asyncio.get_running_loop()
    clock = time.perf_counter_ns
    chunks = rec.chunks
    rec.t_start_ns = clock()
    rec.t_sent_ns = None
    async with asyncio.timeout_at(start + timeouts.total) as deadline:

        def first_token_due() -> None:
            # Runs once, only if the first-token deadline passes while the stream is still open.
            if not has_token(rec):
                expired[0] = ErrorKind.FIRST_TOKEN_TIMEOUT
                deadline.reschedule(loop.time())

        check = loop.call_at(start + timeouts.first_token, first_token_due)
        try:
            async with session.post(req.url, data=req.body, headers=req.headers, trace_request_ctx=rec) as r:
                rec.t_headers_ns = clock()
                rec.http_status = r.status
                rec.request_id = r.headers.get("x-request-id")
                if r.status >= 300:
                    body = b""
                    while len(body) < MAX_ERROR_BODY and (more := await r.content.read(MAX_ERROR_BODY - len(body))):
                        body += more
                    rec.failure = _http_failure(r.status, body, req.secret)
                else:
                    async for data in r.content.iter_any():
                        chunks.append((clock(), data))
        finally:
            check.cancel()


def _pool_size(session: aiohttp.ClientSession) -> int:
    return session.connector.limit if session.connector is not None and session.connector.limit else 1


def _stale(exc: aiohttp.ClientError, rec: Recording) -> bool:
    """A pooled keep-alive connection the server had already closed: the request never reached it.

    Either the request could not be written, or the server hung up at once (a keep-alive race shows within
    milliseconds). A server that drops a request later, during a long prefill say, is a failure, not retried.
    """
    if rec.t_connect_start_ns is not None or rec.t_headers_ns is not None:
        return False  # a fresh connection, or the server had answered: nothing stale about it
    if isinstance(exc, aiohttp.ClientOSError) or rec.t_sent_ns is None:
        return True
    waited = (time.perf_counter_ns() - rec.t_sent_ns) / 1e9
    return isinstance(exc, aiohttp.ServerDisconnectedError) and waited < STALE_WINDOW_S


async def record(
    session: aiohttp.ClientSession,
    req: HttpRequest,
    timeouts: Timeouts,
    rec: Recording,
    has_token: Callable[[Recording], bool],
) -> None:
    """Send ``req`` and fill ``rec`` with every chunk's arrival time; failures land in ``rec.failure``.

    A request that fails on a stale pooled connection is sent again, clock restarted, as HTTP clients do.
    On cancellation ``rec`` is marked cancelled before the cancellation propagates.
    """
    rec.secret = req.secret
    expired = [ErrorKind.TOTAL_TIMEOUT]
    start = asyncio.get_running_loop().time()  # retries share the deadlines: the total bounds them all
    try:
        # Each stale connection is dropped from the pool when it fails, so the pool's size bounds the retries.
        for attempt in range(_pool_size(session) + 1):
            try:
                await _exchange(session, req, timeouts, rec, has_token, expired, start)
                break
            except aiohttp.ClientError as exc:
                if attempt == _pool_size(session) or not _stale(exc, rec):
                    raise
    except TimeoutError as exc:
        if isinstance(exc, aiohttp.ClientError):  # aiohttp's own timeouts subclass TimeoutError
            rec.failure = _client_failure(exc, rec, req.secret)
        else:
            limit = timeouts.first_token if expired[0] is ErrorKind.FIRST_TOKEN_TIMEOUT else timeouts.total
            rec.failure = Failure(expired[0], f"{expired[0].value.replace('_', ' ')} after {limit:g} s")
    except aiohttp.ClientError as exc:
        rec.failure = _client_failure(exc, rec, req.secret)
    except asyncio.CancelledError:
        rec.failure = Failure(ErrorKind.CANCELLED, "cancelled by the client")
        raise
    finally:
        rec.t_end_ns = time.perf_counter_ns()
