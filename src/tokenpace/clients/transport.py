"""The HTTP transport every protocol shares: the timed hot path.

Request bytes are built before the clock starts; while the stream runs each read costs one ``recvmsg``, its
kernel receive stamp, one list append and two byte counters (clients/http1.py); decoding happens after the
stream ends, and on a thread when the first-token deadline needs it earlier. Redirects are followed only
within the request's origin, where the key was meant to go. Wire errors (clients/wire.py) are mapped to the
failure taxonomy here and nowhere else.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tokenpace.clients import ratelimits
from tokenpace.clients.base import HttpRequest, one_line
from tokenpace.clients.body import Limits as Limits  # beside Timeouts, where callers look for it
from tokenpace.clients.body import Response
from tokenpace.clients.connect import split
from tokenpace.clients.head import encode_head
from tokenpace.clients.http1 import Reads
from tokenpace.clients.pool import Client
from tokenpace.clients.scrub import redact
from tokenpace.clients.wire import Disconnected, WireError
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


def _rate_limited(failure: Failure, r: Response, secrets: tuple[str, ...]) -> Failure:
    """The 429's failure with its Retry-After (seconds from now) and rate-limit headers, bounded."""
    after, headers = r.header("retry-after"), r.headers
    wait = None if after is None else ratelimits.retry_after_s(after, time.time())
    kept = ratelimits.ratelimit_headers(headers, secrets)
    return dataclasses.replace(failure, retry_after_s=wait, ratelimits=kept)


def new_session(
    concurrency: int,
    timeouts: Timeouts,
    on_sent: Callable[[Recording], None] | None = None,
    reads: Reads | None = None,
) -> Client:
    """A client whose pool holds one keep-alive connection per concurrent stream; ``on_sent(recording)`` runs as
    each request is handed to its socket, ``reads`` is told how late the loop read each read."""
    return Client(concurrency, timeouts.connect, on_sent, reads)


async def warm(client: Client, url: str, headers: Mapping[str, str], n: int, timeouts: Timeouts) -> None:
    """Open ``n`` connections at once and leave them in the pool; failures here are not samples.

    Bounded like everything a server sends: by time (connect timeout + WARM_EXTRA_S, at most the total
    timeout) and bytes (WARM_BYTES); a redirect is never followed, so the key goes nowhere else.
    """
    try:
        origin, target = split(url)
    except ValueError:
        return
    conns = []

    async def one() -> None:
        rec = Recording()
        try:
            async with asyncio.timeout(min(timeouts.total, timeouts.connect + WARM_EXTRA_S)):
                conn = await client.connection(origin)
                head = encode_head("GET", target, origin.authority, dict(headers), None)
                conns.append(conn)
                await conn.send([head], rec, Limits(), False, 0, WARM_BYTES, timeouts.idle, None)
        except (WireError, TimeoutError, ValueError):
            pass

    await asyncio.gather(*(one() for _ in range(n)))
    for conn in conns:  # every one at once: each request above had its own, so the pool now holds n
        client.give_back(origin, conn)


def _location(base: str, location: str) -> str | None:
    """Where a redirect points, or None where its Location is no http(s) URL."""
    try:
        target = urllib.parse.urljoin(base, location)
        split(target)
    except ValueError:
        return None
    return target


async def _exchange(
    client: Client,
    req: HttpRequest,
    timeouts: Timeouts,
    limits: Limits,
    rec: Recording,
    has_token: Callable[[Recording], bool],
    expired: list[ErrorKind],
    start: float,
) -> None:
    loop = asyncio.get_running_loop()
    rec.t_start_ns = time.perf_counter_ns()
    rec.t_sent_ns = rec.t_connect_start_ns = rec.t_connected_ns = None
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
            url, head = req.url, req.head or None
            for _ in range(MAX_REDIRECTS + 1):
                origin, target = split(url)
                r, _ = await client.send(
                    "POST", origin, target, dict(req.headers), req.body, rec, limits,
                    stream=True, keep=MAX_ERROR_BODY, cap=MAX_ERROR_BODY, idle_s=timeouts.idle, head=head,
                )  # fmt: skip
                if r.status in _REDIRECTS and (location := r.header("location")) is not None:
                    target_url = _location(url, location)
                    if target_url is None:  # a server's header, not our bug: data, and the run goes on
                        bad = redact(location[:200], req.secrets)
                        why = f"HTTP {r.status}: a redirect to {bad!r}, which is no URL: not followed"
                        rec.failure = Failure(ErrorKind.REDIRECT, why, r.status)
                        return
                    if (there := split(target_url)[0]) != origin:
                        why = f"HTTP {r.status}: redirected to {there}, another origin: not followed"
                        rec.failure = Failure(ErrorKind.REDIRECT, f"{why}, so the key does not go there", r.status)
                        return
                    url, head = target_url, None  # the same server: followed with the same request, the clock on
                    continue
                if r.status >= 300:
                    rec.failure = _http_failure(r.status, bytes(r.body), req.secrets)
                    if r.status == 429:
                        rec.failure = _rate_limited(rec.failure, r, req.secrets)
                return
            rec.failure = Failure(ErrorKind.REDIRECT, f"more than {MAX_REDIRECTS} redirects", rec.http_status)
        finally:
            check.cancel()
            for future in judging:
                future.cancel()
            judging.clear()


def _stale(exc: WireError, rec: Recording) -> bool:
    """A pooled keep-alive connection the server had already closed: the request never reached it.

    Either the request could not be written, or the server hung up at once (a keep-alive race shows within
    milliseconds). A server that drops a request later, during a long prefill say, is a failure, not retried.
    """
    if not isinstance(exc, Disconnected) or rec.t_connect_start_ns is not None or rec.t_headers_ns is not None:
        return False  # a fresh connection, or the server had answered: nothing stale about it
    if not exc.written or rec.t_sent_ns is None:
        return True
    return (time.perf_counter_ns() - rec.t_sent_ns) / 1e9 < STALE_WINDOW_S


def _wire_failure(exc: WireError, rec: Recording, secrets: tuple[str, ...]) -> Failure:
    """The failure a wire error is: a connection lost before any answer could not be made, one lost after is
    an incomplete stream."""
    kind = exc.kind
    if isinstance(exc, Disconnected) and rec.t_headers_ns is None:
        kind = ErrorKind.CONNECT_ERROR
    return Failure(kind, one_line(redact(str(exc), secrets)))


async def record(
    client: Client,
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
        for attempt in range(client.limit + 1):
            try:
                await _exchange(client, req, timeouts, limits, rec, has_token, expired, start)
                break
            except WireError as exc:
                if attempt == client.limit or not _stale(exc, rec):
                    raise
    except WireError as exc:
        rec.failure = _wire_failure(exc, rec, req.secrets)
    except ValueError:  # a URL that is no http(s) URL: the endpoint's, checked at start, or a redirect's
        rec.failure = Failure(ErrorKind.CONNECT_ERROR, "the request's URL is not an http:// or https:// URL")
    except TimeoutError:
        limit = timeouts.first_token if expired[0] is ErrorKind.FIRST_TOKEN_TIMEOUT else timeouts.total
        rec.failure = Failure(expired[0], f"{expired[0].value.replace('_', ' ')} after {limit:g} s")
    except asyncio.CancelledError:
        rec.failure = Failure(ErrorKind.CANCELLED, "cancelled by the client")
        raise
    finally:
        rec.t_end_ns = _end(rec)


def _end(rec: Recording) -> int:
    """When the response ended: the arrival of its last bytes where it ended by them, else now."""
    now = time.perf_counter_ns()
    if rec.failure is None and rec.chunks:
        return max(rec.chunks[-1][0], rec.t_headers_ns or 0)
    return now
