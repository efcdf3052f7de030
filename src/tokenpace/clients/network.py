"""The network between a probe agent and an endpoint, measured just before a run: what TTFT holds besides the provider.

TTFT from one place includes that place's distance to the provider. An agent measures the path on its own,
right before each job, so the board can show TTFT with one network round trip taken off beside the raw figure:

- ``connect_ms``: the TCP handshake on a fresh connection (one round trip to whatever terminates TCP: the
  provider's edge, or a proxy on the way);
- ``tls_ms``: the TLS handshake after it (None for ``http://``);
- ``rtt_ms``: the fastest of a few cheap requests (the protocol's model list) on one kept connection: a round
  trip to the HTTP server itself, with the least of its own work in it.

Corrected TTFT = TTFT - rtt_ms. It removes the distance; it cannot remove a provider's queueing or prompt
processing, which is what TTFT is for, nor the time a cheap request itself takes on the server.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import time
from types import SimpleNamespace

import aiohttp
from yarl import URL

from tokenpace.clients import protocol_for
from tokenpace.clients.transport import WARM_EXTRA_S, Timeouts
from tokenpace.config.endpoints import Endpoint
from tokenpace.errors import TokenpaceError
from tokenpace.measure.sample import Network
from tokenpace.prompts.prompt import Message, Prompt

log = logging.getLogger(__name__)

RTT_BYTES = 256 * 1024  # a model list is a few kB; past this, the try times a transfer, not a round trip
_NOTHING = Prompt((Message("user", "."),), max_tokens=1, input_tokens=1, fingerprint="")  # only for the headers


async def measure_network(endpoint: Endpoint, timeouts: Timeouts, tries: int = 3) -> Network:
    """The path to ``endpoint`` now: handshakes on a fresh connection, then the fastest of ``tries`` round trips.

    Never raises (cancellation aside): whatever could not be measured is None. Nothing it logs holds the key,
    a header value, the URL's path or query: only the host, the port and the error's type.
    """
    try:
        url = URL(endpoint.base_url)
    except ValueError:
        return Network()
    if url.scheme not in ("http", "https") or not url.host or url.port is None:
        return Network()
    loop = asyncio.get_running_loop()
    # Loading the system's CA certificates takes ~50 ms of CPU: off the loop, so other runs' clocks don't stall.
    context = await loop.run_in_executor(None, ssl.create_default_context) if url.scheme == "https" else None
    connect_ms, tls_ms = await _handshakes(url.host, url.port, context, timeouts)
    return Network(connect_ms, tls_ms, await _round_trip(endpoint, context, timeouts, tries))


def _failed(step: str, host: str, port: int, exc: BaseException) -> None:
    # The type only: aiohttp's messages quote the URL, query (and so a key some servers take there) included.
    log.debug("network to %s:%d: %s failed (%s)", host, port, step, type(exc).__name__)


async def _handshakes(
    host: str, port: int, context: ssl.SSLContext | None, timeouts: Timeouts
) -> tuple[float | None, float | None]:
    """connect_ms = SYN to SYN-ACK on a new socket (DNS resolved before the clock); tls_ms = the TLS handshake after."""
    loop = asyncio.get_running_loop()
    clock = time.perf_counter_ns
    connect_ms = tls_ms = None
    sock: socket.socket | None = None
    writer: asyncio.StreamWriter | None = None
    try:
        async with asyncio.timeout(timeouts.connect):
            family, kind, proto, _, address = (await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM))[0]
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        async with asyncio.timeout(timeouts.connect):
            start = clock()
            await loop.sock_connect(sock, address)
            connect_ms = (clock() - start) / 1e6
        if context is not None:
            start = clock()
            _, writer = await asyncio.open_connection(
                sock=sock, ssl=context, server_hostname=host, ssl_handshake_timeout=timeouts.connect
            )
            tls_ms = (clock() - start) / 1e6
    except (OSError, TimeoutError) as exc:  # ssl.SSLError and socket.gaierror are OSErrors
        _failed("TLS handshake" if connect_ms is not None else "connect", host, port, exc)
    finally:
        if writer is not None:
            writer.transport.abort()  # the socket too, at once: a probe's connection owes no TLS close_notify
        elif sock is not None:
            sock.close()
    return connect_ms, tls_ms


async def _round_trip(
    endpoint: Endpoint, context: ssl.SSLContext | None, timeouts: Timeouts, tries: int
) -> float | None:
    """rtt_ms = min over tries of (whole body read - request written), all on one kept-alive connection.

    Any HTTP status counts: a 401 or a 404 came back over the same path as a model list would. A body over
    RTT_BYTES is no small answer, so that try does not count (and costs the connection). Each try is bounded like
    warm()'s request (connect timeout + WARM_EXTRA_S, at most the total) and the first failure ends the tries.
    """
    url = URL(endpoint.base_url)
    host, port = url.host or "", url.port or 0
    try:
        proto = protocol_for(endpoint.protocol)
        # The protocol's own headers (the key in its header, the configured ones), as warm() sends them.
        headers = proto.request(endpoint, _NOTHING).headers
        target = proto.warm_url(endpoint)
    except (TokenpaceError, ValueError) as exc:  # no key in the environment, an unknown protocol
        _failed("building the request", host, port, exc)
        return None
    trace = aiohttp.TraceConfig()
    trace.on_request_headers_sent.append(_written)
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=1, ssl=context if context is not None else True),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeouts.connect, sock_read=timeouts.idle),
        trace_configs=[trace],
    )
    best: float | None = None
    async with session:
        for _ in range(tries):
            written: list[int] = []
            try:
                async with asyncio.timeout(min(timeouts.total, timeouts.connect + WARM_EXTRA_S)):
                    async with session.get(
                        target, headers=headers, allow_redirects=False, trace_request_ctx=written
                    ) as resp:
                        got = 0
                        while got <= RTT_BYTES and (data := await resp.content.read(64 * 1024)):
                            got += len(data)
                        end = time.perf_counter_ns()
            except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
                _failed("round trip", host, port, exc)
                break  # refused, reset or silent: the next try would only wait as long again
            if written and got <= RTT_BYTES:
                took = (end - written[0]) / 1e6
                best = took if best is None else min(best, took)
    return best


async def _written(_s: aiohttp.ClientSession, ctx: SimpleNamespace, _p: object) -> None:
    # aiohttp calls this as the request's headers go to the socket (a GET has no body): the round trip starts.
    if isinstance(ctx.trace_request_ctx, list):
        ctx.trace_request_ctx.append(time.perf_counter_ns())
