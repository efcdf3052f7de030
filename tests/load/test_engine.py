"""The load engine against a simulator in its own thread: closed and open loops, warm-up, duration, chains."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tests.conftest import SimThread
from tokenpace import sim
from tokenpace.clients.transport import Timeouts
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.load import Load
from tokenpace.load import engine
from tokenpace.load.arrivals import offsets
from tokenpace.load.chains import Chain, Request
from tokenpace.load.engine import Settings, run_load
from tokenpace.load.figures import Done
from tokenpace.load.run import event_loop_factory
from tokenpace.prompts.prompt import Message, Prompt

SETTINGS = Settings(Timeouts(connect=2, first_token=10, idle=10, total=30))
QUICK = sim.Scenario(ttft_ms=10, tokens_per_s=1000, output_tokens=5)


@dataclass(frozen=True)
class Tiny:
    """Short prompts (cheap for the simulator to count), ``turns`` requests per chain tagged by turn."""

    turns: int = 1

    @property
    def name(self) -> str:
        return "tiny"

    @property
    def size(self) -> int | None:
        return None

    def chain(self, i: int) -> Chain:
        def prompt(k: int) -> Prompt:
            text = f"chain {i} turn {k}: say something"
            return Prompt((Message("user", text),), 5, 8, hashlib.sha256(text.encode()).hexdigest()[:16])

        return tuple(Request(prompt(k), f"turn-{k + 1}") for k in range(self.turns))


def run(url: str, load: Load, dataset: Tiny | None = None, settings: Settings = SETTINGS) -> list[Done]:
    endpoint = Endpoint("sim", "sim", url, simulated=True)
    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        return runner.run(run_load(endpoint, dataset or Tiny(), load, settings)).done


def most_in_flight(done: list[Done]) -> int:
    edges = sorted(
        itertools.chain.from_iterable(
            ((d.sample.timeline.t_sent_ns, 1), (d.sample.timeline.t_end_ns, -1)) for d in done
        ),
        key=lambda e: (e[0], e[1]),
    )
    return max(itertools.accumulate(step for _, step in edges))


def test_closed_loop_sends_warmup_then_measured_never_more_than_c_at_once(
    sim_thread: Callable[..., SimThread],
) -> None:
    done = run(sim_thread(QUICK).url, Load(concurrency=4, requests=20, warmup=3))
    assert len(done) == 23 and all(d.sample.ok for d in done)
    assert sum(d.warmup for d in done) == 3
    warm_sent = max(d.sample.timeline.t_sent_ns for d in done if d.warmup)
    first_measured = min(d.sample.timeline.t_sent_ns for d in done if not d.warmup)
    assert warm_sent <= first_measured  # the warm-up requests were released first
    assert 2 <= most_in_flight(done) <= 4
    assert len({d.sample.id for d in done}) == 23 and len({d.sample.prompt_fingerprint for d in done}) == 23
    assert not any(d.sample.published for d in done)


def test_open_loop_releases_on_the_schedule_and_says_how_late_it_was(sim_thread: Callable[..., SimThread]) -> None:
    done = run(sim_thread(QUICK).url, Load(concurrency=None, rate=50, arrival="constant", requests=40))
    asked = sorted(d.asked_ns for d in done)
    assert len(done) == 40
    assert [round((b - a) / 1e6, 3) for a, b in itertools.pairwise(asked)] == [20.0] * 39  # the schedule itself
    lateness_ms = [(d.sample.timeline.t_sent_ns - d.asked_ns) / 1e6 for d in done]
    assert min(lateness_ms) >= 0 and statistics.median(lateness_ms) < 20
    assert most_in_flight(done) >= 1


def test_open_loop_cap_holds_requests_in_flight(sim_thread: Callable[..., SimThread]) -> None:
    slow = sim.Scenario(ttft_ms=150, tokens_per_s=1000, output_tokens=5)
    load = Load(concurrency=None, rate=100, arrival="constant", requests=12, max_concurrency=3)
    done = run(sim_thread(slow).url, load)
    assert len(done) == 12 and most_in_flight(done) == 3
    # Held back by the cap, later arrivals waited for a slot: their wait shows it.
    assert max(d.sample.timeline.t_sent_ns - d.asked_ns for d in done) > 100e6


def test_duration_stops_releasing_and_keeps_what_was_in_flight(sim_thread: Callable[..., SimThread]) -> None:
    slow = sim.Scenario(ttft_ms=100, tokens_per_s=100, output_tokens=10)
    done = run(sim_thread(slow).url, Load(concurrency=2, requests=None, duration_s=1.0, warmup=2))
    measured = [d for d in done if not d.warmup]
    first = min(d.asked_ns for d in measured)
    assert all(d.asked_ns - first < 1.0e9 for d in measured)  # none released after the duration
    assert all(d.sample.ok for d in done)  # those in flight at the end were waited for, not cut
    assert 10 <= len(measured) <= 16  # ~140 ms per request (100 + 4 gaps of 10), two at a time, for 1 s


def test_a_chain_sends_its_requests_in_order_each_after_the_last_ended(sim_thread: Callable[..., SimThread]) -> None:
    done = run(sim_thread(QUICK).url, Load(concurrency=2, requests=9), Tiny(turns=3))
    assert len(done) == 9
    for chain in {d.chain for d in done}:
        turns = sorted((d for d in done if d.chain == chain), key=lambda d: d.sample.timeline.t_sent_ns)
        assert [d.tag for d in turns] == [f"turn-{k + 1}" for k in range(len(turns))]
        for a, b in itertools.pairwise(turns):
            assert b.sample.timeline.t_sent_ns >= a.sample.timeline.t_end_ns
            assert b.asked_ns >= a.sample.timeline.t_end_ns  # released when the turn before it ended


def test_a_failed_request_is_a_sample_not_an_exception(sim_thread: Callable[..., SimThread]) -> None:
    broken = sim.Scenario(ttft_ms=5, tokens_per_s=1000, output_tokens=5, error="500", error_rate=0.5, seed=3)
    done = run(sim_thread(broken).url, Load(concurrency=3, requests=20))
    assert len(done) == 20 and 0 < sum(not d.sample.ok for d in done) < 20


def test_poisson_rate_is_achieved_within_5_percent_over_60_s(sim_thread: Callable[..., SimThread]) -> None:
    rate, seconds, seed = 20.0, 60.0, 4
    load = Load(concurrency=None, rate=rate, arrival="poisson", requests=None, duration_s=seconds)
    done = run(sim_thread(QUICK).url, load, settings=Settings(SETTINGS.timeouts, seed=seed))
    schedule = offsets(rate, "poisson", 1.0, seed, duration_s=seconds)
    assert len(done) == len(schedule)  # every arrival of the schedule was released, and only those
    assert all(d.sample.ok for d in done)
    sent = sorted(d.sample.timeline.t_sent_ns for d in done)
    achieved = (len(sent) - 1) / ((sent[-1] - sent[0]) / 1e9)
    assert achieved == pytest.approx(rate, rel=0.05)
    asked = sorted(d.asked_ns for d in done)
    assert [round((a - asked[0]) / 1e9, 6) for a in asked] == pytest.approx(schedule, abs=1e-6)


def test_goodput_counts_exactly_the_requests_that_met_the_slo(sim_thread: Callable[..., SimThread]) -> None:
    # Short prompts' first token comes ~40 ms after the request, long ones' ~820 ms (20 ms + tokens / 2,500 per s,
    # never sooner), a fifth of all requests fail: with a 400 ms TTFT objective the good ones are exactly the short,
    # successful ones, as the simulator's own record of each request says; a loaded machine adds far less than
    # the 360 ms between a short one and the objective.
    from tokenpace.config.load import Slo
    from tokenpace.load.figures import figures

    scenario = sim.Scenario(
        ttft_ms=20, prefill_tokens_per_s=2_500, tokens_per_s=1000, output_tokens=5, error="500", error_rate=0.2
    )
    simulator = sim_thread(scenario)

    @dataclass(frozen=True)
    class TwoSizes(Tiny):
        def chain(self, i: int) -> Chain:
            text = f"{i} " + ("word " * (50 if i % 3 else 2000))
            fingerprint = hashlib.sha256(text.encode()).hexdigest()[:16]
            return (Request(Prompt((Message("user", text),), 5, 0, fingerprint)),)

    done = run(simulator.url, Load(concurrency=4, requests=60, warmup=4), TwoSizes())
    measured = [d for d in done if not d.warmup]
    truth = simulator.simulator.truth
    good = [
        d for d in measured
        if d.sample.ok and truth[d.sample.timeline.response_id or ""].prompt_tokens < 1000
    ]  # fmt: skip
    f = figures(done, Slo(ttft_ms=400))
    assert 0 < len(good) < f.ok < f.requests == 60
    assert f.slo_attainment == len(good) / 60
    assert f.goodput == pytest.approx(len(good) / f.duration_s, rel=1e-9)


def test_open_loop_duration_counts_on_the_schedule_not_on_a_late_clock(sim_thread: Callable[..., SimThread]) -> None:
    # The event loop stalls for 0.8 s early on, past the test's end, as on a loaded machine: the arrivals due
    # meanwhile are released late, and every arrival the schedule puts in the 0.61 s is still released, not
    # only those the late clock reached in time.
    stalled: list[bool] = []

    def stall(done: Done) -> None:
        if not stalled:
            stalled.append(True)
            time.sleep(0.8)  # on the loop's thread: nothing is released meanwhile

    load = Load(concurrency=None, rate=50, arrival="constant", requests=None, duration_s=0.61)
    endpoint = Endpoint("sim", "sim", sim_thread(QUICK).url, simulated=True)
    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        done = runner.run(run_load(endpoint, Tiny(), load, SETTINGS, on_done=stall)).done
    assert stalled and len(done) == len(offsets(50, "constant", duration_s=0.61)) == 31
    assert max(d.sample.timeline.t_sent_ns - d.asked_ns for d in done) > 0.5e9  # released late, but released


def test_a_closed_loop_staggers_its_workers(
    sim_thread: Callable[..., SimThread], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "STAGGER_S", 0.02)  # far above what writing 6 requests costs, even on a loaded machine
    slow = sim.Scenario(ttft_ms=400, tokens_per_s=1000, output_tokens=5)  # each request outlasts the stagger
    done = run(sim_thread(slow).url, Load(concurrency=6, requests=6))
    asked = sorted(d.asked_ns for d in done)
    assert all(d.sample.ok for d in done)
    assert all(b - a >= 0.015e9 for a, b in itertools.pairwise(asked))
