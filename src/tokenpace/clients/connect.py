"""A connection opened to an origin: its name resolved, TCP connected (through the proxy the environment names,
if any), TLS negotiated; the whole within the connect timeout, every failure one WireError.

TLS runs over memory buffers (``ssl.MemoryBIO``), so the connection reads the socket itself and keeps the
kernel's receive stamp of each read (clients/stamps.py) whether the bytes are encrypted or not.

Proxies are the environment's, named as curl and httpx read them: ``https_proxy`` for https:// origins,
``http_proxy`` for http:// ones, ``no_proxy`` to exempt hosts; loopback addresses never go through one. Either
way the client asks the proxy for a tunnel (CONNECT) and speaks to the origin through it, TLS included, so the
proxy sees neither the request nor the key. Its own credentials (``http://user:pass@proxy:3128``) go in
``Proxy-Authorization`` and nowhere else.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import ipaddress
import socket
import ssl
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from tokenpace.clients.wire import ConnectFailed, ConnectTimedOut

MAX_PROXY_HEAD = 16 * 1024  # a proxy's answer to CONNECT is a status line and a few headers
# Each read allocates a buffer this size before it learns how much came: past glibc's mmap threshold (128 KiB)
# that is an mmap and a munmap per read, which made a 256 KiB read cost 25 µs here against 7 µs for 64 KiB.
RECV_BYTES = 64 * 1024
_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class WebOrigin:
    """Where a request goes: scheme, host and port (the redirect rule and the pool compare these)."""

    scheme: str
    host: str
    port: int

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def __str__(self) -> str:
        return f"{self.scheme}://{self.authority}"


@functools.lru_cache(maxsize=256)  # every request of an endpoint asks for its one URL's: parsed once
def split(url: str) -> tuple[WebOrigin, str]:
    """The origin of ``url`` and its request target (path and query); ValueError when it is no http(s) URL."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _PORTS or not parts.hostname:
        raise ValueError("not an http:// or https:// URL")
    port = parts.port or _PORTS[scheme]  # .port raises ValueError for a port out of range
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return WebOrigin(scheme, parts.hostname, port), target


@dataclass(frozen=True, slots=True)
class Proxy:
    origin: WebOrigin
    authorization: str | None = field(default=None, repr=False)  # holds the proxy's credentials


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def proxy_for(origin: WebOrigin) -> Proxy | None:
    """The proxy the environment names for ``origin``, or None (no proxy, exempt, or loopback)."""
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]  # public, not in typeshed
    if _loopback(origin.host) or bypass(origin.host):
        return None
    url = urllib.request.getproxies_environment().get(origin.scheme)
    if not url:
        return None
    if "://" not in url:
        url = f"http://{url}"
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() != "http" or not parts.hostname:
        raise ConnectFailed(f"the {origin.scheme}_proxy in the environment is no http:// proxy URL")
    auth = None
    if parts.username is not None:
        user = urllib.parse.unquote(parts.username)
        secret = urllib.parse.unquote(parts.password or "")
        auth = "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode()
    return Proxy(WebOrigin("http", parts.hostname, parts.port or 80), auth)


@dataclass(slots=True)
class Link:
    """A connected socket, non-blocking, and the TLS state over it (None for plain HTTP)."""

    sock: socket.socket
    tls: ssl.SSLObject | None = None
    incoming: ssl.MemoryBIO | None = None
    outgoing: ssl.MemoryBIO | None = None


async def open_link(origin: WebOrigin, timeout_s: float, context: ssl.SSLContext | None) -> Link:
    """A connection to ``origin`` within ``timeout_s``; TLS with ``context`` for https://."""
    proxy = proxy_for(origin)
    hop = proxy.origin if proxy is not None else origin
    sock: socket.socket | None = None
    try:
        async with asyncio.timeout(timeout_s):
            sock = await _tcp(hop)
            if proxy is not None:
                await _tunnel(sock, origin, proxy)
            link = Link(sock)
            if origin.scheme == "https":
                assert context is not None
                await _handshake(link, origin, context)
            return link
    except TimeoutError:
        if sock is not None:
            sock.close()
        raise ConnectTimedOut(f"no connection to {hop.authority} within {timeout_s:g} s") from None
    except OSError as exc:  # a reset while tunnelling or negotiating
        if sock is not None:
            sock.close()
        raise ConnectFailed(f"cannot connect to {hop.authority} ({_reason(exc)})") from None
    except BaseException:
        if sock is not None:
            sock.close()
        raise


async def _tcp(origin: WebOrigin) -> socket.socket:
    """A socket connected to the first of the host's addresses that answers."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(origin.host, origin.port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConnectFailed(f"cannot connect to {origin.authority} (host name not resolved: {exc.strerror})") from None
    error: OSError | None = None
    for family, kind, proto, _, address in infos:
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, address)
        except OSError as exc:
            sock.close()
            error = error or exc
            continue
        except BaseException:
            sock.close()
            raise
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock
    why = "connection refused" if isinstance(error, ConnectionRefusedError) else _reason(error)
    raise ConnectFailed(f"cannot connect to {origin.authority} ({why})")


def _reason(error: OSError | None) -> str:
    if error is None:
        return "no address"
    return error.strerror or type(error).__name__


async def _tunnel(sock: socket.socket, origin: WebOrigin, proxy: Proxy) -> None:
    """CONNECT through the proxy; any answer but 2xx, or more than MAX_PROXY_HEAD bytes of one, fails."""
    loop = asyncio.get_running_loop()
    lines = [f"CONNECT {origin.authority} HTTP/1.1", f"Host: {origin.authority}"]
    if proxy.authorization:
        lines.append(f"Proxy-Authorization: {proxy.authorization}")
    await loop.sock_sendall(sock, ("\r\n".join(lines) + "\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        data = await loop.sock_recv(sock, 4096)
        if not data or len(head) + len(data) > MAX_PROXY_HEAD:
            raise ConnectFailed(f"the proxy {proxy.origin.authority} gave no answer to CONNECT {origin.authority}")
        head += data
    status = head.split(b"\r\n", 1)[0].split(b" ")
    if len(status) < 2 or not status[1].startswith(b"2") or not head.endswith(b"\r\n\r\n"):
        code = status[1][:3].decode("ascii", "replace") if len(status) > 1 else "?"
        raise ConnectFailed(f"the proxy {proxy.origin.authority} refused a tunnel to {origin.authority} (HTTP {code})")


async def _handshake(link: Link, origin: WebOrigin, context: ssl.SSLContext) -> None:
    """TLS over memory buffers: what the handshake writes is sent, what it waits for is read, until done."""
    loop = asyncio.get_running_loop()
    link.incoming, link.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    link.tls = context.wrap_bio(link.incoming, link.outgoing, server_hostname=origin.host)
    while True:
        try:
            link.tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            if pending := link.outgoing.read():
                await loop.sock_sendall(link.sock, pending)
            data = await loop.sock_recv(link.sock, RECV_BYTES)
            if not data:
                closed = f"TLS handshake with {origin.authority}: the server closed the connection"
                raise ConnectFailed(closed) from None
            link.incoming.write(data)
        except ssl.SSLError as exc:  # a certificate not trusted, a protocol refused: the library's reason
            verify = getattr(exc, "verify_message", None)
            why = f"certificate verify failed ({verify})" if verify else exc.reason or type(exc).__name__
            raise ConnectFailed(f"TLS handshake with {origin.authority} failed: {why}") from None
        except OSError as exc:
            raise ConnectFailed(f"TLS handshake with {origin.authority} failed: {_reason(exc)}") from None
    if pending := link.outgoing.read():
        await loop.sock_sendall(link.sock, pending)
