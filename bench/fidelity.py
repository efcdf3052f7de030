"""How far tokenpace's timings are from the truth, at concurrency 1, 32, 256 and 512.

A truth server runs in its own process on one core and records when it sent every event; tokenpace runs
here on the other core. --server lean (default) is bench/truth_server.py, a bare asyncio streaming server that
keeps up with 512 streams x 50 events/s; --server sim is the product's simulator (``tokenpace sim``, aiohttp),
which at ~57 µs an event tops out near 15k events/s on one core. Server and client read CLOCK_MONOTONIC
(perf_counter_ns), so times compare directly. Per level:

- TTFT error: measured TTFT - true TTFT, where true TTFT = simulator's first-token send time - the time
  the client wrote the request to its socket (tokenpace's "request sent"). It is the error of the client's
  two timestamps; client-side queueing before the write is reported apart ("queued"), never in TTFT.
- TTFT error incl. wait: the same error measured from the moment the caller asked for the request (error +
  queued), as every other client measures it: the figure the goals are set on.
- transit: simulator's handler start - client write. Loopback is ~0.1 ms; more means the simulator itself was
  queueing requests (its single core parsing a burst), which delays the stream but is no client error.
- event-arrival error: client arrival timestamp - simulator send time, over every event; ITL error: the
  error of each inter-token latency (client gap - simulator gap), what output-speed and ITL figures depend on.
- client CPU per event, the client's event-loop lag (p99) and whether the run was flagged client-bound;
- achieved vs requested load: streams held (mean streams in flight / requested concurrency), and events/s;
- the server's CPU over the level (% of its one core, and µs per token event): near 100 % it cannot keep
  its schedule, and the events/s achieved falls short of the requested.

- with --raw N, then N requests one at a time from a bare asyncio client: the first-token error this machine
  and simulator allow (both get preempted under other load), so what exceeds it is the client's own.

    uv run python bench/fidelity.py [--levels 1,32,256,512] [--server lean|sim] [--tokens-per-s 50]
        [--output-tokens 100] [--raw 40] [--stagger-ms 0.5] [--hold-decode-ms 500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tokenpace.clients.transport import Timeouts
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.workloads import Workload
from tokenpace.load import decodegate, release
from tokenpace.load.engine import RunOptions, RunResult, run_workload
from tokenpace.load.interpreter import event_loop_factory
from tokenpace.measure.metrics import percentile
from tokenpace.sim import Truth

MS = 1_000_000
LATE_MS = 2.0  # a first token stamped this late is counted: the one-stream hiccups were 3-4 ms


def start_simulator(args: argparse.Namespace, port: int) -> subprocess.Popen[bytes]:
    """The truth server on the last core: bench/truth_server.py (lean) or ``tokenpace sim`` (sim)."""
    timing = ["--port", str(port), "--ttft-ms", str(args.ttft_ms), "--tokens-per-s", str(args.tokens_per_s),
              "--output-tokens", str(args.output_tokens)]  # fmt: skip
    if args.server == "lean":
        if args.tokens_per_chunk != 1:
            raise SystemExit("--server lean sends one token per event: use --server sim for --tokens-per-chunk")
        cmd = [sys.executable, str(Path(__file__).with_name("truth_server.py")), *timing]
    else:
        cmd = [sys.executable, "-m", "tokenpace", "sim", *timing, "--tokens-per-chunk", str(args.tokens_per_chunk)]
    cores = sorted(os.sched_getaffinity(0))

    def pin() -> None:
        if len(cores) > 1:
            os.sched_setaffinity(0, {cores[-1]})

    proc = subprocess.Popen(cmd, preexec_fn=pin, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the truth server did not start")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its live children (Linux /proc; 0.0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") + sum(cpu_s(int(c)) for c in children)


def truth_of(port: int, response_id: str) -> Truth:
    url = f"http://127.0.0.1:{port}/sim/truth/{response_id}"
    with urllib.request.urlopen(url, timeout=5) as resp:
        return Truth.from_dict(json.load(resp))


def fmt(v: float | None, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def report(level: int, result: RunResult, port: int, tokens_per_s: float, sim_cpu_s: float) -> dict[str, object]:
    ttft_err, with_wait, arrival_err, gap_err, transit, queued = [], [], [], [], [], []
    busy_ns = 0
    events = 0
    for s in result.samples:
        if not s.ok or s.timeline.response_id is None:
            continue
        truth = truth_of(port, s.timeline.response_id)
        sent = [t for t, _, _ in truth.events]
        seen = sorted(e.t_ns for e in s.timeline.events)
        # One decoded event per simulator event here (one token per chunk, finish, usage, [DONE]).
        arrival_err += [(a - b) / MS for a, b in zip(seen, sent, strict=False)]
        gap_err += [(a1 - a0 - (b1 - b0)) / MS for a0, a1, b0, b1 in zip(seen, seen[1:], sent, sent[1:], strict=False)]
        first_sent = next(t for t, kind, _ in truth.events if kind in ("content", "reasoning"))
        assert s.metrics.ttft_ms is not None
        ttft_err.append(s.metrics.ttft_ms - (first_sent - s.timeline.t_sent_ns) / MS)
        transit.append((truth.t_received_ns - s.timeline.t_sent_ns) / MS)
        queued.append(s.timeline.queued_ns / MS)
        with_wait.append(ttft_err[-1] + queued[-1])
        busy_ns += s.timeline.t_end_ns - s.timeline.t_sent_ns
        events += len(s.timeline.token_events)
    ok = [s for s in result.samples if s.ok]
    wall_ns = max(s.timeline.t_end_ns for s in ok) - min(s.timeline.t_sent_ns for s in ok)
    run = result.run
    return {
        "concurrency": level,
        "samples": len(result.samples),
        "ok": len(ok),
        "ttft_err_p50_ms": percentile(ttft_err, 50),
        "ttft_err_p99_ms": percentile(ttft_err, 99),
        "ttft_err_max_ms": max(ttft_err),
        "ttft_late": sum(e > LATE_MS for e in ttft_err),
        "with_wait_p50_ms": percentile(with_wait, 50),
        "with_wait_p99_ms": percentile(with_wait, 99),
        "with_wait_max_ms": max(with_wait),
        "transit_p50_ms": percentile(transit, 50),
        "transit_p99_ms": percentile(transit, 99),
        "queued_p50_ms": percentile(queued, 50),
        "queued_p99_ms": percentile(queued, 99),
        "arrival_err_p50_ms": percentile(arrival_err, 50),
        "arrival_err_p99_ms": percentile(arrival_err, 99),
        "gap_err_p99_ms": percentile([abs(g) for g in gap_err], 99),
        "cpu_us_per_event": run.cpu_us_per_event,
        "loop_lag_p99_ms": run.loop_lag_p99_ms,
        "client_bound": run.client_bound,
        "held_concurrency": busy_ns / wall_ns / level,
        "events_per_s": events / (wall_ns / 1e9),
        "requested_events_per_s": level * tokens_per_s,
        "server_cpu_pct": 100 * sim_cpu_s / (wall_ns / 1e9),
        "server_cpu_us_per_event": sim_cpu_s * 1e6 / events if events else None,
    }


async def raw_reference(port: int, n: int, input_tokens: int, output_tokens: int) -> list[float]:
    """First-token arrival error (ms) of ``n`` requests, one at a time, from a bare asyncio client on one
    connection: the floor this machine and simulator allow, to tell the client's lateness from theirs."""
    from tokenpace.prompts.prompt import build_prompt

    workload = Workload("fidelity-raw", output_tokens, input_tokens=input_tokens)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    errors = []
    try:
        for i in range(n):
            messages = [{"role": m.role, "content": m.text} for m in build_prompt(workload, i).messages]
            body = json.dumps({"model": "sim", "stream": True, "messages": messages}).encode()
            head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
            first = None
            headers = await reader.readuntil(b"\r\n\r\n")
            while b"[DONE]" not in (event := await reader.readuntil(b"\n\n")):
                if first is None and b'"content":"' in event and b'"content":""' not in event:
                    first = time.perf_counter_ns()
            await reader.readuntil(b"0\r\n\r\n")  # the chunked body's end: the connection is free again
            rid = next(h.split(b": ")[1] for h in headers.split(b"\r\n") if h.lower().startswith(b"x-request-id"))
            truth = truth_of(port, rid.decode())
            sent = next(t for t, kind, _ in truth.events if kind == "content")
            assert first is not None
            errors.append((first - sent) / MS)
    finally:
        writer.close()
    return errors


async def one_level(args: argparse.Namespace, url: str, level: int) -> RunResult:
    endpoint = Endpoint("sim", "sim", url, simulated=True)
    requests = args.requests_per_level or max(level, 20)
    plan = RunOptions(requests, level, Timeouts(10, 60, 30, 120), seed=1)
    workload = Workload("fidelity", args.output_tokens, input_tokens=args.input_tokens)
    return await run_workload([endpoint], workload, plan)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", default="1,32,256,512")
    parser.add_argument("--server", choices=("lean", "sim"), default="lean", help="the truth server (see above)")
    parser.add_argument("--ttft-ms", type=float, default=100)
    parser.add_argument("--tokens-per-s", type=float, default=50)
    parser.add_argument("--tokens-per-chunk", type=int, default=1)
    parser.add_argument("--output-tokens", type=int, default=100)
    parser.add_argument("--input-tokens", type=int, default=1000, help="prompt size (o200k tokens)")
    parser.add_argument("--requests-per-level", type=int, default=0, help="default: max(level, 20)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--raw", type=int, default=0, help="then this many requests from a bare asyncio client")
    parser.add_argument("--stagger-ms", type=float, default=release.CLOSED_LOOP_STAGGER_S * 1000,
                        help="closed-loop streams start this far apart (0: all at once, as before)")  # fmt: skip
    parser.add_argument("--hold-decode-ms", type=float, default=decodegate.MAX_HOLD_S * 1000,
                        help="longest decoding waits for requests being written (0: never)")  # fmt: skip
    args = parser.parse_args()
    release.CLOSED_LOOP_STAGGER_S = args.stagger_ms / 1000  # A/B, one knob each, for every closed loop
    decodegate.MAX_HOLD_S = args.hold_decode_ms / 1000
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[0]})  # the client gets one core, the simulator another
    from tokenpace.prompts.tokens import preload

    preload()
    port = 18000 + os.getpid() % 1000
    sim = start_simulator(args, port)
    rows = []
    raw: list[float] = []
    try:
        for level in (int(x) for x in args.levels.split(",")):
            sim_cpu0 = cpu_s(sim.pid)
            with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
                result = runner.run(one_level(args, f"http://127.0.0.1:{port}/v1", level))
            rows.append(report(level, result, port, args.tokens_per_s, cpu_s(sim.pid) - sim_cpu0))
        if args.raw:
            raw = asyncio.run(raw_reference(port, args.raw, args.input_tokens, args.output_tokens))
    finally:
        sim.terminate()
        sim.wait()
    print(
        f"truth server {args.server}: TTFT {args.ttft_ms:g} ms, {args.tokens_per_s:g} events/s per stream, "
        f"{args.tokens_per_chunk} token(s) per event, {args.output_tokens} tokens; client on 1 core"
    )
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} (this machine, at the end)")
    head = ("conc", "ok", "TTFT err p50/p99/max ms", f"err > {LATE_MS:g} ms", "incl. wait p50/p99/max ms",
            "arrival err p50/p99 ms", "ITL err p99 ms", "transit p50/p99 ms", "queued p50/p99 ms", "CPU µs/event",
            "loop lag p99 ms", "streams held", "events/s (req)", "server CPU, µs/event")  # fmt: skip
    print(" | ".join(head))
    for r in rows:
        print(" | ".join((
            str(r["concurrency"]), f"{r['ok']}/{r['samples']}",
            f"{fmt(r['ttft_err_p50_ms'])}/{fmt(r['ttft_err_p99_ms'])}/{fmt(r['ttft_err_max_ms'])}",  # type: ignore[arg-type]
            f"{r['ttft_late']}",
            f"{fmt(r['with_wait_p50_ms'])}/{fmt(r['with_wait_p99_ms'])}/{fmt(r['with_wait_max_ms'])}",  # type: ignore[arg-type]
            f"{fmt(r['arrival_err_p50_ms'])}/{fmt(r['arrival_err_p99_ms'])}",  # type: ignore[arg-type]
            fmt(r["gap_err_p99_ms"]),  # type: ignore[arg-type]
            f"{fmt(r['transit_p50_ms'])}/{fmt(r['transit_p99_ms'])}",  # type: ignore[arg-type]
            f"{fmt(r['queued_p50_ms'])}/{fmt(r['queued_p99_ms'])}",  # type: ignore[arg-type]
            fmt(r["cpu_us_per_event"], 1), fmt(r["loop_lag_p99_ms"]),  # type: ignore[arg-type]
            f"{r['held_concurrency']:.1%}" + (" client-bound" if r["client_bound"] else ""),
            f"{r['events_per_s']:.0f} ({r['requested_events_per_s']:.0f})",
            f"{r['server_cpu_pct']:.0f}%, {fmt(r['server_cpu_us_per_event'], 1)}",  # type: ignore[arg-type]
        )))  # fmt: skip
    if raw:
        late = sum(e > LATE_MS for e in raw)
        print(
            f"bare asyncio client, 1 stream: first-token arrival error p50/p99/max "
            f"{fmt(percentile(raw, 50))}/{fmt(percentile(raw, 99))}/{fmt(max(raw))} ms, > {LATE_MS:g} ms: {late}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
