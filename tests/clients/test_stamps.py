"""Arrival times are the kernel's: a client whose loop is held does not move them, and where a read brought several
packets the bound it gives holds the truth."""

from __future__ import annotations

import asyncio
import socket
import struct
import sys
import time
from collections.abc import Callable

import pytest

from tests.conftest import SimThread
from tokenpace import sim
from tokenpace.clients import stamps
from tokenpace.clients.transport import Timeouts
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.workloads import Workload
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.load.lag import LoopLag

MS = 1_000_000
linux = pytest.mark.skipif(sys.platform != "linux", reason="receive stamps are Linux's (SO_TIMESTAMPNS)")


def _stamp(ns: int) -> list[tuple[int, int, bytes]]:
    assert stamps.SO_TIMESTAMPNS is not None
    return [(socket.SOL_SOCKET, stamps.SO_TIMESTAMPNS, struct.pack("@ll", ns // 10**9, ns % 10**9))]


def test_a_stamp_moves_onto_the_monotonic_clock_within_the_request() -> None:
    if stamps.SO_TIMESTAMPNS is None:
        pytest.skip("no receive stamps on this platform")
    now, real = 5_000_000_000, 1_700_000_000_000_000_000  # the two clocks read at the read
    assert stamps.arrival(_stamp(real - 3 * MS), now, real, floor_ns=0) == now - 3 * MS
    assert stamps.arrival(_stamp(real + 9 * MS), now, real, floor_ns=0) == now  # never after the read
    assert stamps.arrival(_stamp(real - 60_000 * MS), now, real, floor_ns=now - 5 * MS) == now - 5 * MS  # a step
    assert stamps.arrival([], now, real, floor_ns=0) == now  # no stamp: the read's own time


@linux
async def test_a_held_loop_does_not_move_arrival_times_and_its_bound_holds_the_truth(
    sim_thread: Callable[..., SimThread],
) -> None:
    """The simulator streams from its own thread while this loop is held for 300 ms mid-stream: every event that
    came meanwhile is read late, in one read, yet each is stamped no later than the kernel saw the last of them,
    and its figures' bound covers the rest."""
    s = sim_thread(sim.Scenario(ttft_ms=50, tokens_per_s=100, output_tokens=60))
    endpoint = Endpoint("sim", "sim", s.url, simulated=True)
    async with asyncio.timeout(30):
        run = asyncio.ensure_future(
            run_workload([endpoint], Workload("held", 60), RunOptions(1, 1, Timeouts(2, 10, 10, 20)))
        )
        while not any(len(t.events) > 5 for t in list(s.simulator.truth.values())):  # noqa: ASYNC110 - another thread's
            await asyncio.sleep(0.005)
        time.sleep(0.3)  # noqa: ASYNC251 - the point: the client's loop is held while the stream goes on
        result = await run
    (sample,) = result.samples
    assert sample.ok, sample.error_message
    truth = next(iter(s.simulator.truth.values()))
    sent = [t for t, kind, _ in truth.events if kind == "content"]
    seen = [e.t_ns for e in sample.timeline.token_events]
    assert len(seen) == len(sent) == 60
    errors_ms = [(a - b) / MS for a, b in zip(seen, sent, strict=True)]
    assert min(errors_ms) >= -0.05  # never before the server sent it
    late = [e for e in errors_ms if e > 5]
    assert late and max(late) < 300  # the ones sent during the hold carry the stamp of the last to come, not 300+
    assert result.run.loop_lag_max_ms is not None and result.run.loop_lag_max_ms >= 100  # the hold was seen


@linux
async def test_a_read_of_several_packets_is_bounded_by_the_connections_previous_read() -> None:
    """The bound of a batched read's stamp: the stamp minus the connection's previous read, or less where the
    watch saw the loop; a one-packet read's stamp is exact."""
    lag = LoopLag(watch=False)
    lag.start()
    await asyncio.sleep(0.06)  # reads of one packet each meanwhile: no watch ran
    t = time.perf_counter_ns()
    bound = lag.bound({t: (40 * MS, t + 2 * MS)})
    assert bound(t) == pytest.approx(40.0) and bound(t + 1) == 0.0
    lag.read(
        t, 0, 10 * MS
    )  # a batch: the watch wakes every millisecond a while, and the bound of the next one is its own
    await asyncio.sleep(0.02)
    t = time.perf_counter_ns()
    assert lag.bound({t: (40 * MS, t)})(t) < 20.0  # about the watch's interval, a busy machine allowing
    await lag.stop()
