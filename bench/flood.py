"""Readers against the sampler: a flood of page requests while a truth endpoint is sampled in the same process.

The set-up of issue 9's finding (200 page requests/s against 150k samples served 22.6 req/s, p99 61 s, and a
truth endpoint read TTFT 379 ms against a true 150): a SQLite store with ``--samples`` synthetic samples
(bench/aggregate.py's bulk fill, rollups rebuilt; issue 10 asks for 1M), the board as serve builds it
(``service.board``: its worker process, its first pages rendered in advance, the service's limits) on one
event loop with a sampler that measures a simulator (its own process: TTFT 150 ms, 50 tok/s) every ``--every``
seconds, and a flood client in another process sending ``--rate`` requests/s for ``--seconds`` over eight
of the board's pages (``--reuse FILE`` keeps the filled store for the next run):

    uv run --group dev python bench/flood.py [--samples 1000000] [--rate 200] [--seconds 10] [--reuse FILE]

``--incidents`` floods /incidents, its twins, a status page and four badges instead of the board's pages.

It prints what the flood got (served req/s, latency percentiles over all of it, over what was sent after its
first second, when every page's first, cold render is done, and per second; each page's first answer; 503s,
errors), what the first and a warm ``/`` cost, and what the sampler measured meanwhile against the simulator's
truth.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

from aggregate import fill_sqlite
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.config.workloads import BUILTIN
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.measure.metrics import percentile
from tokenpace.serve import service
from tokenpace.store.database import Store, open_store

PAGES = ("/", "/leaderboard.json", "/?sort=ttft", "/?window=24h", "/leaderboard.csv", "/model/model03",
         "/endpoint/provider01/default/model01", "/metrics")  # fmt: skip
# --incidents: the incident pages and badges instead (their first answer derives every sample's incidents once)
INCIDENT_PAGES = ("/incidents", "/incidents.json", "/incidents.atom", "/status/provider01",
                  "/badge/endpoint/provider01/default/model01/speed.svg",
                  "/badge/endpoint/provider01/default/model01/uptime.svg", "/badge/model/model01/speed.svg",
                  "/badge/model/model01/uptime.svg")  # fmt: skip
TRUE_TTFT_MS, TRUE_SPEED = 150.0, 50.0


async def flood(url: str, rate: float, seconds: float, pages: list[str]) -> dict[str, Any]:
    """Open loop: a request every 1/rate s whatever the answers, each with a 60 s limit, ``pages`` in turn."""
    latencies: list[tuple[float, float]] = []  # (sent at, seconds after the flood began; latency, seconds)
    first: dict[str, float] = {}  # each page's first answer, in ms: a cold render (its SQL and template)
    statuses: Counter[str] = Counter()
    timeout = aiohttp.ClientTimeout(total=60)
    # auto_decompress off: the flood times serving, not a client's zlib in the process the service shares.
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, auto_decompress=False) as session:
        warm = []
        for _ in range(50):  # one reader: what a warm page costs
            t = time.perf_counter()
            async with session.get(url + "/") as r:
                await r.read()
            warm.append((time.perf_counter() - t) * 1000)

        async def one(path: str) -> None:
            t = time.perf_counter()
            try:
                async with session.get(url + path) as r:
                    await r.read()
                    statuses[str(r.status)] += 1
                    latencies.append((t - start, time.perf_counter() - t))
                    first.setdefault(path, (time.perf_counter() - t) * 1000)
            except TimeoutError:
                statuses["timeout"] += 1
            except aiohttp.ClientError as exc:
                statuses[type(exc).__name__] += 1

        start, tasks, i = time.perf_counter(), [], 0
        while (now := time.perf_counter() - start) < seconds:
            if i < now * rate:
                tasks.append(asyncio.create_task(one(pages[i % len(pages)])))
                i += 1
            else:
                await asyncio.sleep(1 / rate / 2)
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - start
    ms = sorted(x * 1000 for _, x in latencies)
    later = sorted(x * 1000 for at, x in latencies if at >= 1)  # once the first second's cold renders are done
    seconds_ms = [sorted(x * 1000 for at, x in latencies if int(at) == n) for n in range(int(seconds))]
    by_second = [None if (p99 := percentile(ms_n, 99)) is None else round(p99, 1) for ms_n in seconds_ms]
    return {
        "sent": i, "statuses": dict(statuses), "served_per_s": statuses["200"] / elapsed,
        "latency_p50_ms": percentile(ms, 50), "latency_p99_ms": percentile(ms, 99),
        "latency_p99_after_1s_ms": percentile(later, 99), "latency_max_after_1s_ms": later[-1] if later else None,
        "latency_p99_ms_by_second": by_second,
        "first_answer_ms": first, "cold_root_ms": warm[0], "warm_root_ms_p50": statistics.median(warm[1:]),
        "warm_root_ms": [round(w, 1) for w in warm],
    }  # fmt: skip


async def sample(endpoint: Endpoint, store: Store, every: float, stop: asyncio.Event) -> None:
    workload = BUILTIN["1k"]
    plan = RunOptions(requests=1, warm_connections=False, source="scheduled", command="bench flood")
    while not stop.is_set():
        await run_workload([endpoint], workload, plan, store)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)


async def main_async(args: argparse.Namespace, db: Path, port: int) -> None:
    store = open_store(str(db))
    sock = service.listen("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    stack = contextlib.AsyncExitStack()
    server = service._Server(service.server_config(await service.board(store, str(db), Config(), None, stack)))
    stop = asyncio.Event()
    endpoint = Endpoint("truth", "sim", f"http://127.0.0.1:{port}/v1", simulated=True)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    # As serve does before its sampler starts: the vocabulary and every document's tokens loaded, off the loop.
    await asyncio.gather(
        asyncio.to_thread(service.preload_for_runs, [BUILTIN["1k"]], None), asyncio.sleep(2)
    )  # and the simulator starts
    sampler = asyncio.create_task(sample(endpoint, store, args.every, stop))
    client = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--client", url, "--rate", str(args.rate), "--seconds", str(args.seconds),
        *(f"--page={page}" for page in args.page or ()), stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, _ = await client.communicate()
    stop.set()
    await sampler
    server.should_exit = True
    await serving
    await stack.aclose()
    store.flush()
    rows = store.query("SELECT ttft_ms, output_speed, client_bound FROM samples WHERE provider = 'truth' AND ok = 1")
    store.close()
    ttfts = sorted(r[0] for r in rows)
    speeds = sorted(r[1] for r in rows if r[1] is not None)
    truth = {
        "samples": len(rows), "client_bound": sum(r[2] != 0 for r in rows),  # samples with a figure flagged
        "ttft_ms_p50": percentile(ttfts, 50) if ttfts else None, "ttft_ms_max": ttfts[-1] if ttfts else None,
        "speed_p50": percentile(speeds, 50) if speeds else None, "speed_min": speeds[0] if speeds else None,
        "true_ttft_ms": TRUE_TTFT_MS, "true_speed": TRUE_SPEED,
    }  # fmt: skip
    print(json.dumps({"flood": json.loads(out), "truth": truth}, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--rate", type=float, default=200.0, help="page requests per second")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--every", type=float, default=0.5, help="seconds between truth samples")
    parser.add_argument("--reuse", type=Path, help="a filled store kept here and copied for each run (made if absent)")
    parser.add_argument("--page", action="append", help="a page to flood instead of the eight (repeatable)")
    parser.add_argument("--incidents", action="store_true", help="flood the incident pages and badges instead")
    parser.add_argument("--client", help=argparse.SUPPRESS)  # the flood itself, in its own process
    args = parser.parse_args()
    if args.incidents and not args.page:
        args.page = list(INCIDENT_PAGES)
    if args.client:
        print(json.dumps(asyncio.run(flood(args.client, args.rate, args.seconds, args.page or list(PAGES)))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "flood.db"
        started = time.perf_counter()
        if args.reuse is None or not args.reuse.exists():
            fill_sqlite(args.reuse or db, args.samples, datetime.now(UTC).timestamp())
            print(f"{args.samples:,} samples written in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        if args.reuse is not None:  # samples hours old still fill the 24 h and 72 h windows
            shutil.copyfile(args.reuse, db)
        probe = service.listen("127.0.0.1", 0)
        port = probe.getsockname()[1]
        probe.close()
        simulator = subprocess.Popen(
            [sys.executable, "-m", "tokenpace", "sim", "--port", str(port), "--ttft-ms", str(TRUE_TTFT_MS),
             "--tokens-per-s", str(TRUE_SPEED), "--output-tokens", "30"],
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            asyncio.run(main_async(args, db, port))
        finally:
            simulator.terminate()
            simulator.wait()


if __name__ == "__main__":
    main()
