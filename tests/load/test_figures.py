"""Load-test figures on hand-built requests whose timelines make every figure known in advance."""

from __future__ import annotations

import dataclasses
import random

import pytest

from tests.loadkit import done
from tokenpace.config.traffic import Load, Slo
from tokenpace.load.figures import Done, latency, meets, tpot_ms, window_s
from tokenpace.load.running import figures
from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.stats import Figure

# R1: TTFT 100, E2E 300, 3 tokens, TPOT 100, gaps 100 100.  R2: TTFT 200, E2E 500, 3 tokens, TPOT 150, gaps 50 150.
R1 = done(0, 300, ((100, 1), (200, 1), (300, 1)), input_tokens=10)
R2 = done(100, 600, ((300, 1), (350, 1), (500, 1)), asked_ms=95, input_tokens=20)
R3 = done(200, 250, failure=ErrorKind.RATE_LIMITED, input_tokens=30)
WARM = done(-1000, -500, ((-900, 5),), warmup=True)
RUN = (WARM, R1, R2, R3)


def test_latency_is_count_mean_percentiles_and_max() -> None:
    assert latency([]) == Figure()
    assert latency([50, 100, 100, 150]) == Figure(4, 100.0, p50=100.0, p90=135.0, p95=142.5, p99=148.5, max=150)


def test_figures_of_a_known_run() -> None:
    f = figures(RUN)
    assert (f.requests, f.ok, f.errors) == (3, 2, {"rate_limited": 1})
    assert f.duration_s == pytest.approx(0.6)  # first measured send (0) to last measured end (600); warm-up out
    assert f.request_rate == pytest.approx(2 / 0.6)
    assert f.output_tokens_per_s == pytest.approx(6 / 0.6)
    assert f.input_tokens_per_s == pytest.approx(30 / 0.6)  # ok requests only
    assert f.concurrency_held == pytest.approx((0.3 + 0.5 + 0.05) / 0.6)  # failed requests held a slot too
    assert f.ttft == Figure(2, 150.0, p50=150.0, p90=190.0, p95=195.0, p99=199.0, max=200.0)
    assert (f.tpot.n, f.tpot.p50, f.tpot.max) == (2, 125.0, 150.0)
    assert f.itl == latency([100, 100, 50, 150])
    assert (f.e2e.n, f.e2e.mean, f.e2e.max) == (2, 400.0, 500.0)
    assert (f.wait.n, f.wait.max) == (3, 5.0) and f.wait.mean == pytest.approx(5 / 3)
    assert f.output_speed.n == 2 and f.output_speed.p50 == pytest.approx(10.0)  # 2 tokens after the first in 0.2 s
    assert f.goodput is None and f.slo_attainment is None and f.by_tag == () and f.offered_rate is None


def test_tpot_and_throughput_in_the_servers_own_tokens_beside_o200k() -> None:
    # The server counts R1's 3 o200k tokens as 5 of its own, R2's as 6; the warm-up's 9 are left out.
    r1 = dataclasses.replace(R1, sample=done(0, 300, ((100, 1), (200, 1), (300, 1)), server_tokens=5).sample)
    r2 = dataclasses.replace(R2, sample=done(100, 600, ((300, 1), (350, 1), (500, 1)), server_tokens=6).sample)
    warm = done(-1000, -500, ((-900, 5),), warmup=True, server_tokens=9)
    f = figures((warm, r1, r2, R3))
    # (E2E - TTFT) / (server tokens - 1): (300 - 100) / 4 = 50 and (500 - 200) / 5 = 60
    assert (f.tpot_server.n, f.tpot_server.p50, f.tpot_server.max) == (2, 55.0, 60.0)
    assert f.tpot.p50 == 125.0 and f.output_tokens_per_s == pytest.approx(6 / 0.6)  # o200k beside, as before
    assert f.output_tokens_per_s_server == pytest.approx(11 / 0.6)
    # An ok request without usage: its TPOT is left out (n says so), and no throughput passes a part for the whole.
    partial = figures((r1, R2))
    assert (partial.tpot_server.n, partial.tpot_server.p50, partial.output_tokens_per_s_server) == (1, 50.0, None)
    none = figures(RUN)
    assert (none.tpot_server, none.output_tokens_per_s_server) == (Figure(), None)
    one = figures((done(0, 300, ((100, 1), (200, 2)), server_tokens=1),))  # one server token: no TPOT
    assert one.tpot_server.n == 0 and one.output_tokens_per_s_server == pytest.approx(1 / 0.3)


def test_warmup_never_counts() -> None:
    assert figures(RUN) == figures((R1, R2, R3))
    assert figures((WARM,)).requests == 0


def test_no_requests_give_zeros_not_a_division_by_zero() -> None:
    f = figures([], Slo(ttft_ms=100), offered_rate=2.0)
    assert (f.requests, f.duration_s, f.request_rate, f.goodput, f.slo_attainment) == (0, 0.0, 0.0, 0.0, None)
    assert f.ttft == Figure() and f.offered_rate == 2.0
    assert window_s([]) == 0.0


@pytest.mark.parametrize(
    ("slo", "good"),
    [
        (Slo(ttft_ms=100), [R1]),  # R1's TTFT is exactly at the bound: good
        (Slo(ttft_ms=99.9), []),
        (Slo(tpot_ms=150), [R1, R2]),  # R2's TPOT exactly 150
        (Slo(itl_ms=100), [R1]),  # the request's longest gap: R2's is 150
        (Slo(e2e_ms=500), [R1, R2]),
        (Slo(ttft_ms=200, e2e_ms=300), [R1]),  # every bound must hold
        (Slo(ttft_ms=10_000, tpot_ms=10_000, itl_ms=10_000, e2e_ms=10_000), [R1, R2]),  # R3 failed: never good
    ],
)
def test_goodput_counts_exactly_the_requests_that_met_the_slo(slo: Slo, good: list[Done]) -> None:
    f = figures(RUN, slo)
    assert f.goodput == pytest.approx(len(good) / 0.6)
    assert f.slo_attainment == pytest.approx(len(good) / 3)
    assert [d for d in (R1, R2, R3) if meets(d.sample, slo)] == good


def test_a_missing_figure_fails_its_bound() -> None:
    one_token = done(0, 100, ((50, 1),))  # no TPOT (one token) and no gap (one chunk)
    assert tpot_ms(one_token.sample) is None
    assert meets(one_token.sample, Slo(ttft_ms=50, e2e_ms=100))
    assert not meets(one_token.sample, Slo(tpot_ms=1e6))
    assert not meets(one_token.sample, Slo(itl_ms=1e6))
    assert figures((one_token,)).tpot == Figure()


def test_a_failed_request_is_never_good_whatever_its_timings() -> None:
    cut = done(0, 40, ((10, 1), (20, 1), (30, 1)), failure=ErrorKind.INCOMPLETE_STREAM)
    assert not meets(cut.sample, Slo(e2e_ms=1e6))
    f = figures((cut, R1), Slo(e2e_ms=1e6))
    assert f.slo_attainment == 0.5 and f.ttft.n == 1  # latencies are over ok requests only


def test_a_burst_read_at_once_is_one_chunk_for_itl() -> None:
    burst = done(0, 300, ((100, 1), (100, 2), (300, 1)))
    f = figures((burst,))
    assert f.itl == latency([200])
    assert f.tpot.p50 == pytest.approx((300 - 100) / 3)  # four tokens


def test_by_tag_when_the_dataset_tags_requests() -> None:
    hit, miss = dataclasses.replace(R1, tag="prefix-hit"), dataclasses.replace(R2, tag="prefix-miss")
    f = figures((hit, miss, dataclasses.replace(R3, tag="prefix-miss"), dataclasses.replace(WARM, tag="x")))
    assert [(t.tag, t.requests, t.ok, t.ttft.p50, t.tpot.p50, t.e2e.p50) for t in f.by_tag] == [
        ("prefix-hit", 1, 1, 100.0, 100.0, 300.0),
        ("prefix-miss", 2, 1, 200.0, 150.0, 500.0),
    ]


async def test_figures_of_real_requests_to_the_simulator_match_what_it_was_told() -> None:
    """TTFT and TPOT of streams the simulator paced (50 ms, then 200 tok/s): generous bounds, a noisy machine."""
    from tokenpace import sim
    from tokenpace.clients.transport import Timeouts
    from tokenpace.config.endpoints import Endpoint
    from tokenpace.config.workloads import BUILTIN
    from tokenpace.load.engine import RunOptions, run_workload

    simulator = sim.Simulator(sim.Scenario(ttft_ms=50, tokens_per_s=200, output_tokens=20))
    async with sim.serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        options = RunOptions(6, 2, Timeouts(connect=5, first_token=10, idle=10, total=30), warm_connections=False)
        taken = await run_workload([endpoint], BUILTIN["1k"], options)
    requests = [Done(s, asked_ns=s.timeline.t_sent_ns) for s in taken.samples]
    f = figures(requests, Slo(ttft_ms=10_000))
    assert (f.requests, f.ok, f.errors, f.slo_attainment) == (6, 6, {}, 1.0)
    assert f.ttft.p50 is not None and 45 <= f.ttft.p50 < 1000
    assert f.tpot.p50 is not None and 2.5 <= f.tpot.p50 < 50  # 5 ms a token, as told
    assert f.output_speed.p50 is not None and 20 < f.output_speed.p50 < 400
    assert 0.5 < f.concurrency_held <= 2.0 + 1e-9  # two in flight at most
    assert f.wait == latency([0.0] * 6)


async def test_server_token_tpot_is_the_pace_the_simulator_kept_where_o200k_counts_more_tokens() -> None:
    """25 accented, CJK and emoji words paced at 100 a second, usage counting words (as the server's tokenizer
    would); o200k splits such words, so only the TPOT in the server's tokens is the 10 ms pace it was told."""
    from tokenpace import sim
    from tokenpace.clients.transport import Timeouts
    from tokenpace.config.endpoints import Endpoint
    from tokenpace.load.engine import RunOptions, run_load
    from tokenpace.prompts.synthetic import Lengths, Synthetic

    told = sim.Scenario(ttft_ms=20, tokens_per_s=100, output_tokens=25, non_ascii=True, usage="always")
    async with sim.serve(sim.Simulator(told)) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        options = RunOptions(timeouts=Timeouts(connect=5, first_token=10, idle=10, total=30))
        taken = await run_load(endpoint, Synthetic(Lengths(64), Lengths(25), 1), Load(2, requests=6), options)
    f = figures(taken.done)
    ok = [d.sample for d in taken.done]
    assert f.ok == 6 and all(s.metrics.provider_output_tokens == 25 < s.metrics.output_tokens for s in ok)
    assert f.tpot_server.n == 6 and f.tpot_server.p50 is not None and 9.0 <= f.tpot_server.p50 <= 15.0
    assert f.tpot.p50 is not None and f.tpot.p50 < 0.9 * f.tpot_server.p50  # more o200k tokens in the same time
    assert f.output_tokens_per_s_server == pytest.approx(6 * 25 / window_s(taken.done))
    assert f.output_tokens_per_s == pytest.approx(sum(s.metrics.output_tokens for s in ok) / window_s(taken.done))


def test_ttft_tpot_and_e2e_each_carry_mlperfs_early_stopping_estimate_of_their_p99() -> None:
    from tests.loadkit import done as request
    from tokenpace.measure.stats import early_stop

    few = figures(RUN)
    assert set(few.early_stopping) == {"ttft", "tpot", "e2e"}  # ITL's gaps are no independent requests
    assert few.early_stopping["ttft"] == early_stop([100.0, 200.0]) and few.early_stopping["ttft"].bounded is None
    # 700 requests whose TTFTs are 1..700 ms, sent in no order: P99 is bounded, by one of the largest
    order = random.Random(7).sample(range(1, 701), 700)
    many = figures([request(i * 1000, i * 1000 + t + 10, ((i * 1000 + t, 1), (i * 1000 + t + 10, 1))) for i, t in
                    enumerate(order)])  # fmt: skip
    es = many.early_stopping["ttft"]
    assert (es.n, es.bounded, es.needed) == (many.ttft.n, 0.99, 662) == (700, 0.99, 662)
    assert es.bound == 700 - es.over + 1 and many.ttft.p99 is not None and es.bound >= many.ttft.p99
