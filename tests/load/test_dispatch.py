"""Coordinated omission: a client that sends late shows it in latency from schedule, never in latency from the send.

Judged against what the simulator served (its own clock of each request's first token), with tolerances a
loaded two-core machine keeps: the stalls are hundreds of ms, the bounds tens.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable

import pytest

from tests.conftest import SimThread
from tests.load.test_engine import SETTINGS, Tiny
from tests.loadkit import done
from tests.simkit import served
from tokenpace import sim
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.traffic import Load
from tokenpace.load.figures import Done, dispatch_problem
from tokenpace.load.interpreter import event_loop_factory
from tokenpace.load.running import figures
from tokenpace.load.sweep import Sweeper, SweepLevel

SLOW_FIRST = sim.Scenario(ttft_ms=150, tokens_per_s=2000, output_tokens=5)
BOUND_MS = 200.0  # generous for a loaded machine's quiet run; every stall below is several times it


def level(thread: SimThread, load: Load, on_done: Callable[[Done], None] | None = None) -> SweepLevel:
    endpoint = Endpoint("sim", "sim", thread.url, simulated=True)
    sweeper = Sweeper(endpoint, Tiny(), SETTINGS, on_done=on_done, max_dispatch_p99_ms=BOUND_MS)
    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        return runner.run(sweeper.point(load))


def served_ttfts(thread: SimThread) -> list[float]:
    return [served(t)[0] for t in thread.simulator.truth.values()]


def check_the_server_never_saw_the_stall(lv: SweepLevel, thread: SimThread) -> None:
    """TTFT from the send is what the simulator served; from schedule adds exactly each request's wait.

    Requests timed while the loop lagged (client-bound: a blocked loop reads their streams late too) are
    left out of the tail's check; they are flagged, and load/lag.py's tests cover that flag.
    """
    f, truth = lv.figures, served_ttfts(thread)
    assert f.ok == len(truth) and f.ttft.p50 is not None
    assert min(truth) - 1 <= f.ttft.p50 <= statistics.median(truth) + 100
    clean = [t for d in lv.result.done if not d.sample.client_bound and (t := d.sample.metrics.ttft_ms) is not None]
    assert max(clean, default=0) <= max(truth) + 150  # read on a busy machine
    per_request = sorted(
        d.sample.metrics.ttft_ms + (d.sample.timeline.t_sent_ns - d.asked_ns) / 1e6
        for d in lv.result.done
        if d.sample.metrics.ttft_ms is not None
    )
    assert f.ttft_from_schedule.max == pytest.approx(per_request[-1])
    assert f.ttft_from_schedule.n == f.e2e_from_schedule.n == f.ok


def test_a_cap_too_low_for_the_rate_delays_dispatch_and_the_level_is_invalid(
    sim_thread: Callable[..., SimThread],
) -> None:
    thread = sim_thread(SLOW_FIRST)
    # 50 arrivals/s, one request in flight at a time, each ~150 ms: the k-th waits ~k x 130 ms for its slot.
    lv = level(thread, Load(concurrency=None, rate=50, arrival="constant", requests=12, max_concurrency=1))
    f = lv.figures
    assert f.wait.p99 is not None and f.wait.max is not None and f.wait.p99 > 1000
    assert f.wait.p50 is not None and f.wait.p50 <= f.wait.p90 <= f.wait.p99 <= f.wait.max  # type: ignore[operator]
    check_the_server_never_saw_the_stall(lv, thread)
    assert f.ttft.p50 is not None and f.ttft_from_schedule.p50 is not None
    assert f.ttft_from_schedule.p50 > f.ttft.p50 + 500  # the user on the schedule waited in the client's queue
    assert f.e2e_from_schedule.p99 is not None and f.e2e.p99 is not None and f.e2e_from_schedule.p99 > f.e2e.p99
    assert lv.invalid.startswith("dispatch delay P99 ") and f"> {BOUND_MS:g} ms" in lv.invalid


def test_a_blocked_event_loop_delays_dispatch_and_the_level_is_invalid(sim_thread: Callable[..., SimThread]) -> None:
    thread = sim_thread(SLOW_FIRST)
    blocked: list[bool] = []

    def block_once(d: Done) -> None:  # runs on the client's loop: the schedule's next arrivals wait behind it
        if not blocked:
            blocked.append(True)
            time.sleep(0.8)

    lv = level(thread, Load(concurrency=None, rate=40, arrival="constant", requests=30), block_once)
    f = lv.figures
    assert blocked and f.wait.p99 is not None and f.wait.p99 > 3 * BOUND_MS
    check_the_server_never_saw_the_stall(lv, thread)
    assert lv.invalid


def test_a_quiet_run_is_valid(sim_thread: Callable[..., SimThread]) -> None:
    thread = sim_thread(SLOW_FIRST)
    lv = level(thread, Load(concurrency=None, rate=10, arrival="constant", requests=15))
    f = lv.figures
    assert lv.invalid == "" and f.wait.p99 is not None and f.wait.p99 <= BOUND_MS
    check_the_server_never_saw_the_stall(lv, thread)
    assert f.ttft_from_schedule.p50 is not None and f.ttft.p50 is not None
    assert f.ttft_from_schedule.p50 - f.ttft.p50 <= BOUND_MS


def test_from_schedule_is_from_send_plus_the_dispatch_delay() -> None:
    # Sent 40 ms after its scheduled start; first token 100 ms after the send, last byte 300 ms.
    late = done(40, 340, ((140, 1), (340, 1)), asked_ms=0)
    on_time = done(1000, 1300, ((1100, 1), (1300, 1)))
    f = figures([late, on_time])
    assert (f.ttft.max, f.ttft_from_schedule.max, f.e2e_from_schedule.max) == (100.0, 140.0, 340.0)
    assert (f.wait.p50, f.wait.max) == (20.0, 40.0)
    assert dispatch_problem(f, 50.0) == "" and dispatch_problem(f, None) == ""
    assert dispatch_problem(f, 30.0).startswith("dispatch delay P99 40 ms > 30 ms")
