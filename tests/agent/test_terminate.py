"""A live agent's queue under attack (issue 29): its connections cut (``pg_terminate_backend``), its job's outcome
follows what was stored (not run twice, not failed with every request stored) and the agent goes on; an abort
notified by another role leaves its running job alone."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import psycopg

from tests.agent.test_worker import _job_states
from tests.agentkit import AgentProcess, central, sim_process, until, write_config
from tokenpace.store.database import open_store

REQUESTS = 6  # ~0.45 s each: the cuts fall mid-job


def _terminate(url: str, name: str, seconds: float) -> int:
    """Every connection of the application ``name``, terminated every 0.1 s for ``seconds``; how many were."""
    killed = 0
    end = time.monotonic() + seconds
    with psycopg.connect(url, autocommit=True) as conn:
        while time.monotonic() < end:
            sql = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s"
            killed += len(conn.execute(sql, (name,)).fetchall())
            time.sleep(0.1)
    return killed


async def test_a_live_agents_cut_connections_neither_rerun_nor_fail_its_job(pg_url: str, tmp_path: Path) -> None:
    """eu-1's connections are cut for a second while its job runs, eu-2 idles beside it, ready to take a retry."""
    with sim_process("--ttft-ms", "400", "--tokens-per-s", "200", "--output-tokens", "10") as base:
        body = f'base_url = "{base}"\nmodels = ["sim"]'
        cfg = write_config(tmp_path / "c.toml", body, ["eu"], every="1h", requests=REQUESTS)
        cut = AgentProcess(pg_url + "&application_name=tp_cut_agent", "eu", cfg, "eu-1", tmp_path / "eu-1.log")
        idle: AgentProcess | None = None
        try:
            cut.wait_ready()
            with open_store(pg_url) as store:
                async with central(cfg, store, pg_url) as dispatcher:
                    await until(lambda: len(store.samples()) >= 1, within=60, every=0.05)
                    idle = AgentProcess(pg_url, "eu", cfg, "eu-2", tmp_path / "eu-2.log")  # once eu-1 has the job
                    assert await asyncio.to_thread(_terminate, pg_url, "tp_cut_agent", 3.0) >= 2
                    await until(lambda: dispatcher.counts["finished"] + dispatcher.counts["failed"] >= 1, within=60)
                    await asyncio.sleep(5)  # a retry, had there been one, is taken and run by now
                    samples = store.samples()
                    states = _job_states(pg_url)
            codes = (cut.proc.poll(), idle.proc.poll())
            alive = codes == (None, None)
        finally:
            logs = cut.stop() + (idle.stop() if idle is not None else "")
    runs = [line for line in logs.splitlines() if " job 1: far/sim 1k" in line]
    assert len(runs) == 1, logs  # measured once
    assert dispatcher.counts["retried"] == 0 and dispatcher.counts["failed"] == 0, dispatcher.counts
    assert [status for _, status, _ in states] == ["succeeded"]
    assert sorted(s.job_seq or 0 for s in samples) == list(range(REQUESTS)) and {s.agent for s in samples} == {"eu-1"}
    assert alive, (codes, logs)  # both agents go on


async def test_an_abort_anyone_notifies_does_not_stop_a_running_job(pg_url: str, tmp_path: Path) -> None:
    """Any role may NOTIFY any channel (PostgreSQL has no right for it, so another region's agent role can too): a
    worker that listened aborted its running job on a forged notification. The agent listens to none."""
    with sim_process("--ttft-ms", "400", "--tokens-per-s", "200", "--output-tokens", "10") as base:
        body = f'base_url = "{base}"\nmodels = ["sim"]'
        cfg = write_config(tmp_path / "c.toml", body, ["eu"], every="1h", requests=REQUESTS)
        agent = AgentProcess(pg_url, "eu", cfg, "eu-1", tmp_path / "eu-1.log")
        try:
            agent.wait_ready()
            with open_store(pg_url) as store:
                async with central(cfg, store, pg_url) as dispatcher:
                    await until(lambda: len(store.samples()) >= 1, within=60, every=0.05)
                    ((job_id, _, _),) = _job_states(pg_url)
                    forged = json.dumps({"type": "abort_job_requested", "job_id": job_id})
                    with psycopg.connect(pg_url, autocommit=True) as conn:
                        for channel in ("procrastinate_queue_v1#tokenpace-eu", "procrastinate_any_queue_v1"):
                            conn.execute("SELECT pg_notify(%s, %s)", (channel, forged))
                    await until(lambda: sum(dispatcher.counts[k] for k in ("finished", "failed")) >= 1, within=60)
                    samples = store.samples()
                    states = _job_states(pg_url)
        finally:
            agent.stop()
    assert [status for _, status, _ in states] == ["succeeded"]
    assert sorted(s.job_seq or 0 for s in samples) == list(range(REQUESTS)) and all(s.ok for s in samples)
