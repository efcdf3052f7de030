"""Regions at scale: ``--endpoints`` endpoints x ``--regions`` regions, ``--agents`` agent processes, one machine.

The central scheduler is what ``tokenpace serve`` runs with ``[regions]`` (the sampler queueing orders through
the dispatcher), on this process's loop; the agents are ``tokenpace agent`` processes (the first region gets
the spare ones); every endpoint is a model of one ``tokenpace sim`` process (TTFT 5 ms, 20 tokens at 2,000
tok/s), spread over providers of ``--per-provider`` models each. It runs in a fresh schema of ``--pg`` for
``--seconds`` and prints:

- schedule lag: due -> the agent starting the job, as the sampler's own lateness (due -> queued) plus the
  queue's (queued -> started, from procrastinate's events), p50/p99/max of each, after ``--warmup`` seconds
  (every job's first run is due within 10 s of the start: a burst the agents take a while to drain);
- dispatch overhead: the central process's CPU per job;
- jobs/s: finished by the agents, and what the central alone can queue (orders deferred back to back);
- database rows/s: samples, and all rows written (samples, runs, queue jobs and their events).

    uv run --group dev python bench/regions.py [--endpoints 1000] [--regions 3] [--agents 4] [--every 60] \\
        [--seconds 180] [--pg postgresql://postgres@127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.agentkit import AgentProcess, sim_process

from tokenpace.config.endpoints import read_config
from tokenpace.measure.metrics import percentile
from tokenpace.schedule import cadence
from tokenpace.schedule.dispatch import Dispatcher
from tokenpace.schedule.sampler import Sampler
from tokenpace.store.database import open_store
from tokenpace.store.queue import Queue, RunOrder

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"


def config(path: Path, base: str, endpoints: int, per_provider: int, regions: list[str], every: int) -> Path:
    text = ""
    for p in range(0, endpoints, per_provider):
        models = ", ".join(f'"m{i:04d}"' for i in range(p, min(p + per_provider, endpoints)))
        text += f'[providers.p{p // per_provider:03d}]\nbase_url = "{base}"\nmodels = [{models}]\n'
        text += f'every = "{every}s"\nconcurrency = 1000\n'
    text += '[schedule]\nworkloads = ["1k"]\njitter = 0.1\n' + "".join(f"[regions.{r}]\n" for r in regions)
    path.write_text(text)
    return path


def cpu_seconds(pid: int) -> float:
    """User + system CPU a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spread(values: list[float]) -> str:
    if not values:
        return "none"
    p50, p99 = percentile(values, 50) or 0, percentile(values, 99) or 0
    return f"p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, max {max(values) * 1000:.0f} ms (n={len(values)})"


async def defer_rate(url: str, orders: int) -> float:
    """Orders/s the central alone queues, ten at a time (distinct locks), into a scratch region."""
    queue = Queue(url)
    await queue.open()
    try:
        t0 = time.perf_counter()
        sem = asyncio.Semaphore(10)

        async def one(i: int) -> None:
            async with sem:
                await queue.defer(RunOrder(f"bench/m{i}", "1k", "scratch", 1, time.time() + 60))

        await asyncio.gather(*(one(i) for i in range(orders)))
        return orders / (time.perf_counter() - t0)
    finally:
        await queue.close()


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--endpoints", type=int, default=1000)
    ap.add_argument("--per-provider", type=int, default=10)
    ap.add_argument("--regions", type=int, default=3)
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--every", type=int, default=60, help="Seconds between runs of each (endpoint, region).")
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--warmup", type=float, default=None,
                    help="Seconds left out of the lag figures (default: --every: the first runs' burst).")  # fmt: skip
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    args = ap.parse_args()
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.pg, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}".encode())
    url = f"{args.pg}?options={quote(f'-c search_path={schema}')}"
    regions = [f"r{i}" for i in range(args.regions)]
    tmp = Path(tempfile.mkdtemp(prefix="tokenpace-regions-"))
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(SHARED / "tiktoken"))
    try:
        with sim_process("--ttft-ms", "5", "--tokens-per-s", "2000", "--output-tokens", "20") as base:
            path = config(tmp / "c.toml", base, args.endpoints, args.per_provider, regions, args.every)
            cfg = read_config(path)
            with open_store(url) as store:
                queue = Queue(url, pool_size=8)
                await queue.open()
                await queue.install()
                agents = [
                    AgentProcess(url, regions[i % len(regions)], path, f"agent-{i}", tmp / f"agent-{i}.log",
                                 heartbeat_s=10)
                    for i in range(args.agents)
                ]  # fmt: skip
                for a in agents:
                    a.wait_ready(120)
                dispatcher = Dispatcher(queue, poll_s=0.5)
                jobs = cadence.jobs(cfg, cfg.endpoints)
                sampler = Sampler(jobs, store, run_job=dispatcher, grace_s=5)
                cpu0, t0 = time.process_time(), time.perf_counter()
                task = asyncio.create_task(sampler.run())
                warmup = args.every if args.warmup is None else args.warmup
                await asyncio.sleep(warmup)
                first_steady = len(sampler.lateness)  # (it holds the last 10,000: enough for a bench's runs)
                steady_from = time.time()
                await asyncio.sleep(args.seconds - warmup)
                cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
                sampler.stop(grace_s=5)
                await task
                await dispatcher.close()
                await queue.close()
                agent_cpu = sum(cpu_seconds(a.proc.pid) for a in agents)
                for a in agents:
                    a.stop()
                lateness = list(sampler.lateness)[first_steady:]
                ((samples,),) = store.query("SELECT COUNT(*) FROM samples")
                ((runs,),) = store.query("SELECT COUNT(*) FROM runs")
        with psycopg.connect(url) as conn:
            waits = conn.execute(
                "SELECT EXTRACT(EPOCH FROM s.at - d.at), EXTRACT(EPOCH FROM d.at) FROM procrastinate_events d"
                " JOIN procrastinate_events s ON s.job_id = d.job_id AND s.type = 'started' WHERE d.type = 'deferred'"
                " AND d.at >= to_timestamp(%s)",
                (steady_from,),
            ).fetchall()
            ((queue_rows,),) = conn.execute(
                "SELECT (SELECT COUNT(*) FROM procrastinate_jobs) + (SELECT COUNT(*) FROM procrastinate_events)"
            ).fetchall()
        queue_lag = [float(w) for w, _ in waits]
        slow = sorted({int(float(at) - steady_from) for w, at in waits if float(w) > 0.5})
        print(f"jobs queued > 0.5 s before an agent took them, by second after the warm-up: {slow}")
        print(f"{args.endpoints} endpoints x {len(regions)} regions = {len(jobs)} jobs every {args.every} s "
              f"(+-10 %), {args.agents} agents, {wall:.0f} s; lags after the first {warmup:.0f} s")  # fmt: skip
        print(f"sampler lateness (due -> queued): {spread(lateness)}")
        print(f"queue lag (queued -> agent started): {spread(queue_lag)}")
        late = statistics.median(lateness) if lateness else 0.0
        p99 = (percentile(lateness, 99) or 0) + (percentile(queue_lag, 99) or 0)
        print(f"schedule lag due -> started: p99 <= {p99 * 1000:.0f} ms (the two p99s summed); "
              f"median lateness {late * 1000:.0f} ms")  # fmt: skip
        done = dispatcher.counts
        print(f"jobs: {dict(done)}; finished {done['finished'] / wall:.1f}/s")
        print(f"dispatch overhead: {cpu * 1000 / max(1, done['queued']):.2f} ms of central CPU per job "
              f"({cpu:.1f} s CPU over {wall:.0f} s: {100 * cpu / wall:.0f} % of a core)")  # fmt: skip
        print(f"agents: {agent_cpu:.0f} s CPU in all, {agent_cpu * 1000 / max(1, done['finished']):.1f} ms per job "
              f"({100 * agent_cpu / wall:.0f} % of a core; the machine has {os.cpu_count()})")  # fmt: skip
        rows = samples + runs + queue_rows
        print(f"database rows: {samples / wall:.1f} samples/s; {rows / wall:.1f} rows/s in all")
        print(f"central alone queues {await defer_rate(url, 2000):.0f} orders/s (2000 orders, 10 at a time)")
    finally:
        with psycopg.connect(args.pg, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE".encode())
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
