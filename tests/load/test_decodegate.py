"""Decoding waits while a request is being written, never longer than its bound, and never for a lost one."""

from __future__ import annotations

import os
import threading
import time

import pytest

from tests.conftest import free_port
from tokenpace import sim
from tokenpace.clients import protocol_for
from tokenpace.clients.transport import Timeouts, new_session, record
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.workloads import BUILTIN
from tokenpace.load import engine
from tokenpace.load.decodegate import DecodeGate
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.timing import Recording
from tokenpace.prompts.prompt import build_prompt

FAST = Timeouts(connect=2, first_token=10, idle=10, total=30)


def waiter(gate: DecodeGate) -> threading.Thread:
    thread = threading.Thread(target=gate.wait, daemon=True)
    thread.start()
    return thread


def test_decoding_waits_until_every_request_asked_for_is_written() -> None:
    gate = DecodeGate(max_hold_s=3600)
    waiter(gate).join(10)  # open: returns at once
    first, second = object(), object()
    gate.asking(first)
    gate.asking(second)
    thread = waiter(gate)
    gate.written(first)
    thread.join(0.05)
    assert thread.is_alive()  # one request is still on its way to the socket
    gate.written(second)
    gate.written(second)  # said twice (written, then the request ended): harmless
    thread.join(10)
    assert not thread.is_alive()


def test_a_gate_held_past_its_bound_holds_decoding_no_longer() -> None:
    gate = DecodeGate(max_hold_s=0.01)
    gate.asking(object())  # never written: a connection that takes seconds to open
    thread = waiter(gate)
    thread.join(30)
    assert not thread.is_alive()


async def test_the_session_tells_when_each_request_is_written() -> None:
    written: list[Recording] = []
    simulator = sim.Simulator(sim.Scenario(ttft_ms=5, tokens_per_s=2000, output_tokens=3))
    async with sim.serve(simulator) as url, new_session(1, FAST, written.append) as session:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        proto = protocol_for(endpoint.protocol)
        rec = Recording()
        await record(session, proto.request(endpoint, build_prompt(BUILTIN["1k"], 0)), FAST, rec, proto.has_token)
    assert rec.failure is None and written == [rec] and rec.t_sent_ns is not None


async def test_requests_that_fail_before_their_write_never_hold_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    gates: list[DecodeGate] = []

    class Kept(DecodeGate):
        def __init__(self) -> None:
            super().__init__(max_hold_s=0.01)  # a leaked hold then costs the test nothing but its verdict
            gates.append(self)

    monkeypatch.setattr(engine, "DecodeGate", Kept)
    endpoint = Endpoint("closed", "sim", f"http://127.0.0.1:{free_port()}/v1", simulated=True)
    result = await run_workload([endpoint], BUILTIN["1k"], RunOptions(4, 2, FAST, warm_connections=False))
    assert [s.error_kind for s in result.samples] == [ErrorKind.CONNECT_ERROR] * 4
    (gate,) = gates
    gate.max_hold_s = 10.0  # a hold left behind would now cost seconds
    t0 = time.monotonic()
    gate.wait()
    assert time.monotonic() - t0 < 1.0  # every request that failed before its write let go of decoding


@pytest.mark.parametrize(("requests", "concurrency"), [(1, 1), (2, 2)])
async def test_a_stream_ending_with_none_of_its_run_in_flight_decodes_at_normal_priority(
    monkeypatch: pytest.MonkeyPatch, requests: int, concurrency: int
) -> None:
    """Nice 19 protects the streams being timed; with none left it only made a long decode take 20 s when busy."""
    niceness: list[int] = []
    real = protocol_for("openai-chat")

    class Watched:  # the real protocol, noting the priority of the thread each decode ran on
        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def decode(self, rec: Recording) -> object:
            niceness.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
            return real.decode(rec)

    monkeypatch.setattr(engine, "protocol_for", lambda _: Watched())
    own = os.getpriority(os.PRIO_PROCESS, 0)
    simulator = sim.Simulator(sim.Scenario(ttft_ms=5, tokens_per_s=500, output_tokens=20))
    async with sim.serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        result = await run_workload([endpoint], BUILTIN["1k"], RunOptions(requests, concurrency, FAST))
    assert all(s.ok for s in result.samples)
    # Two streams end together: the first one's decode runs while the second is timed, at the lowest priority.
    assert sorted(niceness) == ([own] if requests == 1 else [own, 19])
