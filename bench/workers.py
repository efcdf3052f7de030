"""How many events a second `tokenpace bench` times per core, in one process and shared by worker processes.

A truth server (bench/truth_server.py, or ``tokenpace sim`` with --server sim) runs pinned to the last core; each
`tokenpace bench -c STREAMS --workers N` runs pinned to the first (its workers inherit the pin: on a 2-core
machine a second worker shares the first's core, so this measures what the sharing costs, not what a second core
gives). Per run it prints the events the client read per second of its measured window (the streams' events
over first send to last end), the events asked (streams x tokens/s), the client's CPU per event over the run
(every worker's and the parent's) and each worker's own, and the parent's share: what its merging costs per event.

    uv run python bench/workers.py [--streams 256] [--workers 1,2] [--tokens-per-s 200] [--output-tokens 100]
        [--requests 2048] [--server lean|sim]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from fidelity import cpu_s, healthy
from tokenpace.store.database import open_store


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(args: argparse.Namespace, port: int, core: int) -> subprocess.Popen[bytes]:
    timing = ["--port", str(port), "--ttft-ms", "100", "--tokens-per-s", str(args.tokens_per_s),
              "--output-tokens", str(args.output_tokens)]  # fmt: skip
    if args.server == "lean":
        cmd = [sys.executable, str(Path(__file__).with_name("truth_server.py")), *timing]
    else:
        cmd = [sys.executable, "-m", "tokenpace", "sim", *timing]
    proc = subprocess.Popen(cmd, preexec_fn=lambda: os.sched_setaffinity(0, {core}), stderr=subprocess.DEVNULL)
    return healthy(proc, port)


def one_run(args: argparse.Namespace, port: int, server: int, workers: int, core: int, tmp: Path) -> dict[str, Any]:
    out, db = tmp / f"out-{workers}", tmp / f"w{workers}.db"
    data = f"synthetic:input=100,output={args.output_tokens}"
    cmd = [sys.executable, "-m", "tokenpace", "bench", "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m",
           "-c", str(args.streams), "-n", str(args.requests), "--warmup", "0", "--workers", str(workers),
           "--data", data, "--db", str(db), "--out", str(out), "-q"]  # fmt: skip
    server0 = cpu_s(server)
    done = subprocess.run(cmd, preexec_fn=lambda: os.sched_setaffinity(0, {core}), capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"--workers {workers}: bench exited {done.returncode}:\n{done.stderr}")
    server_s = cpu_s(server) - server0
    (point,) = json.loads(next(out.glob("*.json")).read_text())["points"]
    with open_store(str(db)) as store:
        events = sum(len(s.timeline.events) for s in store.samples())
    window = point["figures"]["duration_s"]
    parts = point.get("workers") or []
    worker_cpu = sum((w["cpu_us_per_event"] or 0) * w["events"] for w in parts) / events if parts else None
    return {
        "workers": workers,
        "events": events,
        "window_s": window,
        "events_per_s": events / window,
        "asked_per_s": args.streams * args.tokens_per_s,
        "cpu_us_per_event": point["cpu_us_per_event"],
        "each_worker": [(w["worker"], w["cpu_us_per_event"], w["loop_lag_p99_ms"], w["client_bound"]) for w in parts],
        "parent_us_per_event": None if worker_cpu is None else point["cpu_us_per_event"] - worker_cpu,
        "loop_lag_p99_ms": point["loop_lag_p99_ms"],
        "client_bound": point["client_bound"],
        "ttft_p50_ms": point["figures"]["ttft"]["p50"],
        "server_core_share": server_s / window,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=256)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--tokens-per-s", type=float, default=200.0)
    parser.add_argument("--output-tokens", type=int, default=100)
    parser.add_argument("--requests", type=int, default=2048)
    parser.add_argument("--server", choices=("lean", "sim"), default="lean")
    parser.add_argument("--json", type=Path, help="write every figure here too")
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    port = free_port()
    server = start_server(args, port, cores[-1])
    runs = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for n in (int(w) for w in args.workers.split(",")):
                runs.append(one_run(args, port, server.pid, n, cores[0], Path(tmp)))
                r = runs[-1]
                each = "; ".join(f"#{i} {cpu:.1f} µs, lag p99 {lag:.1f} ms{' bound' if b else ''}"
                                 for i, cpu, lag, b in r["each_worker"])  # fmt: skip
                parent = "" if r["parent_us_per_event"] is None else f", parent {r['parent_us_per_event']:.1f} µs"
                print(f"--workers {n}: {r['events_per_s']:,.0f} events/s of {r['asked_per_s']:,.0f} asked "
                      f"({r['events']:,} in {r['window_s']:.1f} s), {r['cpu_us_per_event']:.1f} µs CPU per event"
                      f"{parent}{' (' + each + ')' if each else ''}; loop lag p99 {r['loop_lag_p99_ms']:.1f} ms"
                      f"{', client-bound' if r['client_bound'] else ''}; TTFT p50 {r['ttft_p50_ms']:.0f} ms; "
                      f"server {r['server_core_share']:.0%} of its core", flush=True)  # fmt: skip
    finally:
        server.kill()
    if args.json is not None:
        args.json.write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
