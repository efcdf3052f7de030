"""The engine end to end: workloads (what the server receives, parallel groups, TTFT against size, refusals,
cancellation, the stagger) and load tests against a simulator in its own thread (closed and open loops, warm-up,
duration, chains)."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import SimThread
from tokenpace import sim
from tokenpace.board.summary import summarise
from tokenpace.cli import main
from tokenpace.clients.transport import Timeouts
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.traffic import Load
from tokenpace.config.workloads import BUILTIN
from tokenpace.load import release
from tokenpace.load.arrivals import offsets
from tokenpace.load.engine import RunOptions, run_load, run_workload
from tokenpace.load.figures import Done
from tokenpace.load.interpreter import event_loop_factory
from tokenpace.load.send import Refusals
from tokenpace.measure.failures import ErrorKind
from tokenpace.prompts.chains import Chain, Dataset, Request
from tokenpace.prompts.datafiles import open_file
from tokenpace.prompts.prompt import Message, Prompt
from tokenpace.prompts.synthetic import Lengths, SharedPrefix
from tokenpace.store.database import open_store

FAST = Timeouts(connect=2, first_token=10, idle=10, total=30)
SETTINGS = RunOptions(timeouts=FAST)
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


def run(url: str, load: Load, dataset: Dataset | None = None, settings: RunOptions = SETTINGS) -> list[Done]:
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


@pytest.mark.parametrize("kind", ["prefix groups", "a file's records"])
def test_the_warmup_sends_prompts_of_its_own_so_the_first_measured_request_meets_no_cache_it_left(
    sim_thread: Callable[..., SimThread], tmp_path: Path, kind: str
) -> None:
    # Once the warm-up was the dataset's first chains: a prefix group's later requests were then measured as hits
    # of the prefix the warm-up had cached, and a file's records came round again to the warm-up's own.
    dataset: Dataset = SharedPrefix(256, 32, 3, Lengths(3), seed=7)
    if kind == "a file's records":
        lines = [json.dumps({"prompt": f"{n} " + "word " * 200, "output_tokens": 3}) for n in ("one", "two")]
        (tmp_path / "two.jsonl").write_text("\n".join(lines) + "\n")
        dataset = open_file("jsonl", tmp_path / "two.jsonl", 3)
    cache = sim.Scenario(ttft_ms=5, tokens_per_s=1000, output_tokens=3, prefix_cache=True)
    done = run(sim_thread(cache).url, Load(concurrency=1, requests=6, warmup=2), dataset)
    warm = [d.sample for d in done if d.warmup]
    measured = sorted((d.sample for d in done if not d.warmup), key=lambda s: s.timeline.t_sent_ns)
    assert len(warm) == 2 and len(measured) == 6 and all(s.ok for s in warm + measured)
    assert measured[0].prompt_fingerprint not in {s.prompt_fingerprint for s in warm}
    assert not {s.prompt_fingerprint for s in measured} & {s.prompt_fingerprint for s in warm}
    assert measured[0].metrics.provider_cached_tokens == 0  # the server had seen none of its prompt
    # The measured requests are the dataset's own from its first chain, as without a warm-up: whole groups.
    expected = [r.prompt.fingerprint for i in range(6) for r in dataset.chain(i)][:6]
    assert [s.prompt_fingerprint for s in measured] == expected
    # A warm-up has the first measured request's shape: its input tokens and max tokens.
    assert all(s.input_tokens == pytest.approx(measured[0].input_tokens, rel=0.05) for s in warm)


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


def test_a_poisson_schedule_is_released_as_drawn_and_achieves_its_rate(sim_thread: Callable[..., SimThread]) -> None:
    rate, seconds, seed = 40.0, 12.0, 4  # ~480 arrivals: the drawn schedule's own rate is within 5 % of 40/s
    load = Load(concurrency=None, rate=rate, arrival="poisson", requests=None, duration_s=seconds)
    done = run(sim_thread(QUICK).url, load, settings=RunOptions(timeouts=FAST, seed=seed))
    schedule = offsets(rate, "poisson", 1.0, seed, duration_s=seconds)
    assert len(done) == len(schedule)  # every arrival of the schedule was released, and only those
    assert all(d.sample.ok for d in done)
    drawn = (len(schedule) - 1) / (schedule[-1] - schedule[0])
    assert drawn == pytest.approx(rate, rel=0.05)
    sent = sorted(d.sample.timeline.t_sent_ns for d in done)
    achieved = (len(sent) - 1) / ((sent[-1] - sent[0]) / 1e9)
    assert achieved == pytest.approx(drawn, rel=0.02)  # what was sent keeps the schedule's pace
    asked = sorted(d.asked_ns for d in done)
    assert [round((a - asked[0]) / 1e9, 6) for a in asked] == pytest.approx(schedule, abs=1e-6)


def test_goodput_counts_exactly_the_requests_that_met_the_slo(sim_thread: Callable[..., SimThread]) -> None:
    # Short prompts' first token comes ~40 ms after the request, long ones' ~820 ms (20 ms + tokens / 2,500 per s,
    # never sooner), a fifth of all requests fail: with a 400 ms TTFT objective the good ones are exactly the short,
    # successful ones, as the simulator's own record of each request says; a loaded machine adds far less than
    # the 360 ms between a short one and the objective.
    from tokenpace.config.traffic import Slo
    from tokenpace.load.running import figures

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
    monkeypatch.setattr(release, "CLOSED_LOOP_STAGGER_S", 0.02)  # far above writing 6 requests, even on a busy machine
    slow = sim.Scenario(ttft_ms=400, tokens_per_s=1000, output_tokens=5)  # each request outlasts the stagger
    done = run(sim_thread(slow).url, Load(concurrency=6, requests=6))
    asked = sorted(d.asked_ns for d in done)
    assert all(d.sample.ok for d in done)
    assert all(b - a >= 0.015e9 for a, b in itertools.pairwise(asked))


# Workloads: run_workload, each endpoint its own fresh prompts


async def test_server_receives_exactly_the_counted_prompt() -> None:
    simulator = sim.Simulator(sim.Scenario(ttft_ms=5, tokens_per_s=2000, output_tokens=5))
    async with sim.serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        for name in ("1k", "vision"):
            result = await run_workload([endpoint], BUILTIN[name], RunOptions(3, 1, FAST))
            for s in result.samples:
                assert s.ok, s.error_message
                truth = simulator.truth[s.timeline.response_id or ""]
                assert s.input_tokens == truth.prompt_tokens
                assert s.input_tokens is not None and abs(s.input_tokens - 1000) <= 20
                assert s.workload == name and s.prompt_fingerprint
            assert len({s.prompt_fingerprint for s in result.samples}) == 3  # fresh prompts
    vision = result.samples[0]
    assert vision.image_pixels == 1200 * 840 and vision.image_bytes > 1000


async def test_ttft_grows_with_workload_size_end_to_end() -> None:
    # 50k prompt tokens/s of simulated prefill: 10k tokens should take ~180 ms longer than 1k.
    simulator = sim.Simulator(sim.Scenario(ttft_ms=20, prefill_tokens_per_s=50_000, tokens_per_s=2000, output_tokens=5))
    async with sim.serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        ttft = {}
        for name in ("1k", "10k"):
            result = await run_workload([endpoint], BUILTIN[name], RunOptions(3, 1, FAST))
            ttft[name] = statistics.median(s.metrics.ttft_ms or 0 for s in result.samples)
    assert ttft["10k"] - ttft["1k"] == pytest.approx(9000 / 50_000 * 1000, abs=60)


async def test_parallel_workload_releases_groups_together() -> None:
    simulator = sim.Simulator(sim.Scenario(ttft_ms=50, tokens_per_s=200, output_tokens=20))
    async with sim.serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        result = await run_workload([endpoint], BUILTIN["parallel"], RunOptions(20, 1, FAST))
    groups: dict[str, list[float]] = {}
    for s in result.samples:
        assert s.ok and s.group_id is not None
        groups.setdefault(s.group_id, []).append(s.started_at.timestamp())
    assert sorted(len(g) for g in groups.values()) == [10, 10]
    for starts in groups.values():
        assert max(starts) - min(starts) < 0.05  # released together
    first, second = sorted(groups.values(), key=min)
    assert min(second) >= max(first) + 0.05  # the next group waits for the last of the previous one
    assert result.run.concurrency == 10
    summary = summarise("sim", result.samples)
    assert summary.groups is not None and summary.groups.count == 2
    # 10 streams of 20 tokens over ~150 ms each: several hundred tokens/s in aggregate.
    assert summary.groups.speed.p50 is not None and summary.groups.speed.p50 > 300


def test_cli_workloads_custom_and_corpus(tmp_path: Path, sim_thread: Callable[..., SimThread]) -> None:
    s = sim_thread(sim.Scenario(ttft_ms=5, tokens_per_s=2000, output_tokens=5))
    texts = tmp_path / "texts"
    texts.mkdir()
    (texts / "a.md").write_text("# Tides\n\n" + "The moon pulls the sea toward it. " * 200)
    (texts / "b.html").write_text("<title>Rivers</title><p>" + "Rivers carve valleys over time. " * 200 + "</p>")
    config = tmp_path / "tokenpace.toml"
    config.write_text(
        'corpus = "texts"\n'
        f'[providers.local]\nbase_url = "{s.url}"\nmodels = ["m"]\n'
        '[workloads.tiny-compare]\ninput_tokens = 600\nmax_tokens = 50\ntasks = ["compare"]\n'
    )
    listing = CliRunner().invoke(main, ["workloads", "--config", str(config)])
    assert listing.exit_code == 0 and "tiny-compare" in listing.output and "100,000" in listing.output
    db = tmp_path / "t.db"
    args = ["run", "local/m", "--config", str(config), "-w", "tiny-compare", "-n", "2", "--db", str(db), "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["endpoints"][0]["ok"] == 2
    with open_store(str(db)) as store:
        samples = store.samples()
    assert all(x.workload == "tiny-compare" and x.input_tokens and abs(x.input_tokens - 600) <= 12 for x in samples)
    bad = CliRunner().invoke(main, ["run", "--sim", "-w", "nope", "--db", str(db)])
    assert bad.exit_code != 0 and "unknown workload 'nope'" in bad.output
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = CliRunner().invoke(main, ["run", "--sim", "--corpus", str(empty), "--db", str(db)])
    assert bad.exit_code != 0 and "no text" in bad.output


def test_prompts_are_kept_only_when_asked(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    for flag in ([], ["--keep-prompts"]):
        result = CliRunner().invoke(main, ["run", "--sim", "-n", "2", "--db", str(db), "--json", *flag])
        assert result.exit_code == 0, result.output
    with open_store(str(db)) as store:
        samples = store.samples()
    plain = [s for s in samples if s.prompt_text is None]
    kept = [s for s in samples if s.prompt_text is not None]
    assert len(plain) == len(kept) == 2
    assert all(s.prompt_fingerprint and s.input_tokens for s in samples)
    assert all("Documents:" in (s.prompt_text or "") for s in kept)


async def test_a_refused_field_is_negotiated_once_per_endpoint(refusing_server: tuple[str, Counter[str]]) -> None:
    """Under serve each run is a new measure(): only the first of an endpoint may send a refused request."""
    url, sent = refusing_server
    endpoint, refusals = Endpoint("strict", "m", url), Refusals()  # kept across runs, as the sampler keeps its own
    for _ in range(3):
        (sample,) = (
            await run_workload(
                [endpoint], BUILTIN["1k"], RunOptions(1, 1, FAST, warm_connections=False), refusals=refusals
            )
        ).samples
        assert sample.ok
    assert sent == {"refused": 1, "served": 3}  # the budget's worst case allows one refusal per run


async def test_a_cancelled_run_keeps_every_sample_each_as_it_ended() -> None:
    """Each sample reaches the caller as its stream ends; the request cut by the cancellation is one too."""
    simulator = sim.Simulator(sim.Scenario(ttft_ms=5, tokens_per_s=40, output_tokens=10))  # 1/4 s a stream
    kept: list[Done] = []
    async with sim.serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        task = asyncio.create_task(run_workload([endpoint], BUILTIN["1k"], RunOptions(3, 1, FAST), on_done=kept.append))
        while len(simulator.truth) < 2:  # noqa: ASYNC110 - the second request is being timed
            await asyncio.sleep(0.01)
        for _ in range(100):  # the first one's decoding, on the decoder thread, lands within moments
            if kept:
                break
            await asyncio.sleep(0.01)
        assert [d.sample.error_kind for d in kept] == [None]  # stored while the second is still being timed
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert [d.sample.error_kind for d in kept] == [None, ErrorKind.CANCELLED]


async def test_a_closed_loop_staggers_its_streams_so_rounds_do_not_end_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(release, "CLOSED_LOOP_STAGGER_S", 0.02)  # far above writing 8 requests, even on a busy machine
    simulator = sim.Simulator(sim.Scenario(ttft_ms=400, tokens_per_s=2000, output_tokens=3))  # outlasts the stagger
    async with sim.serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        result = await run_workload([endpoint], BUILTIN["1k"], RunOptions(8, 8, FAST, seed=1))
    asked = sorted(s.timeline.t_sent_ns - s.timeline.queued_ns for s in result.samples)
    assert all(s.ok for s in result.samples)
    # Spread over the stagger's 140 ms, not together. A busy machine fires a timer late now and then, so one gap
    # may shrink while the next grows (every gap >= 15 ms failed under the whole suite on 2 loaded cores).
    gaps = sorted(b - a for a, b in itertools.pairwise(asked))
    assert asked[-1] - asked[0] >= 0.75 * 7 * 0.02e9 and gaps[len(gaps) // 2] >= 0.015e9, gaps
