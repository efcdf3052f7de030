"""TLS and proxies through the client's own transport, against real servers: the simulator over HTTPS with a
certificate made here, and a CONNECT proxy that records what it was asked and what passed through it."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.tlskit import tls_simulator
from tokenpace import sim
from tokenpace.clients.transport import Timeouts
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.workloads import Workload
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.sample import Sample

QUICK = Timeouts(connect=3, first_token=10, idle=10, total=20)
SHORT = Workload("short", 16)
KEY = "sk-test-tls-0123456789abcdef"
PROXY_USER, PROXY_SECRET = "probe", "pr0xy:secret"  # a colon in the password: quoted in the URL, kept in the header


async def _samples(endpoint: Endpoint, n: int = 3, warm: bool = False) -> list[Sample]:
    async with asyncio.timeout(60):
        result = await run_workload([endpoint], SHORT, RunOptions(n, 1, QUICK, warm_connections=warm))
    return result.samples


def _local_address() -> str:
    """An address of this machine that is not loopback (loopback never goes through a proxy)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))  # no packet is sent: this only picks the route's source address
            address = str(s.getsockname()[0])
        except OSError:
            address = "127.0.0.1"
    if ipaddress.ip_address(address).is_loopback:
        pytest.skip("this machine has no address but loopback, and loopback never goes through a proxy")
    return address


@dataclass
class Proxy:
    url: str
    asked: list[bytes] = field(default_factory=list)  # each CONNECT's head
    passed: bytearray = field(default_factory=bytearray)  # every byte the client sent through a tunnel


@contextlib.asynccontextmanager
async def connect_proxy(refuse: bytes | None = None) -> AsyncIterator[Proxy]:
    """A CONNECT proxy on loopback, with credentials in its URL; ``refuse`` answers every CONNECT with that status."""
    port = free_port()
    secret = PROXY_SECRET.replace(":", "%3A")
    proxy = Proxy(f"http://{PROXY_USER}:{secret}@127.0.0.1:{port}")

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, seen: bytearray | None) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                if seen is not None:
                    seen += data
                writer.write(data)
                await writer.drain()
        writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        proxy.asked.append(head)
        if refuse is not None:
            writer.write(b"HTTP/1.1 " + refuse + b" No\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return
        host, _, port = head.split(b" ")[1].decode().rpartition(":")
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await asyncio.gather(pipe(reader, up_writer, proxy.passed), pipe(up_reader, writer, None))

    server = await asyncio.start_server(handle, "127.0.0.1", port)
    try:
        yield proxy
    finally:
        server.close()


async def test_a_run_over_tls_is_measured_and_keeps_its_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with tls_simulator(tmp_path) as (url, cert_file):
        monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))  # trusted as a public CA would be
        samples = await _samples(Endpoint("sim", "sim", url))
    assert all(s.ok for s in samples), [s.error_message for s in samples]
    assert all(s.metrics.ttft_ms is not None and s.metrics.output_tokens > 0 for s in samples)
    opened = [s.timeline.connect_ns is not None for s in samples]
    assert opened == [True, False, False]  # one TLS connection, kept alive for the next requests


async def test_an_untrusted_certificate_is_a_connect_error_that_says_so(tmp_path: Path) -> None:
    async with tls_simulator(tmp_path) as (url, _):
        (s,) = await _samples(Endpoint("sim", "sim", url), n=1)
    assert s.error_kind is ErrorKind.CONNECT_ERROR
    assert s.error_message and "TLS handshake" in s.error_message and "certificate verify failed" in s.error_message


async def test_https_goes_through_the_environments_proxy_in_a_tunnel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = _local_address()
    monkeypatch.setenv("TLS_TEST_KEY", KEY)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    async with tls_simulator(tmp_path, host) as (url, cert_file), connect_proxy() as proxy:
        monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        samples = await _samples(Endpoint("sim", "sim", url, api_key_env="TLS_TEST_KEY"), n=2)
    assert all(s.ok for s in samples), [s.error_message for s in samples]
    (asked,) = proxy.asked  # one tunnel, kept alive for both requests
    authority = url.split("/")[2]
    credentials = base64.b64encode(f"{PROXY_USER}:{PROXY_SECRET}".encode())
    assert asked.startswith(f"CONNECT {authority} HTTP/1.1\r\n".encode())
    assert b"Proxy-Authorization: Basic " + credentials in asked
    assert proxy.passed and KEY.encode() not in proxy.passed  # the proxy carried only TLS: never the key


async def test_a_proxy_that_refuses_the_tunnel_is_one_connect_error_without_its_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = _local_address()
    async with sim.serve(sim.Simulator(), host=host) as url, connect_proxy(refuse=b"407") as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        (s,) = await _samples(Endpoint("sim", "sim", url), n=1)
    assert s.error_kind is ErrorKind.CONNECT_ERROR
    assert s.error_message and "refused a tunnel" in s.error_message and "407" in s.error_message
    assert PROXY_SECRET not in s.error_message and PROXY_USER not in s.error_message


async def test_no_proxy_and_loopback_go_direct(monkeypatch: pytest.MonkeyPatch) -> None:
    host = _local_address()
    dead = f"http://127.0.0.1:{free_port()}"  # a proxy nobody listens on: using it would fail
    monkeypatch.setenv("HTTP_PROXY", dead)
    monkeypatch.setenv("NO_PROXY", host)
    async with sim.serve(sim.Simulator()) as loopback, sim.serve(sim.Simulator(), host=host) as exempt:
        samples = await _samples(Endpoint("a", "sim", loopback), n=1) + await _samples(
            Endpoint("b", "sim", exempt), n=1
        )
    assert all(s.ok for s in samples), [s.error_message for s in samples]
