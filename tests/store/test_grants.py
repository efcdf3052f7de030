"""An agent's own PostgreSQL role: it measures its region's jobs and can do nothing else."""

from __future__ import annotations

import uuid
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest

from tests.agentkit import AgentProcess, central, sim_process, until, write_config
from tokenpace.store import grants
from tokenpace.store.database import open_store


def test_a_role_name_is_a_plain_identifier_or_refused() -> None:
    assert grants.for_agent("agent_eu", "eu")[0] == 'GRANT USAGE ON SCHEMA "public" TO "agent_eu"'
    for bad in ('x"; DROP TABLE samples; --', "Agent", "1agent", "a" * 64, ""):
        with pytest.raises(ValueError, match="lower-case letters"):
            grants.for_agent(bad, "eu")


async def test_an_agent_with_its_own_role_measures_its_region_only(pg_url: str, tmp_path: Path) -> None:
    role = f"tp_agent_{uuid.uuid4().hex[:12]}"
    base = pg_url.split("?")[0]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN'.encode())  # trust auth here: no password
    try:
        with sim_process("--ttft-ms", "10", "--tokens-per-s", "500", "--output-tokens", "5") as sim:
            body = f'base_url = "{sim}"\nmodels = ["sim"]'
            cfg = write_config(tmp_path / "c.toml", body, ["eu", "us"], every="1h")
            limited = pg_url.replace("postgres@", f"{quote(role)}@", 1)
            with open_store(pg_url) as store:
                async with central(cfg, store, pg_url):
                    await until(lambda: bool(store.query("SELECT 1 FROM schema_migrations")), within=10)
                    grants.grant_agent(pg_url, role, "eu")  # after serve created the queues, as the README says
                    agent = AgentProcess(limited, "eu", cfg, "eu-1", tmp_path / "eu.log")
                    try:
                        await until(lambda: len(store.samples()) >= 1, within=60)
                    finally:
                        log = agent.stop()
                regions = {s.region for s in store.samples()}
        assert regions == {"eu"}, log
        with psycopg.connect(limited, autocommit=True) as conn:
            queues = {q for (q,) in conn.execute("SELECT DISTINCT queue_name FROM procrastinate_jobs")}
            assert queues == {"tokenpace-eu"}  # the us job waits in the table, invisible to this role
            for forbidden in (
                "SELECT * FROM samples", "DELETE FROM samples", "UPDATE samples SET ok = 0",
                "DROP TABLE agents", "CREATE TABLE mine (x INTEGER)", "DELETE FROM schema_migrations",
            ):  # fmt: skip
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(forbidden.encode())
        with psycopg.connect(pg_url, autocommit=True) as conn:  # as the owner: every queue
            found = conn.execute("SELECT COUNT(*) FROM procrastinate_jobs WHERE queue_name = 'tokenpace-us'")
            assert found.fetchall() == [(1,)]
            # Its heartbeat, runs, worker and job went in under its role: nothing it does was refused.
            agent_row = conn.execute("SELECT role, stopped_at IS NOT NULL FROM agents WHERE name = 'eu-1'")
            assert agent_row.fetchall() == [(role, True)], log
            runs = conn.execute("SELECT DISTINCT role FROM runs WHERE command = 'tokenpace agent eu'").fetchall()
            assert runs == [(role,)]
            done = conn.execute("SELECT status::text FROM procrastinate_jobs WHERE queue_name = 'tokenpace-eu'")
            assert ("succeeded",) in done.fetchall()
            assert conn.execute("SELECT COUNT(*) FROM sample_hours WHERE region = 'eu'").fetchall() == [(1,)]
        assert "failed" not in log and "Traceback" not in log and "denied" not in log, log
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP OWNED BY "{role}"'.encode())
            conn.execute(f'DROP ROLE "{role}"'.encode())
