"""The HTTP transport every protocol shares: the timed hot path.

Request bytes are built before the clock starts, and while the stream runs each read costs one
``perf_counter_ns()``, one list append and two byte counters (``body.read_body``); decoding happens after the
stream ends, and on a thread when the first-token deadline needs it earlier. Redirects are followed only
within the request's origin, where the key was meant to go. aiohttp's exceptions are mapped to the failure
taxonomy here and nowhere else.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace

import aiohttp
from yarl import URL

from tokenpace.clients import ratelimits
from tokenpace.clients.base import HttpRequest, one_line
from tokenpace.clients.body import BadFraming, read_body
from tokenpace.clients.body import Limits as Limits  # beside Timeouts, where callers look for it
from tokenpace.clients.scrub import redact
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.timing import Recording

MAX_ERROR_BODY = 4096
STALE_WINDOW_S = 0.5
WARM_EXTRA_S = 5.0  # the warm-up's deadline: the connect timeout plus this, never more than the total timeout
WARM_BYTES = 2**20  # a model list longer than this is not read on: the connection is what the warm-up is for
MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds. ``idle`` bounds any silence on the socket, before or after the first token."""

    connect: float = 10.0
    first_token: float = 60.0
    idle: float = 60.0  # as long as first_token: silence before the first byte counts as idle too
    total: float = 300.0


def _http_failure(status: int, body: bytes, secrets: tuple[str, ...]) -> Failure:
    message = body.decode("utf-8", "replace")
    try:
        doc = json.loads(message)
        error = doc.get("error", doc) if isinstance(doc, dict) else doc
        message = str(error.get("message", error)) if isinstance(error, dict) else str(error)
    except (ValueError, RecursionError):
        pass
    kind = ErrorKind.RATE_LIMITED if status == 429 else ErrorKind.HTTP_ERROR
    return Failure(kind, one_line(f"HTTP {status}: {redact(message, secrets)}"), status)


def _rate_limited(failure: Failure, headers: Mapping[str, str], secrets: tuple[str, ...]) -> Failure:
    """The 429's failure with its Retry-After (seconds from now) and rate-limit headers, bounded."""
    after = headers.get("Retry-After")
    wait = None if after is None else ratelimits.retry_after_s(after, time.time())
    kept = ratelimits.ratelimit_headers(headers.items(), secrets)
    return dataclasses.replace(failure, retry_after_s=wait, ratelimits=kept)


def _bad_response(exc: aiohttp.ClientResponseError) -> str:
    """What was wrong with a response aiohttp could not parse; never the offending bytes themselves."""
    if too_long := re.search(r"Got more than (\d+) bytes", exc.message):
        return f"bad response: a response header line is over {too_long[1]} bytes"
    return f"bad response: not valid HTTP ({exc.message.split(':')[0][:80]})"


def _not_connected(exc: aiohttp.ClientConnectorError) -> str:
    """What was tried and why it failed: ``cannot connect to 127.0.0.1:9 (connection refused)``. aiohttp's
    own text holds its connection key (``ssl:default`` on plain HTTP, as if TLS had been tried)."""
    error = exc.os_error
    if isinstance(error, socket.gaierror):
        why = f"host name not resolved: {error.strerror or error}"
    elif isinstance(error, ConnectionRefusedError):
        why = "connection refused"
    else:
        why = error.strerror or str(error) or type(error).__name__
    return f"cannot connect to {exc.host}:{exc.port} ({why})"


def _client_failure(exc: aiohttp.ClientError, rec: Recording, secrets: tuple[str, ...]) -> Failure:
    message = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        kind = ErrorKind.CONNECT_TIMEOUT
    elif isinstance(exc, aiohttp.ServerTimeoutError):
        kind = ErrorKind.IDLE_TIMEOUT
    elif isinstance(exc, BadFraming):
        kind, message = ErrorKind.BAD_RESPONSE, str(exc)
    elif isinstance(exc, aiohttp.ClientResponseError):  # the server answered, but not in HTTP
        kind, message = ErrorKind.BAD_RESPONSE, _bad_response(exc)
    elif isinstance(exc, aiohttp.ClientConnectorError) and not isinstance(exc, aiohttp.ClientSSLError):
        kind, message = ErrorKind.CONNECT_ERROR, _not_connected(exc)  # a TLS failure's own text says what failed
    elif isinstance(exc, aiohttp.ClientConnectorError) or rec.t_headers_ns is None:
        kind = ErrorKind.CONNECT_ERROR
    else:
        kind = ErrorKind.INCOMPLETE_STREAM
    return Failure(kind, one_line(redact(message, secrets)))


def trace_config(on_sent: Callable[[Recording], None] | None = None) -> aiohttp.TraceConfig:
    """Records when a request had to open a new connection, so network set-up is told apart, and when it
    was written (``on_sent`` is then told: load/decodegate.py)."""

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
            if on_sent is not None:
                on_sent(rec)

    trace = aiohttp.TraceConfig()
    trace.on_connection_create_start.append(start)
    trace.on_connection_create_end.append(end)
    trace.on_request_chunk_sent.append(sent)
    return trace


def new_session(
    concurrency: int, timeouts: Timeouts, on_sent: Callable[[Recording], None] | None = None
) -> aiohttp.ClientSession:
    """A session whose pool holds one keep-alive connection per concurrent stream; ``on_sent(recording)`` runs
    as each request is handed to its socket."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=concurrency, limit_per_host=0),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeouts.connect, sock_read=timeouts.idle),
        trace_configs=[trace_config(on_sent)],
    )


async def warm(
    session: aiohttp.ClientSession, url: str, headers: Mapping[str, str], n: int, timeouts: Timeouts
) -> None:
    """Open ``n`` connections at once and leave them in the pool; failures here are not samples.

    Bounded like everything a server sends: by time (connect timeout + WARM_EXTRA_S, at most the total
    timeout) and bytes (WARM_BYTES); a redirect is never followed, so the key goes nowhere else.
    """

    async def one() -> None:
        try:
            async with asyncio.timeout(min(timeouts.total, timeouts.connect + WARM_EXTRA_S)):
                async with session.get(url, headers=headers, allow_redirects=False) as resp:
                    got = 0
                    while got < WARM_BYTES and (data := await resp.content.read(64 * 1024)):
                        got += len(data)
        except (aiohttp.ClientError, TimeoutError):
            pass

    await asyncio.gather(*(one() for _ in range(n)))


def _origin(url: URL) -> tuple[str, str | None, int | None]:
    return url.scheme, url.host, url.port


def _location(base: URL, location: str) -> URL | None:
    """Where a redirect points, or None where its Location is no URL (``http://[::1`` makes yarl raise)."""
    try:
        target = base.join(URL(location))
        target.origin()  # raises for a target without a host (``mailto:x``)
    except ValueError:
        return None
    return target


async def _exchange(
    session: aiohttp.ClientSession,
    req: HttpRequest,
    timeouts: Timeouts,
    limits: Limits,
    rec: Recording,
    has_token: Callable[[Recording], bool],
    expired: list[ErrorKind],
    start: float,
) -> None:
    loop = asyncio.get_running_loop()
    clock = time.perf_counter_ns
    rec.t_start_ns = clock()
    rec.t_sent_ns = None
    async with asyncio.timeout_at(start + timeouts.total) as deadline:
        judging: list[asyncio.Future[bool]] = []

        def judged(future: asyncio.Future[bool]) -> None:
            # A check that failed is no reason to fail the request; a stream already over is not rescheduled.
            if not future.cancelled() and future.exception() is None and not future.result() and judging:
                expired[0] = ErrorKind.FIRST_TOKEN_TIMEOUT
                deadline.reschedule(loop.time())

        def first_token_due() -> None:
            # Runs once, only if the first-token deadline passes while the stream is still open. Decoding what
            # arrived is the protocol's work and can be long: it runs on a thread, over a copy of the chunk list.
            snapshot = dataclasses.replace(rec, chunks=list(rec.chunks))
            judging.append(loop.run_in_executor(None, has_token, snapshot))
            judging[0].add_done_callback(judged)

        check = loop.call_at(start + timeouts.first_token, first_token_due)
        try:
            url = URL(req.url)
            for _ in range(MAX_REDIRECTS + 1):
                async with session.post(
                    url, data=req.body, headers=req.headers, trace_request_ctx=rec, allow_redirects=False
                ) as r:
                    rec.t_headers_ns = clock()
                    rec.http_status = r.status
                    rec.request_id = r.headers.get("x-request-id")
                    if r.status in _REDIRECTS and "Location" in r.headers:
                        target = _location(r.url, r.headers["Location"])
                        if target is None:  # a server's header, not our bug: data, and the run goes on
                            bad = redact(r.headers["Location"][:200], req.secrets)
                            why = f"HTTP {r.status}: a redirect to {bad!r}, which is no URL: not followed"
                            rec.failure = Failure(ErrorKind.REDIRECT, why, r.status)
                            return
                        if _origin(target) != _origin(r.url):
                            why = f"HTTP {r.status}: redirected to {target.origin()}, another origin: not followed"
                            rec.failure = Failure(ErrorKind.REDIRECT, f"{why}, so the key does not go there", r.status)
                            return
                        url = target  # the same server: followed with the same request, the clock running on
                        continue
                    if r.status >= 300:
                        body = b""
                        while len(body) < MAX_ERROR_BODY and (more := await r.content.read(MAX_ERROR_BODY - len(body))):
                            body += more
                        rec.failure = _http_failure(r.status, body, req.secrets)
                        if r.status == 429:
                            rec.failure = _rate_limited(rec.failure, r.headers, req.secrets)
                    else:
                        await read_body(r, limits, rec)
                    return
            rec.failure = Failure(ErrorKind.REDIRECT, f"more than {MAX_REDIRECTS} redirects", rec.http_status)
        finally:
            check.cancel()
            for future in judging:
                future.cancel()
            judging.clear()


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
    limits: Limits | None = None,
) -> None:
    """Send ``req`` and fill ``rec`` with every chunk's arrival time; failures land in ``rec.failure``.

    A request that fails on a stale pooled connection is sent again, clock restarted, as HTTP clients do.
    On cancellation ``rec`` is marked cancelled before the cancellation propagates.
    """
    rec.secrets = req.secrets
    limits = limits or Limits()
    expired = [ErrorKind.TOTAL_TIMEOUT]
    start = asyncio.get_running_loop().time()  # retries share the deadlines: the total bounds them all
    try:
        # Each stale connection is dropped from the pool when it fails, so the pool's size bounds the retries.
        for attempt in range(_pool_size(session) + 1):
            try:
                await _exchange(session, req, timeouts, limits, rec, has_token, expired, start)
                break
            except aiohttp.ClientError as exc:
                if attempt == _pool_size(session) or not _stale(exc, rec):
                    raise
    except TimeoutError as exc:
        if isinstance(exc, aiohttp.ClientError):  # aiohttp's own timeouts subclass TimeoutError
            rec.failure = _client_failure(exc, rec, req.secrets)
        else:
            limit = timeouts.first_token if expired[0] is ErrorKind.FIRST_TOKEN_TIMEOUT else timeouts.total
            rec.failure = Failure(expired[0], f"{expired[0].value.replace('_', ' ')} after {limit:g} s")
    except aiohttp.ClientError as exc:
        rec.failure = _client_failure(exc, rec, req.secrets)
    except asyncio.CancelledError:
        rec.failure = Failure(ErrorKind.CANCELLED, "cancelled by the client")
        raise
    finally:
        rec.t_end_ns = time.perf_counter_ns()
