"""What a region agent's own PostgreSQL role cannot do (issue 21, item 1): each attack, as a real LOGIN role
given its rights by the real ``tokenpace db grant-agent ... --db`` path, against a store and queues as serve
leaves them, another region's agent, run, worker and job beside it."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from click.testing import CliRunner

from tests.store.test_windows import stream
from tokenpace.cli import main
from tokenpace.config.endpoints import Endpoint
from tokenpace.errors import StoreError
from tokenpace.measure.sample import Origin, RunRecord, make_sample
from tokenpace.store import agents, migrations
from tokenpace.store.columns import SAMPLE_COLUMNS, sample_values
from tokenpace.store.database import open_store
from tokenpace.store.queue import Queue, RunOrder

FAR = Endpoint("far", "sim", "http://far.invalid/v1")  # named "far/sim" in an order
NOW = datetime.now(UTC).replace(microsecond=0)


@dataclass
class World:
    owner: str  # the central role's URL
    agent: str  # the same database as the agent's role
    role: str
    eu_job: int
    us_job: int


async def _queue(url: str) -> tuple[int, int]:
    queue = Queue(url)
    await queue.open()
    try:
        await queue.install()
        deadline = NOW.timestamp() + 3600
        eu = await queue.defer(RunOrder(FAR.name, "1k", "eu-west", 2, deadline))
        us = await queue.defer(RunOrder(FAR.name, "1k", "us-east", 2, deadline))
        return eu, us
    finally:
        await queue.close()


@pytest.fixture
def world(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """The store and queues serve makes, us-east's agent, run, sample and worker in them, and an eu-west role."""
    monkeypatch.chdir(tmp_path)  # where a refused store's rescue file would go
    role = f"tp_attack_{uuid.uuid4().hex[:12]}"
    base = pg_url.split("?")[0]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN'.encode())  # trust auth here: no password
    try:
        with open_store(pg_url) as store:
            at = NOW - timedelta(minutes=5)
            agents.beat(store, agents.AgentRow("us-1", "us-east", "far-host", "1", at, at, 10.0))
            store.add_run(
                RunRecord("us-run", at, at, "tokenpace agent us-east", 1, 1, 1, None, None, None, None, False)
            )
            us_origin = Origin("us-east", "us-1", "0")
            store.add_sample(make_sample("us-run", FAR, "1k", at, stream(100, 10), origin=us_origin, seq=0))
        eu_job, us_job = asyncio.run(_queue(pg_url))
        with psycopg.connect(pg_url, autocommit=True) as conn:  # us-east's worker, stalled
            conn.execute("INSERT INTO procrastinate_workers (last_heartbeat) VALUES (now() - interval '1 hour')")
        result = CliRunner().invoke(main, ["db", "grant-agent", role, "--region", "eu-west", "--db", pg_url])
        assert result.exit_code == 0, result.output
        agent_url = pg_url.replace("postgres@", f"{quote(role)}@", 1)
        with open_store(agent_url) as store:  # its agent's first beat, as before any job: the samples' "eu-1"
            agents.beat(store, agents.AgentRow("eu-1", "eu-west", "eu-host", "1", NOW, NOW, 10.0))
        yield World(pg_url, agent_url, role, eu_job, us_job)
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP OWNED BY "{role}"'.encode())
            conn.execute(f'DROP ROLE "{role}"'.encode())


def owner_sees(world: World, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(world.owner, autocommit=True) as conn:
        return conn.execute(sql.encode(), params).fetchall()


def attempt(world: World, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Run ``sql`` as the agent's role; refused or not, the test then asks the owner what changed."""
    with psycopg.connect(world.agent, autocommit=True) as conn, contextlib.suppress(psycopg.Error):
        conn.execute(sql.encode(), params)


def store_as_agent(world: World, region: str, job: int | str | None, seq: int = 0, workload: str = "1k",
                   endpoint: Endpoint = FAR, agent: str = "eu-1", **truth: Any) -> bool:  # fmt: skip
    """Write a sample through the store as the agent's role (``truth``: issue 22's fields of it); whether the
    database took it."""
    origin = Origin(region, agent, None if job is None else str(job))
    sample = make_sample("eu-run", endpoint, workload, NOW, stream(50, 5), origin=origin, seq=seq)
    cached = truth.pop("provider_cached_tokens", None)
    sample = dataclasses.replace(sample, metrics=dataclasses.replace(sample.metrics, provider_cached_tokens=cached))
    sample = dataclasses.replace(sample, **truth)
    store = open_store(world.agent)
    try:
        store.add_sample(sample)
        store.flush()
        return True
    except StoreError:
        return False
    finally:
        with contextlib.suppress(StoreError):
            store.close()


def counted(world: World, region: str) -> int:
    """Samples the board's rollups count for a region (every level)."""
    rows = owner_sees(world, "SELECT SUM(samples) FROM sample_hours WHERE region = %s", (region,))
    return int(rows[0][0] or 0)


def test_its_own_job_goes_in_and_the_board_counts_it(world: World) -> None:
    assert store_as_agent(world, "eu-west", world.eu_job, seq=1)
    assert counted(world, "eu-west") == 1  # counted by the database, not by a right of the role's
    assert store_as_agent(world, "eu-west", world.eu_job, seq=1)  # the same request again: stored once
    assert counted(world, "eu-west") == 1
    with psycopg.connect(world.agent, autocommit=True) as conn:  # which of its job's requests are stored (a retry)
        sql = "SELECT job_seq FROM samples WHERE job_id = %s"
        assert conn.execute(sql, (str(world.eu_job),)).fetchall() == [(1,)]
        assert conn.execute(sql, ("0",)).fetchall() == []  # another region's job: none of its rows


def test_the_trigger_keys_its_samples_by_cache_and_cold_start_and_counts_its_canary(world: World) -> None:
    """Counted under the agent's role (migration 13's shape): a cached, cold sample whose canary failed, a fresh
    one whose canary passed."""
    assert store_as_agent(world, "eu-west", world.eu_job, seq=0, provider_cached_tokens=1024, cold=True,
                          canary="CANARY-1", canary_ok=False)  # fmt: skip
    assert store_as_agent(world, "eu-west", world.eu_job, seq=1, canary="CANARY-2", canary_ok=True)
    select = "SELECT cached, cold, samples, canary_checked, canary_passed FROM sample_{} WHERE region = 'eu-west'"
    for level in ("hours", "quarters", "days"):
        assert sorted(owner_sees(world, select.format(level))) == [(0, 0, 1, 1, 1), (1, 1, 1, 1, 0)], level


def insert_as_agent(world: World, seq: int = 0, **figures: float) -> bool:
    """Insert its own job's sample with SQL of its own, as the agent's role (no store's checks); whether it went in."""
    origin = Origin("eu-west", "eu-1", str(world.eu_job))
    values = sample_values(make_sample("eu-run", FAR, "1k", NOW, stream(50, 5), origin=origin, seq=seq))
    values |= {"started_at": NOW.timestamp()} | figures
    insert = f"INSERT INTO samples ({', '.join(SAMPLE_COLUMNS)}) VALUES ({', '.join(['%s'] * len(SAMPLE_COLUMNS))})"  # noqa: S608
    try:
        with psycopg.connect(world.agent, autocommit=True) as conn:
            conn.execute(insert.encode(), [int(v) if isinstance(v, bool) else v for v in values.values()])
    except psycopg.Error:
        return False
    return True


def test_it_cannot_store_a_figure_no_measurement_can_produce(world: World) -> None:
    """Issue 29: within every policy (its region, its job, its request), one output speed of 1e300 or Infinity took
    every page down and stayed in the rollups; the database refuses it, NaN and negatives too (migration 14)."""
    for value in (1e300, math.inf, math.nan, -1.0):
        assert not insert_as_agent(world, output_speed=value), value
        assert not insert_as_agent(world, ttft_ms=value), value
    assert not insert_as_agent(world, e2e_ms=86_400_001.0)  # longer than any request may last
    assert counted(world, "eu-west") == 0
    assert insert_as_agent(world)  # the same sample with what a measurement gives goes in, counted once
    assert counted(world, "eu-west") == 1


def test_it_cannot_insert_samples_for_another_region(world: World) -> None:
    assert not store_as_agent(world, "us-east", world.us_job)
    assert not store_as_agent(world, "us-east", world.eu_job)
    assert not store_as_agent(world, "eu-west", world.us_job)  # its region, another region's job
    assert counted(world, "us-east") == 1 and owner_sees(world, "SELECT COUNT(*) FROM samples") == [(1,)]


def test_it_cannot_insert_samples_for_invented_endpoints_or_requests(world: World) -> None:
    invented = Endpoint("forged", "best-model", "http://forged.invalid/v1")
    assert not store_as_agent(world, "eu-west", world.eu_job, endpoint=invented)
    assert not store_as_agent(world, "eu-west", world.eu_job, workload="100k")  # not the job's workload
    assert not store_as_agent(world, "eu-west", world.eu_job, seq=2)  # the job ordered 2 requests: 0 and 1
    assert not store_as_agent(world, "eu-west", world.eu_job, seq=-1)
    assert not store_as_agent(world, "eu-west", None)  # no job at all
    assert not store_as_agent(world, "eu-west", "999999999")  # a job never ordered
    assert counted(world, "eu-west") == 0 and owner_sees(world, "SELECT COUNT(*) FROM samples") == [(1,)]


def test_it_cannot_name_another_agent_in_its_samples(world: World) -> None:
    """Issue 29: a sample's ``agent`` is one of its own agents' rows, never another's (or none)."""
    with open_store(world.owner) as store:  # an agent row of its region the central role wrote, not this role
        agents.beat(store, agents.AgentRow("eu-2", "eu-west", "other-host", "1", NOW, NOW, 10.0))
    for other in ("us-1", "eu-2", "never-beat"):
        assert not store_as_agent(world, "eu-west", world.eu_job, agent=other), other
    assert owner_sees(world, "SELECT COUNT(*) FROM samples WHERE region = 'eu-west'") == [(0,)]
    assert store_as_agent(world, "eu-west", world.eu_job)  # its own, "eu-1"


def test_it_cannot_write_the_rollups(world: World) -> None:
    before = owner_sees(world, "SELECT * FROM sample_hours ORDER BY hour")
    for table in ("sample_hours", "sample_quarters", "sample_days"):
        attempt(world, f"UPDATE {table} SET samples = samples + 1000, ok = ok + 1000")  # noqa: S608
        attempt(world, f"DELETE FROM {table}")  # noqa: S608
        attempt(world, f"TRUNCATE {table}")
    attempt(world, "ALTER TABLE sample_hours DISABLE TRIGGER ALL")
    assert owner_sees(world, "SELECT * FROM sample_hours ORDER BY hour") == before
    assert counted(world, "us-east") == 1


def test_it_cannot_rewrite_another_agents_heartbeat(world: World) -> None:
    others = "SELECT * FROM agents WHERE name <> 'eu-1'"  # eu-1 is its own: it beats it
    before = owner_sees(world, others)
    attempt(world, "UPDATE agents SET heartbeat_at = 0, stopped_at = 1, jobs_failed = 99")
    attempt(world, "DELETE FROM agents")
    attempt(
        world,
        "INSERT INTO agents (name, region, host, version, started_at, heartbeat_at, heartbeat_s)"
        " VALUES ('us-1', 'eu-west', 'x', '1', 0, 0, 1) ON CONFLICT (name) DO UPDATE SET region = 'eu-west',"
        " heartbeat_at = 0, stopped_at = 1",
    )
    attempt(world, "INSERT INTO agents (name, region, host, version, started_at, heartbeat_at, heartbeat_s)"
                   " VALUES ('us-2', 'us-east', 'x', '1', 0, 0, 1)")  # fmt: skip
    assert owner_sees(world, others) == before


def test_it_cannot_delete_other_regions_queue_workers(world: World) -> None:
    before = owner_sees(world, "SELECT id FROM procrastinate_workers")
    attempt(world, "SELECT procrastinate_prune_stalled_workers_v1(0)")
    attempt(world, "DELETE FROM procrastinate_workers")
    attempt(world, "UPDATE procrastinate_workers SET last_heartbeat = now() - interval '1 day'")
    assert before and owner_sees(world, "SELECT id FROM procrastinate_workers") == before


def test_it_cannot_rewrite_runs(world: World) -> None:
    before = owner_sees(world, "SELECT * FROM runs")
    attempt(world, "UPDATE runs SET completed = 0, requested = 1000")
    attempt(world, "DELETE FROM runs")
    attempt(
        world,
        "INSERT INTO runs (id, started_at, finished_at, command, concurrency, requested, completed, client_bound,"
        " tool_version) VALUES ('us-run', 0, 0, 'x', 1, 9, 0, 1, 'x') ON CONFLICT (id) DO UPDATE SET completed = 0",
    )
    assert owner_sees(world, "SELECT * FROM runs") == before


def test_it_cannot_read_or_touch_other_regions_jobs_or_their_events(world: World) -> None:
    with psycopg.connect(world.agent, autocommit=True) as conn:
        try:
            seen = {j for (j,) in conn.execute("SELECT job_id FROM procrastinate_events")}
        except psycopg.errors.InsufficientPrivilege:
            seen = set()
        assert world.us_job not in seen
        assert conn.execute("SELECT id FROM procrastinate_jobs").fetchall() == [(world.eu_job,)]
    attempt(world, "INSERT INTO procrastinate_events (job_id, type) VALUES (%s, 'cancelled')", (world.us_job,))
    attempt(
        world, """UPDATE procrastinate_jobs SET args = args || '{"requests": 10000}' WHERE id = %s""", (world.eu_job,)
    )
    attempt(world, "DELETE FROM procrastinate_jobs WHERE id = %s", (world.eu_job,))
    attempt(world, "SELECT procrastinate_defer_jobs_v1(ARRAY[ROW('tokenpace-us-east', 'tokenpace.measure', 0,"
                   " NULL, NULL, '{}', NULL)::procrastinate_job_to_defer_v1])")  # fmt: skip
    events = owner_sees(world, "SELECT type::text FROM procrastinate_events WHERE job_id = %s", (world.us_job,))
    assert events == [("deferred",)]
    jobs = owner_sees(world, "SELECT id, args->>'requests' FROM procrastinate_jobs ORDER BY id")
    assert jobs == [(world.eu_job, "2"), (world.us_job, "2")]


def test_its_older_row_of_its_region_becomes_its_own_and_no_other(world: World) -> None:
    """Rows written before roles were recorded (role NULL): its own region's it takes over on its next beat."""
    at = NOW - timedelta(minutes=1)
    with open_store(world.owner) as store:
        agents.beat(store, agents.AgentRow("us-0", "us-east", "far-host", "0", at, at, 10.0))
        agents.beat(store, agents.AgentRow("eu-1", "eu-west", "old-host", "0", at, at, 10.0))
    owner_sees(world, "UPDATE agents SET role = NULL WHERE name IN ('us-0', 'eu-1') RETURNING name")
    with open_store(world.agent) as store:
        agents.beat(store, agents.AgentRow("eu-1", "eu-west", "new-host", "1", NOW, NOW, 10.0))
    attempt(world, "UPDATE agents SET heartbeat_at = 0 WHERE name = 'us-0'")
    found = owner_sees(world, "SELECT name, host, role, heartbeat_at FROM agents WHERE name <> 'us-1' ORDER BY name")
    assert found == [("eu-1", "new-host", world.role, NOW.timestamp()), ("us-0", "far-host", None, at.timestamp())]


def test_an_older_agents_rollup_rights_end_with_the_upgrade(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before migration 11 a role granted an agent's rights wrote the rollups itself; after it, the trigger
    counts, and that role (an agent not yet upgraded) is refused, instead of counting its samples twice."""
    monkeypatch.chdir(tmp_path)
    role = f"tp_old_{uuid.uuid4().hex[:12]}"
    base = pg_url.split("?")[0]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN'.encode())
    try:
        with monkeypatch.context() as patch:
            patch.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:10])
            with open_store(pg_url):  # the schema before migration 11 (today's samples no longer fit it)
                pass
        with psycopg.connect(pg_url, autocommit=True) as conn:  # what grant-agent granted before
            ((schema,),) = conn.execute("SELECT current_schema()").fetchall()
            conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"'.encode())
            conn.execute(
                f'GRANT SELECT, INSERT, UPDATE ON sample_hours, sample_quarters, sample_days TO "{role}"'.encode()
            )
        with open_store(pg_url) as store:  # the central serve, upgraded
            store.add_sample(make_sample("r", FAR, "1k", NOW, stream(100, 10)))
            store.add_sample(make_sample("r", FAR, "1k", NOW, stream(100, 10)))
        old = pg_url.replace("postgres@", f"{quote(role)}@", 1)
        for sql in (
            "UPDATE sample_hours SET samples = samples + 1",
            "INSERT INTO sample_days SELECT * FROM sample_days",
        ):
            with psycopg.connect(old, autocommit=True) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql.encode())
        with psycopg.connect(pg_url, autocommit=True) as conn:  # both samples, each counted once
            for table in ("sample_hours", "sample_quarters", "sample_days"):
                assert conn.execute(f"SELECT SUM(samples) FROM {table}").fetchall() == [(2,)]  # noqa: S608
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP OWNED BY "{role}"'.encode())
            conn.execute(f'DROP ROLE "{role}"'.encode())
