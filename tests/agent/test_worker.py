"""Probe agents as real processes against the machine's PostgreSQL: regions, emulated distance, faults.

Each agent is a `tokenpace agent` process; the central scheduler (serve's sampler and dispatcher) runs on the
test's loop; the endpoint is a `tokenpace sim` process, reached by each region through its own delay proxy.
"""

from __future__ import annotations

import contextlib
import json
import urllib.request
from pathlib import Path
from typing import Any

import psycopg

from tests.agentkit import AgentProcess, central, delay_process, sim_process, until, write_config
from tokenpace.measure.metrics import corrected_ttft
from tokenpace.measure.sample import Sample
from tokenpace.store import agents
from tokenpace.store.database import open_store

REQUESTS = 8  # per job; two jobs per region, each with its own measure of the network
CANARY = "sk-canary-9f3e1d7a5b"


def _by_region(samples: list[Sample]) -> dict[str, list[Sample]]:
    found: dict[str, list[Sample]] = {}
    for s in samples:
        found.setdefault(s.region, []).append(s)
    return found


def _truth_ttft_ms(base: str, sample: Sample) -> float:
    """The simulator's TTFT for the sample's request: its first token's send time - the request's arrival."""
    rid = sample.timeline.response_id  # the simulator's stream id is its truth's id
    request = urllib.request.Request(f"{base.removesuffix('/v1')}/sim/truth/{rid}")
    request.add_header("Authorization", f"Bearer {CANARY}")
    with urllib.request.urlopen(request, timeout=10) as answer:
        doc = json.load(answer)
    first = min(t for t, kind, _ in doc["events"] if kind in ("content", "reasoning"))
    return float(first - doc["t_received_ns"]) / 1e6


def _dump(url: str, *tables: str) -> str:
    with psycopg.connect(url) as conn:
        return "".join(str(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in tables)  # noqa: S608


async def test_each_region_sees_its_own_distance_and_corrected_ttft_takes_it_off(pg_url: str, tmp_path: Path) -> None:
    """Four agents, each reaching one simulator through its own added delay ("here" through none).

    Each sample's TTFT is compared with the simulator's own record of that request (request arrived, first token
    left): TTFT - truth = the client's own share c + the added round trip. c (the request's upload, the
    client's reading) is what "here" shows; a region's median minus c is its added round trip, 2 x the delay
    (3 ms more on a quiet machine, more on a loaded one), and TTFT minus the measured network round trip is
    back near here's.
    """
    delays = {"here": 0.0, "near": 5.0, "mid": 15.0, "far": 30.0}  # ms each way: the round trip is twice that
    provider = 'base_url = "{}"\nmodels = ["sim"]\napi_key_env = "TP_CANARY_KEY"'
    sim_args = ("--ttft-ms", "100", "--tokens-per-s", "2000", "--output-tokens", "20")
    keyed = {"TP_CANARY_KEY": CANARY}
    with contextlib.ExitStack() as stack:
        base = stack.enter_context(sim_process(*sim_args, "--api-key-env", "TP_CANARY_KEY", env=keyed))
        procs: list[AgentProcess] = []
        central_cfg = write_config(tmp_path / "central.toml", provider.format(base), list(delays), requests=REQUESTS)
        for region, one_way in delays.items():
            via = stack.enter_context(delay_process(base, one_way)) if one_way else base
            cfg = write_config(tmp_path / f"{region}.toml", provider.format(via), list(delays), requests=REQUESTS)
            name, log = f"agent-{region}", tmp_path / f"{region}.log"
            procs.append(AgentProcess(pg_url, region, cfg, name, log, env=keyed, heartbeat_s=2))
        try:
            for proc in procs:
                proc.wait_ready()
            with open_store(pg_url) as store:
                async with central(central_cfg, store, pg_url):

                    def enough() -> bool:  # a light read
                        counts = dict(store.query("SELECT region, COUNT(*) FROM samples GROUP BY region"))
                        return all(counts.get(r, 0) >= 2 * REQUESTS for r in delays)

                    await until(enough, within=90)
                samples = store.samples()
            truths = {s.id: _truth_ttft_ms(base, s) for s in samples if s.ok}  # while the simulator runs
        finally:
            logs = "".join(p.stop() for p in procs)
    with open_store(pg_url) as store:
        rows = agents.read_all(store)
    by_region = _by_region(samples)
    assert set(by_region) == set(delays)
    # The fastest of each region's samples, as rtt_ms is the fastest try: on a loaded machine an agent process's
    # own overhead grows now and then (a median was 20 ms over here's), its fastest sample's does not.
    over: dict[str, float] = {}  # the region's least TTFT - truth
    corrected: dict[str, float] = {}  # and least TTFT - network round trip - truth
    for region in delays:
        mine = [s for s in by_region[region] if s.ok]
        assert len(mine) >= 2 * REQUESTS and {s.agent for s in mine} == {f"agent-{region}"}
        assert all(s.network is not None and s.network.rtt_ms is not None for s in mine)
        over[region] = min((s.metrics.ttft_ms or 0) - truths[s.id] for s in mine)
        corrected[region] = min(
            (corrected_ttft(s.metrics.ttft_ms, s.network.rtt_ms if s.network else None) or 0) - truths[s.id]
            for s in mine
        )
    print("TTFT - truth", over, "corrected - truth", corrected)  # shown with -s: the figures behind the asserts
    # With a CPU burner on each core: {'here': 0.37, 'near': 10.56, 'mid': 30.46, 'far': 60.28}, corrected all
    # within 1.2 ms of here's. A region's added round trip is twice its delay, the correction takes it off.
    # Under the suite's three workers the delaying proxy's own wake-ups lengthened the fastest round-trip probe by
    # up to a tenth (corrected far -6.0 ms at 60 ms), which the correction then takes off too: that much is the
    # test's proxy, not the client (near's fastest was 13.4 ms over here's, not 10, with a llama.cpp build beside).
    for region, one_way in delays.items():
        assert abs(over[region] - over["here"] - 2 * one_way) <= 3 + 0.1 * 2 * one_way, (region, over)
        assert abs(corrected[region] - corrected["here"]) <= 3 + 0.1 * 2 * one_way, (region, corrected)
    # One sample per job and request: the job ids and sequence numbers never repeat.
    assert len({(s.job_id, s.job_seq) for s in samples}) == len(samples)
    assert {a.name: a.state(a.heartbeat_at) for a in rows} == {f"agent-{r}": "stopped" for r in delays}
    assert all(a.jobs_done >= 1 and a.jobs_failed == 0 for a in rows)
    # The key: in the agents' environment and on the wire, in no job, no row, no log.
    assert CANARY not in _dump(pg_url, "procrastinate_jobs", "samples", "agents", "runs") + logs


def _job_states(url: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT id, status::text, attempts FROM procrastinate_jobs ORDER BY id").fetchall()


async def test_an_agent_killed_mid_job_has_its_job_retried_once_and_never_stored_twice(
    pg_url: str, tmp_path: Path
) -> None:
    """kill -9 while a job of 6 requests has stored some: another agent retries it; each request is stored once."""
    with sim_process("--ttft-ms", "400", "--tokens-per-s", "200", "--output-tokens", "10") as base:
        cfg = write_config(
            tmp_path / "c.toml", f'base_url = "{base}"\nmodels = ["sim"]', ["eu"], every="1h", requests=6
        )
        first = AgentProcess(pg_url, "eu", cfg, "eu-1", tmp_path / "eu-1.log")
        second: AgentProcess | None = None
        try:
            first.wait_ready()
            with open_store(pg_url) as store:
                async with central(cfg, store, pg_url) as dispatcher:
                    await until(lambda: len(store.samples()) >= 2, within=60, every=0.05)
                    first.kill()
                    second = AgentProcess(pg_url, "eu", cfg, "eu-2", tmp_path / "eu-2.log")
                    await until(lambda: dispatcher.counts["finished"] >= 1, within=60)
                    samples = store.samples()
                    states = _job_states(pg_url)
                    listed = {a.name: a for a in agents.read_all(store)}
        finally:
            first.stop()
            if second is not None:
                second.stop()
    assert dispatcher.counts["retried"] == 1
    ((job_id, status, attempts),) = states
    assert (status, attempts) == ("succeeded", 2)  # procrastinate counts the killed attempt and its retry
    assert sorted(s.job_seq or 0 for s in samples) == list(range(6))  # each request once: none lost, none twice
    assert {s.job_id for s in samples} == {str(job_id)}
    assert {s.agent for s in samples} == {"eu-1", "eu-2"}
    now = max(a.heartbeat_at for a in listed.values())
    assert listed["eu-1"].state(now) == "down" and listed["eu-2"].state(now) == "up"


async def test_a_job_whose_retry_is_killed_too_is_recorded_failed(pg_url: str, tmp_path: Path) -> None:
    """Retried once only: the retry's agent killed as well, the job ends failed, its stored requests kept once."""
    with sim_process("--ttft-ms", "400", "--tokens-per-s", "200", "--output-tokens", "10") as base:
        body = f'base_url = "{base}"\nmodels = ["sim"]'
        cfg = write_config(tmp_path / "c.toml", body, ["eu"], every="1h", requests=8)
        procs = [AgentProcess(pg_url, "eu", cfg, "eu-1", tmp_path / "eu-1.log")]
        try:
            procs[0].wait_ready()
            with open_store(pg_url) as store:
                async with central(cfg, store, pg_url) as dispatcher:
                    await until(lambda: len(store.samples()) >= 2, within=60, every=0.05)
                    procs[0].kill()
                    procs.append(AgentProcess(pg_url, "eu", cfg, "eu-2", tmp_path / "eu-2.log"))
                    await until(lambda: any(s.agent == "eu-2" for s in store.samples()), within=60, every=0.05)
                    procs[1].kill()
                    await until(lambda: dispatcher.counts["failed"] >= 1, within=60)
                    samples = store.samples()
        finally:
            for proc in procs:
                proc.stop()
    ((_, status, _),) = _job_states(pg_url)
    assert status == "failed" and dispatcher.counts["retried"] == 1
    seqs = [s.job_seq for s in samples]
    assert len(seqs) == len(set(seqs)) and 2 <= len(seqs) < 8


async def test_an_agent_reconnects_after_its_connections_are_terminated(pg_url: str, tmp_path: Path) -> None:
    url = pg_url + "&application_name=tp_reconnect_agent"
    cfg = write_config(tmp_path / "c.toml", "simulate = { ttft_ms = 20, tokens_per_s = 500 }", ["eu"], every="1s")
    agent = AgentProcess(url, "eu", cfg, "eu-1", tmp_path / "eu-1.log")
    try:
        agent.wait_ready()
        with open_store(pg_url) as store:
            async with central(cfg, store, pg_url):
                await until(lambda: len(store.samples()) >= 2, within=60)
                with psycopg.connect(pg_url) as conn:
                    killed = conn.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                        ("tp_reconnect_agent",),
                    ).fetchall()
                assert len(killed) >= 2  # the store's and the queue's
                before = len(store.samples())
                await until(lambda: len(store.samples()) >= before + 3, within=60)
        assert agent.proc.poll() is None  # it kept working
    finally:
        log = agent.stop()
    assert "job" in log
