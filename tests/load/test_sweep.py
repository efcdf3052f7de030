"""Sweeps: the loads of a given sweep, the keep-up judgement, and fresh prompts at every point."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tests.conftest import SimThread
from tests.load.test_engine import QUICK, SETTINGS, Tiny
from tests.loadkit import done
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.traffic import Load, Sweep
from tokenpace.load.figures import Figures
from tokenpace.load.interpreter import event_loop_factory
from tokenpace.load.sweep import BRACKET_WIDTH, Sweeper, bisected, kept_up, levels, released_rate
from tokenpace.measure.stats import Figure


def test_levels_replace_the_swept_value_and_keep_the_rest() -> None:
    base = Load(concurrency=1, requests=50, warmup=5)
    closed = levels(base, Sweep("concurrency", (1.0, 8.0)))
    assert [(x.concurrency, x.rate, x.requests, x.warmup) for x in closed] == [(1, None, 50, 5), (8, None, 50, 5)]
    opened = levels(base, Sweep("rate", (2.0, 4.5)))
    assert [(x.concurrency, x.rate) for x in opened] == [(None, 2.0), (None, 4.5)]


def figures(requests: int, ok: int, rate: float, ttft_p50: float | None) -> Figures:
    nothing = Figure()
    return Figures(
        requests,
        ok,
        {},
        10.0,
        rate,
        0.0,
        0.0,
        1.0,
        Figure(ok, p50=ttft_p50),
        nothing,
        nothing,
        nothing,
        nothing,
        nothing,
    )


def test_kept_up_needs_the_rate_few_errors_and_no_queueing() -> None:
    assert kept_up(figures(100, 100, 9.0, 100.0), offered=10.0, unloaded_ttft_ms=50.0)  # 90 % of it, 2x TTFT
    assert not kept_up(figures(100, 100, 8.9, 100.0), offered=10.0, unloaded_ttft_ms=50.0)  # fell behind
    assert not kept_up(figures(100, 94, 9.5, 100.0), offered=10.0, unloaded_ttft_ms=50.0)  # 6 % failed
    assert kept_up(figures(100, 95, 9.5, 100.0), offered=10.0, unloaded_ttft_ms=50.0)  # 5 % may fail
    assert not kept_up(figures(100, 100, 10.0, 151.0), offered=10.0, unloaded_ttft_ms=50.0)  # queueing: > 3x TTFT
    assert not kept_up(figures(0, 0, 0.0, None), offered=10.0, unloaded_ttft_ms=50.0)  # nothing ended


def test_every_point_sends_its_own_chains(sim_thread: Callable[..., SimThread]) -> None:
    endpoint = Endpoint("sim", "sim", sim_thread(QUICK).url, simulated=True)
    sweeper = Sweeper(endpoint, Tiny(), SETTINGS)
    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        runner.run(sweeper.given(Load(concurrency=1, requests=6), Sweep("concurrency", (1.0, 3.0))))
    chains = [{d.chain for d in level.result.done} for level in sweeper.levels]
    assert [len(c) for c in chains] == [6, 6] and not chains[0] & chains[1]
    assert [level.figures.ok for level in sweeper.levels] == [6, 6]
    assert sweeper.bracket is None


def test_released_rate_is_what_the_schedule_really_offered() -> None:
    # Five measured releases over 2 s (four intervals): 2 req/s, whatever the warm-up before them.
    released = [done(0, 10, warmup=True, asked_ms=-900)] + [done(t, t + 10) for t in (0, 400, 1000, 1500, 2000)]
    assert released_rate(released) == 2.0
    assert released_rate(released[:2]) is None and released_rate([]) is None


def test_an_invalid_level_stops_the_auto_sweep_and_says_why(sim_thread: Callable[..., SimThread]) -> None:
    # A bound no real send meets (a microsecond): the first open-loop level is invalid, so the sweep stops there
    # (bisecting on it would bracket the client) and names no saturation, only the rate it started from.
    endpoint = Endpoint("sim", "sim", sim_thread(QUICK).url, simulated=True)
    sweeper = Sweeper(endpoint, Tiny(), SETTINGS, max_dispatch_p99_ms=0.001)
    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        runner.run(sweeper.auto(Load(concurrency=1, requests=10)))
    unloaded, doubled = sweeper.levels  # two points only: a server this fast would go on doubling
    assert unloaded.result.load.rate is None and doubled.invalid
    assert all(level.figures.ok == 10 for level in sweeper.levels)  # the server answered every request
    r1 = float(f"{unloaded.figures.request_rate:.3g}")
    assert sweeper.bracket is not None and (sweeper.bracket.low, sweeper.bracket.high) == (r1, None)
    assert sweeper.bracket.stopped.startswith(f"the client could not send {doubled.result.load.rate:g} req/s")


def test_bisection_halves_the_bracket_geometrically_until_it_is_within_five_percent() -> None:
    assert bisected(16.1, 22.8) == 19.2  # sqrt(16.1 x 22.8) = 19.16: one step of several
    assert bisected(21.8, 22.8) is None  # 4.6 % apart: done
    assert bisected(100.0, 105.0) is None and bisected(100.0, 105.1) == 103.0
    steps, low, high = 0, 11.4, 22.8  # a doubling's bracket closes in four bisections
    while (mid := bisected(low, high)) is not None:
        low, high, steps = (mid, high, steps + 1) if mid < 20.0 else (low, mid, steps + 1)
    assert steps == 4 and low <= 20.0 <= high <= low * BRACKET_WIDTH
