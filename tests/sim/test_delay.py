"""The delay proxy, between real sockets: bytes intact and in order, each held one_way_ms, memory bounded."""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from tests.conftest import free_port
from tests.simkit import MS
from tokenpace import sim
from tokenpace.clients.transport import Timeouts
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.workloads import BUILTIN
from tokenpace.errors import SimulatorError
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.sim.delay import READ_BYTES, DelayProxy

pytestmark = pytest.mark.usefixtures("quiet_server")
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@pytest.fixture
async def tcp_server() -> AsyncIterator[Callable[[Handler], Awaitable[int]]]:
    """Start plain TCP servers on free loopback ports: ``await tcp_server(handler)`` gives the port."""
    servers: list[asyncio.Server] = []

    async def start(handler: Handler) -> int:
        servers.append(await asyncio.start_server(handler, "127.0.0.1", 0))
        return int(servers[-1].sockets[0].getsockname()[1])

    yield start
    for server in servers:
        server.close()


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(READ_BYTES):
        writer.write(data)
        await writer.drain()
    writer.close()


async def test_a_megabyte_each_way_arrives_intact_and_in_order(tcp_server: Callable[[Handler], Awaitable[int]]) -> None:
    up, down = random.randbytes(2**20), random.randbytes(2**20)
    received: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    async def send(writer: asyncio.StreamWriter, data: bytes) -> None:
        for at in range(0, len(data), 10_000):  # many writes, so many chunks queue in the proxy at once
            writer.write(data[at : at + 10_000])
            await writer.drain()
        writer.write_eof()

    async def exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        got, _ = await asyncio.gather(reader.read(), send(writer, down))
        received.set_result(got)
        writer.close()

    port = await tcp_server(exchange)
    cap = 64 * 1024  # small, so the cap pauses reading many times on the way
    async with DelayProxy("127.0.0.1", port, 5, buffer_bytes=cap) as proxy:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        got, _ = await asyncio.gather(reader.read(), send(writer, up))
        writer.close()
        assert await received == up and got == down
        assert proxy.peak <= cap + READ_BYTES


async def test_each_chunk_is_held_one_way_side_by_side_not_one_after_another() -> None:
    """Twenty bytes 2 ms apart through 20 ms: each arrives 20 ms after it left, not 20 ms after the one before."""
    sent: dict[int, int] = {}
    arrived: dict[int, int] = {}

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(100):
            now = time.perf_counter_ns()
            arrived.update((i, now) for i in data)
        writer.close()

    server = await asyncio.start_server(record, "127.0.0.1", 0)
    async with server, DelayProxy("127.0.0.1", server.sockets[0].getsockname()[1], 20) as proxy:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        for i in range(20):
            sent[i] = time.perf_counter_ns()
            writer.write(bytes([i]))
            await asyncio.sleep(0.002)
        writer.write_eof()
        assert await reader.read() == b""  # the proxy closes once the server has
        writer.close()
    delays = [(arrived[i] - sent[i]) / MS for i in range(20)]
    # Never early; late by the timers' millisecond, and by whatever else this machine is doing now and then.
    # Summed holds would make them 20, 22, 24... 58 (median 39): a loaded machine's lateness is no such ramp.
    assert min(delays) >= 20 and statistics.median(delays) < 30, delays


async def test_the_handshake_is_not_delayed_but_a_round_trip_takes_two_one_ways(
    tcp_server: Callable[[Handler], Awaitable[int]],
) -> None:
    # The proxy on a loop of its own, in a thread, as beside blocking code: this loop only sends and reads.
    with DelayProxy("127.0.0.1", await tcp_server(echo), 15) as proxy:
        start = time.perf_counter_ns()
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        connect_ms = (time.perf_counter_ns() - start) / MS
        trips = []
        for _ in range(5):
            start = time.perf_counter_ns()
            writer.write(b"x")
            assert await reader.readexactly(1) == b"x"
            trips.append((time.perf_counter_ns() - start) / MS)
        writer.close()
    assert connect_ms < 15  # under one one-way: the kernel accepts before the proxy sees the connection
    assert 30 <= min(trips) < 45, trips  # two one-ways, never less; a third hold would make it 45


async def path_ms(simulator: sim.Simulator, url: str) -> list[float]:
    """What the path added to each TTFT tokenpace measured: its TTFT minus the simulator's own, sample by sample."""
    timeouts = Timeouts(connect=2, first_token=10, idle=10, total=30)
    result = await run_workload(
        [Endpoint("sim", "sim", url, simulated=True)], BUILTIN["1k"], RunOptions(6, 1, timeouts)
    )
    added = []
    for s in result.samples:
        assert s.ok and s.metrics.ttft_ms is not None, s.error_message
        truth = simulator.truth[s.timeline.response_id or ""]
        first = min(t for t, kind, _ in truth.events if kind in ("content", "reasoning"))
        added.append(s.metrics.ttft_ms - (first - truth.t_received_ns) / MS)
    return added


async def test_a_streamed_response_gets_its_ttft_plus_two_one_ways() -> None:
    simulator = sim.Simulator(sim.Scenario(ttft_ms=30, tokens_per_s=1000, output_tokens=10))
    async with sim.serve(simulator) as url:
        direct = await path_ms(simulator, url)
        async with DelayProxy("127.0.0.1", int(url.rsplit(":", 1)[1].split("/")[0]), 20) as proxy:
            far = await path_ms(simulator, proxy.via(url))
    # The request waits one way before the server sees it, the first token one way back: never less than 40.
    assert min(far) >= 40, far
    # The fastest sample is the path (as rtt_ms is the fastest try): 40 ms, plus the proxy's timers (each up
    # to 1 ms late) and what measuring adds direct too; the others may also hold this machine's other work.
    # A third one-way (a chunk held behind the role chunk) would add 20 ms more.
    assert min(far) - min(direct) < 40 + 20, (far, direct)


async def test_a_reader_that_stalls_holds_the_proxy_to_its_cap(tcp_server: Callable[[Handler], Awaitable[int]]) -> None:
    flood = random.randbytes(32 * 2**20)
    writers: list[asyncio.StreamWriter] = []

    async def pour(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        writer.write(flood)
        await writer.drain()
        writer.write_eof()

    cap = 256 * 1024
    async with DelayProxy("127.0.0.1", await tcp_server(pour), 1, buffer_bytes=cap) as proxy:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        await asyncio.sleep(0.5)  # the client reads nothing: the kernel's buffers fill, then the proxy's
        assert proxy.held <= cap + READ_BYTES
        assert writers[0].transport.get_write_buffer_size() > 0  # the sender is held back, as on a slow path
        assert await reader.read() == flood  # reading resumes, nothing lost
        writer.close()
    assert proxy.peak <= cap + READ_BYTES and proxy.held == 0


async def test_a_refused_target_closes_the_client_at_once() -> None:
    async with DelayProxy("127.0.0.1", free_port(), 500) as proxy:
        start = time.perf_counter()
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        assert await reader.read() == b""
        writer.close()
    assert time.perf_counter() - start < 0.25  # not delayed (by half a second): it is the handshake's, not data


async def test_closing_the_proxy_closes_its_connections(tcp_server: Callable[[Handler], Awaitable[int]]) -> None:
    async with DelayProxy("127.0.0.1", await tcp_server(echo), 5) as proxy:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(b"ping")
        assert await reader.readexactly(4) == b"ping"
    assert await asyncio.wait_for(reader.read(), 1) == b""
    writer.close()


def test_via_points_a_url_at_the_proxy_and_bad_arguments_are_refused() -> None:
    proxy = DelayProxy("example.com", 443, 10)
    proxy.port = 4321
    assert proxy.via("https://example.com:8443/v1/x?y=1") == "https://127.0.0.1:4321/v1/x?y=1"
    with pytest.raises(SimulatorError, match="one_way_ms"):
        DelayProxy("example.com", 443, -1)
