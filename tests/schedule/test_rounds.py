"""One prompt per round (issue 31, 2b): a scheduled round sends every endpoint of a model the same prompt of a
workload but its nonce line, and the spread of their answers' lengths falls (the simulator's follows the prompt).

The schedule runs on the sampler with a virtual clock (the runs it launches, with their round seeds, are recorded);
each recorded run is then measured as the sampler measures it (its run_job, against a real simulator).
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from tests.schedule.test_sampler import FakeClock, Runs, run_for
from tokenpace import sim
from tokenpace.agent.worker import Agent
from tokenpace.config.endpoints import Config, read_config
from tokenpace.config.settings import ScheduleSettings
from tokenpace.config.workloads import BUILTIN
from tokenpace.measure.sample import Sample
from tokenpace.prompts.prompt import TOLERANCE, build_turns, without_nonce
from tokenpace.prompts.tokens import count_tokens
from tokenpace.schedule import cadence, rounds
from tokenpace.schedule.cadence import Job
from tokenpace.schedule.dispatch import Dispatcher
from tokenpace.schedule.sampler import Sampler
from tokenpace.sim.scenario import asked_fingerprint
from tokenpace.store.database import open_store
from tokenpace.store.queue import Queue
from tokenpace.web.app import create_app

EVERY_S = 600.0  # every job's interval, so a round is 10 minutes
T0 = 2_916_667 * EVERY_S + 30  # 30 s into a round: the first runs (within 10 s of the start) all launch in it
ROUNDS = 3
LLAMA = ("llama-3.1-8b-instant", "llama3.1-8b", "meta-llama/Meta-Llama-3.1-8B-Instruct")  # one canonical model
# Answers as long as what was asked draws: 200 tokens times a log-normal factor (sigma 0.5) of the prompt.
ANSWERS = sim.Scenario(ttft_ms=0, tokens_per_s=5000, output_tokens=200, answer_spread=0.5)


def _config(path: Path, url: str, one_prompt: bool | None) -> Config:
    """Three resellers of one model and a fourth provider of another, every one local (every 10 min), 1k only."""
    models = [*LLAMA, "gpt-oss-20b"]
    tables = "".join(
        f'[providers.p{i}]\nbase_url = "{url}"\nmodels = ["{m}"]\nrequests = 3\n' for i, m in enumerate(models)
    )
    switch = "" if one_prompt is None else f"one_prompt_per_round = {str(one_prompt).lower()}\n"
    path.write_text(tables + f'[schedule]\nworkloads = ["1k"]\njitter = 0\nwake = false\n{switch}')
    return read_config(path)


async def _launched(cfg: Config, path: Path) -> list[tuple[int, Job]]:
    """The runs the sampler launches over ROUNDS rounds on a virtual clock, each with the round it launched in."""
    found: list[tuple[int, Job]] = []
    with open_store(str(path)) as store:
        clock = FakeClock(T0)
        runs = Runs(store, clock)  # stores each run's samples at its launch: the next due times follow from them

        async def run_job(job: Job) -> None:
            found.append((rounds.round_index(clock.now(), EVERY_S), job))
            await runs(job)

        sampler = Sampler(cadence.jobs(cfg, cfg.endpoints), store, clock=clock, run_job=run_job, inline_reads=True)
        await run_for(sampler, clock, (ROUNDS - 0.5) * EVERY_S)
    return found


async def _measured(tmp_path: Path, one_prompt: bool | None) -> tuple[dict[tuple[int, int], dict[str, Sample]], Any]:
    """Each launched run measured as the sampler measures it: {(round, request): {model id: sample}}, the truths."""
    simulator = sim.Simulator(ANSWERS)
    out: dict[tuple[int, int], dict[str, Sample]] = defaultdict(dict)
    async with sim.serve(simulator) as url:
        cfg = _config(tmp_path / f"c{one_prompt}.toml", url, one_prompt)
        launched = await _launched(cfg, tmp_path / f"schedule{one_prompt}.db")
        with open_store(str(tmp_path / f"measured{one_prompt}.db")) as store:
            measuring = Sampler([job for _, job in launched], store)  # its run_job: the real measurement
            for k, job in launched:
                before = {s.id for s in store.samples()}
                await measuring.run_job(job)
                store.flush()
                new = sorted((s for s in store.samples() if s.id not in before), key=lambda s: s.started_at)
                assert [s.ok for s in new] == [True] * 3
                for i, sample in enumerate(new):
                    out[k, i][job.endpoint.model] = sample
    return out, simulator.truth


def _asked(truth: Any, sample: Sample) -> str:
    """The simulator's fingerprint of the sample's prompt less its nonce line."""
    return str(truth[sample.timeline.response_id or ""].asked)


def _spread(runs: dict[tuple[int, int], dict[str, Sample]]) -> tuple[float, float]:
    """Over every (round, request): the mean range (max - min) and mean standard deviation of the output tokens
    the server counted across the model's three resellers."""
    lengths = [[by_model[m].metrics.provider_output_tokens or 0 for m in LLAMA] for by_model in runs.values()]
    ranges = [max(n) - min(n) for n in lengths]
    return statistics.fmean(ranges), statistics.fmean(statistics.pstdev(n) for n in lengths)


async def test_a_round_sends_a_models_endpoints_one_prompt_but_its_nonce_line(tmp_path: Path) -> None:
    runs, truth = await _measured(tmp_path, None)  # the default: on
    assert sorted({k for k, _ in runs}) == [(2_916_667 + r) for r in range(ROUNDS)]  # each round, every endpoint
    assert all(len(by_model) == 4 for by_model in runs.values())
    shared: dict[int, set[str]] = defaultdict(set)
    for (k, _), by_model in runs.items():
        same = {_asked(truth, by_model[m]) for m in LLAMA}
        assert len(same) == 1  # the resellers' prompts are one less the nonce line ...
        assert _asked(truth, by_model["gpt-oss-20b"]) not in same  # ... another model's are its own
        shared[k] |= same
    assert len(set.union(*shared.values())) == sum(map(len, shared.values()))  # no round repeats another's
    fingerprints = [s.prompt_fingerprint for by_model in runs.values() for s in by_model.values()]
    assert len(set(fingerprints)) == len(fingerprints) == ROUNDS * 3 * 4  # the whole prompts all differ


async def test_one_prompt_per_round_narrows_the_spread_of_a_models_answer_lengths(tmp_path: Path) -> None:
    """Per-endpoint prompts draw answers of different lengths; a round's one prompt draws one length."""
    apart, _ = await _measured(tmp_path, False)
    shared, _ = await _measured(tmp_path, True)
    (apart_range, apart_sd), (shared_range, shared_sd) = _spread(apart), _spread(shared)
    assert apart_range > 20 and shared_range < apart_range / 4 and shared_sd < apart_sd / 4, (apart, shared)


def test_prompts_of_one_round_seed_differ_in_the_nonce_line_only() -> None:
    for workload in (BUILTIN["1k"], BUILTIN["vision"], BUILTIN["cached-10k"]):
        a, b = build_turns(workload, 7, nonce_seed=1), build_turns(workload, 7, nonce_seed=2)
        for x, y in zip(a, b, strict=True):
            text_a, text_b = x.messages[0].text, y.messages[0].text
            assert text_a != text_b and without_nonce(text_a) == without_nonce(text_b) != text_a
            assert x.messages[0].images == y.messages[0].images and x.fingerprint != y.fingerprint
            assert x.canary != y.canary  # the line the answer must begin with follows the nonce
            assert y.input_tokens == count_tokens(text_b)  # counted again: the digits may take other tokens
            assert abs(y.input_tokens - workload.input_tokens) <= workload.input_tokens * TOLERANCE
            assert text_a.splitlines()[1:] == text_b.splitlines()[1:]
    assert build_turns(BUILTIN["1k"], 7) == build_turns(BUILTIN["1k"], 7)  # without: as before, one seed
    assert without_nonce(build_turns(BUILTIN["1k"], 7)[0].messages[0].text) == without_nonce(
        build_turns(BUILTIN["1k"], 7, nonce_seed=3)[0].messages[0].text
    )  # the nonce seed changes nothing else


def test_a_round_is_a_window_of_the_models_shortest_interval(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[providers.a]\nbase_url = "http://127.0.0.1:9/v1"\nmodels = ["llama-3.1-8b-instant"]\nevery = "1h"\n'
        '[providers.b]\nbase_url = "http://127.0.0.1:9/v1"\nmodels = ["llama3.1-8b"]\nevery = "20m"\n'
        '[providers.c]\nbase_url = "http://127.0.0.1:9/v1"\nmodels = ["gpt-oss-20b"]\nevery = "2h"\n'
        '[schedule]\nworkloads = ["1k", "10k"]\n'
    )
    cfg = read_config(path)
    found = {(j.endpoint.provider, j.workload.name): j for j in cadence.jobs(cfg, cfg.endpoints)}
    assert {key: (j.model, j.round_s) for key, j in found.items()} == {
        ("a", "1k"): ("llama-3.1-8b", 1200), ("b", "1k"): ("llama-3.1-8b", 1200), ("c", "1k"): ("gpt-oss-20b", 7200),
        ("a", "10k"): ("llama-3.1-8b", 10800), ("b", "10k"): ("llama-3.1-8b", 10800),
        ("c", "10k"): ("gpt-oss-20b", 10800),
    }  # fmt: skip
    a, b = found["a", "1k"], found["b", "1k"]
    assert rounds.seeded(a, 1200 * 7 + 1, 5).round_seed == rounds.seeded(b, 1200 * 8 - 1, 5).round_seed
    assert rounds.seeded(a, 1200 * 7 + 1, 5).round_seed != rounds.seeded(b, 1200 * 8, 5).round_seed  # the next
    assert rounds.seeded(a, 1, 5).round_seed != rounds.seeded(a, 1, 6).round_seed  # another sampler's salt
    off = dataclasses.replace(cfg, schedule=dataclasses.replace(cfg.schedule, one_prompt_per_round=False))
    assert all(j.round_s == 0 and rounds.seeded(j, 1, 5) == j for j in cadence.jobs(off, off.endpoints))


async def test_a_regions_agent_builds_its_rounds_prompts(pg_url: str, tmp_path: Path) -> None:
    """The round seed travels in the order: the agent sends the round's prompt, its own nonce line apart."""
    path = tmp_path / "c.toml"
    path.write_text(
        '[providers.far]\nbase_url = "http://127.0.0.1:9/v1"\nmodels = ["m"]\nevery = "1h"\n'
        '[schedule]\nworkloads = ["1k"]\nwake = false\n[regions.eu]\n'
    )
    cfg = read_config(path)
    simulator = sim.Simulator(sim.Scenario(ttft_ms=0, tokens_per_s=5000, output_tokens=20))
    queue = Queue(pg_url)
    await queue.open()
    await queue.install()
    dispatcher = Dispatcher(queue, poll_s=0.05)
    async with sim.serve(simulator) as url:
        endpoints = [dataclasses.replace(e, base_url=url) for e in cfg.endpoints]
        (job,) = cadence.jobs(cfg, endpoints)
        with open_store(pg_url) as store:
            agent = Agent(cfg, endpoints, store, queue, "eu", name="here", heartbeat_s=0.5)
            working = asyncio.create_task(agent.run(grace_s=1))
            try:
                assert await asyncio.wait_for(dispatcher(dataclasses.replace(job, round_seed=12345)), 30) == "succeeded"
            finally:
                working.cancel()
                await asyncio.gather(working, return_exceptions=True)
                await dispatcher.close()
                await queue.close()
            (remote,) = store.samples()
    (prompt,) = build_turns(job.workload, 12345)  # the round's first prompt, with a nonce of its own
    assert remote.region == "eu" and remote.prompt_fingerprint != prompt.fingerprint
    assert _asked(simulator.truth, remote) == asked_fingerprint(prompt.messages[0].text)


def test_the_methodology_says_why_and_whether_it_is_on(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "s.db")) as store:
        for on in (True, False):
            config = Config(schedule=ScheduleSettings(one_prompt_per_round=on))
            with TestClient(create_app(store, config)) as client:
                rows = {t["id"]: t for t in client.get("/methodology.json").json()["truth"]}
                page = client.get("/methodology").text
            text = rows["rounds"]["text"]
            assert "Artificial Analysis" in text and "nonce" in text and "One prompt per round" in page
            assert ("one_prompt_per_round = false" in text) is not on


def test_what_a_prompt_asks_leaves_out_its_nonce_line_only() -> None:
    assert (
        asked_fingerprint("0123456789abcdef is it\nthe rest")
        == asked_fingerprint("fedcba9876543210 is it\nthe rest")
        == asked_fingerprint("the rest")
    )
    assert (
        asked_fingerprint("not a nonce\nthe rest")
        != asked_fingerprint("the rest")
        != asked_fingerprint("0123456789abcdef is it\nthe rest!")
    )
