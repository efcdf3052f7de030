"""How far tokenpace's timings are from the truth, at concurrency 1, 32, 256 and 512, beside a bare reference client.

A truth server runs in its own process, pinned to the last core, and records when it sent every event; the clients
run here, pinned to the first. --server lean (default) is bench/truth_server.py, a bare asyncio streaming server
that keeps up with 512 streams x 50 events/s; --server sim is the product's simulator (``tokenpace sim``, aiohttp),
which at ~57 µs an event tops out near 15k events/s on one core. Server and clients read CLOCK_MONOTONIC
(perf_counter_ns), so times compare directly.

Each level runs two clients in turn against the same server in this one process, the same closed loop (same
streams, requests, prompts and stagger): first the reference (bench/reference_client.py: uvloop, asyncio's
Protocol API, a timestamp first thing per read, SSE events counted, nothing decoded; the floor this machine and
server allow a client, measured now, so that a slow or busy machine can neither hide a regression nor fake a gain),
then tokenpace (its engine, ``run_workload``). The reference is no client: it parses only this server's shape of
HTTP/1.1 and SSE, so its CPU per event is a lower bound no real client meets. Both are judged by the same code
(bench/fidelity_figures.py), from the server's record:

- TTFT error: measured TTFT - true TTFT, where true TTFT = the server's first-token write - the time the client
  wrote the request to its socket. Client-side queueing before the write is reported apart ("queued").
- TTFT error incl. wait: the same error counted from the moment the client's loop asked for the request (error +
  queued), as every other client measures it: the figure the goals are set on. tokenpace's "asked" is when its
  closed loop's worker released the request; the reference's is the read that ended the stream's last request
  (or, in the first round, when its staggered start was due), which counts more as its wait, never less.
- transit: server's request received - client write (loopback ~0.1 ms; more: the server itself was queueing).
- event-arrival error: client arrival - server send, every event; gap error: |client gap - server gap| between
  consecutive events, what output-speed and ITL figures depend on.
- CPU per event: this process's CPU (all threads; time.process_time) from the call that runs the client's level
  until it returns, prompt building and connection set-up included for both, / the server's events for the
  requests that ended well (the goals' figure); beside it, both less what the reference's requests took to build
  (1k-token prompts cost ~1 ms each, ~10 µs an event of 100 tokens; tokenpace builds the same prompts with the
  same code, so its share is about the same, though not measured apart); streams held: Σ (end - sent) / streams /
  each stream's span (the wall less the start stagger both clients use: fidelity_figures.load); events/s achieved
  vs requested; the server's CPU over the level (% of its core, µs per event).
- the reference's "warm" figures: its requests after the first round (connections already used, not the first
  burst); tokenpace's warm figures are shown beside, for the reader (its chains >= the level's streams).

Then each goal of issue 32 is marked met or missed, as an absolute and against the reference: incl. wait p99 <= 1 /
2 / 5 / 10 ms at 1 / 32 / 256 / 512 streams, and within 1 ms of the reference's warm p99 at every level above one;
gap error p99 within 1 ms of the reference's; CPU per event within 1.2x the reference's at 256 streams and <= 15 µs
at 256 and 512; >= 99 % of streams held at 512. --json PATH writes every figure and verdict, to compare runs.
(The old --raw, a bare client's requests one at a time, is the reference's 1-stream level now.)

    uv run python bench/fidelity.py [--levels 1,32,256,512] [--server lean|sim] [--tokens-per-s 50]
        [--output-tokens 100] [--stagger-ms 0.5] [--hold-decode-ms 500] [--json figures.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fidelity_figures as ff
import reference_client
from tokenpace.clients.transport import Timeouts
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.workloads import Workload
from tokenpace.load import decodegate, release
from tokenpace.load.engine import RunOptions, RunResult, run_workload
from tokenpace.load.figures import Done
from tokenpace.load.interpreter import run_loop
from tokenpace.sim import Truth


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

    return healthy(subprocess.Popen(cmd, preexec_fn=pin, stderr=subprocess.DEVNULL), port)


def healthy(proc: subprocess.Popen[bytes], port: int) -> subprocess.Popen[bytes]:
    """``proc`` once its /health answers on ``port`` (10 s at most; else it is killed and the bench stops)."""
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


def truths_of(port: int, measured: list[ff.Measured]) -> dict[str, Truth]:
    """Asked right after each client's level: the server keeps only its last 4,096 (lean: --truth-kept)."""
    return {m.request_id: truth_of(port, m.request_id) for m in measured}


async def tokenpace_level(
    args: argparse.Namespace, url: str, level: int, requests: int, on_done: Callable[[Done], None]
) -> RunResult:
    """tokenpace's level as its commands run one: each request handed to ``on_done`` as it ends, none kept."""
    endpoint = Endpoint("sim", "sim", url, simulated=True)
    plan = RunOptions(requests, level, Timeouts(10, 60, 30, 120), seed=1, keep_done=False)
    workload = Workload("fidelity", args.output_tokens, input_tokens=args.input_tokens)
    return await run_workload([endpoint], workload, plan, on_done=on_done)


def one_level(args: argparse.Namespace, port: int, sim: subprocess.Popen[bytes], level: int) -> dict[str, Any]:
    """The reference's level, then tokenpace's, each timed the same way; their figures and the goals' verdicts."""
    requests = args.requests_per_level or max(level, 20)
    workload = Workload("fidelity", args.output_tokens, input_tokens=args.input_tokens)  # tokenpace's prompts: seed 1
    stream_s = args.ttft_ms / 1000 + args.output_tokens / args.tokens_per_s
    timeout_s = 60 + 3 * math.ceil(requests / level) * stream_s + level * release.CLOSED_LOOP_STAGGER_S
    sim0, cpu0 = cpu_s(sim.pid), time.process_time()
    done = reference_client.run("127.0.0.1", port, workload, streams=level, requests=requests, seed=1,
                                stagger_s=release.CLOSED_LOOP_STAGGER_S, timeout_s=timeout_s)  # fmt: skip
    ref_cpu, ref_sim = time.process_time() - cpu0, cpu_s(sim.pid) - sim0
    ref, ref_sent = ff.from_reference(done.sent)
    built = done.build_cpu_s  # tokenpace builds the same prompts with the same code: its share is about the same
    ref_truths = truths_of(port, ref)

    sim0, cpu0 = cpu_s(sim.pid), time.process_time()
    measured: list[ff.Measured] = []  # only what fidelity reads of each request, as the reference keeps its own

    def on_done(d: Done) -> None:
        if (m := ff.from_tokenpace(d, level)) is not None:
            measured.append(m)

    result = run_loop(tokenpace_level(args, f"http://127.0.0.1:{port}/v1", level, requests, on_done))
    tp_cpu, tp_sim = time.process_time() - cpu0, cpu_s(sim.pid) - sim0
    tp, tp_sent = measured, result.run.completed
    tp_truths = truths_of(port, tp)

    rate, stagger = args.tokens_per_s, release.CLOSED_LOOP_STAGGER_S
    own = {"loop_lag_p99_ms": result.run.loop_lag_p99_ms, "client_bound": result.run.client_bound,
           "cpu_us_per_event_own": result.run.cpu_us_per_event}  # fmt: skip
    rows = {
        "tokenpace": {"sent": tp_sent} | ff.timing(tp, tp_truths) | ff.load(tp, tp_truths, level, tp_cpu, built,
                                                                            tp_sim, rate, stagger) | own,
        "tokenpace_warm": ff.timing([m for m in tp if m.warm], tp_truths),
        "reference": {"sent": ref_sent} | ff.timing(ref, ref_truths) | ff.load(ref, ref_truths, level, ref_cpu, built,
                                                                               ref_sim, rate, stagger),
        "reference_warm": ff.timing([m for m in ref if m.warm], ref_truths),
    }  # fmt: skip
    goals = ff.goals(level, rows["tokenpace"], rows["reference"], rows["reference_warm"])
    return {"concurrency": level, "requests": requests} | rows | {"goals": goals}


def fmt(v: Any, digits: int = 2) -> str:
    if v is None:
        return "-"
    return str(v) if isinstance(v, int) else f"{v:.{digits}f}"


def _versus(how: str, a: Any, b: Any) -> str:
    """tokenpace against the reference: a difference (ms, points) or a ratio."""
    if a is None or b is None or isinstance(a, bool):
        return "-"
    if how == "ratio":
        return f"x{a / b:.2f}" if b else "-"
    if how == "pct":
        return f"{100 * (a - b):+.1f} pts"
    return f"{a - b:+.{0 if isinstance(a, int) else 2}f}"


ROWS: tuple[tuple[str, tuple[str, ...], str], ...] = (  # label, keys, how tokenpace is set against the reference
    ("TTFT err p50/p99/max ms", ("ttft_err_p50_ms", "ttft_err_p99_ms", "ttft_err_max_ms"), "diff"),
    (f"first tokens > {ff.LATE_MS:g} ms late", ("ttft_late",), "diff"),
    ("incl. wait p50/p99/max ms", ("with_wait_p50_ms", "with_wait_p99_ms", "with_wait_max_ms"), "diff"),
    ("queued p50/p99 ms", ("queued_p50_ms", "queued_p99_ms"), "diff"),
    ("transit p50/p99 ms", ("transit_p50_ms", "transit_p99_ms"), "diff"),
    ("event-arrival err p50/p99 ms", ("arrival_err_p50_ms", "arrival_err_p99_ms"), "diff"),
    ("gap err p99 ms", ("gap_err_p99_ms",), "diff"),
    ("CPU µs/event", ("cpu_us_per_event",), "ratio"),
    ("  less the requests' building", ("cpu_us_per_event_less_building",), "ratio"),
    ("streams held", ("held_concurrency",), "pct"),
    ("events/s achieved", ("events_per_s",), "ratio"),
    ("server CPU % / µs per event", ("server_cpu_pct", "server_cpu_us_per_event"), "diff"),
)
COLUMNS = ("tokenpace", "tokenpace_warm", "reference", "reference_warm")


def print_level(r: dict[str, Any]) -> None:
    tp, ref = r["tokenpace"], r["reference"]
    print(f"\n{r['concurrency']} streams, {r['requests']} requests each: ok tokenpace {tp['requests']}/{tp['sent']} "
          f"(warm {r['tokenpace_warm']['requests']}), reference {ref['requests']}/{ref['sent']} (warm "
          f"{r['reference_warm']['requests']}); tokenpace's loop lag p99 {fmt(tp['loop_lag_p99_ms'])} ms"
          f"{', client-bound' if tp['client_bound'] else ''}, its own CPU figure {fmt(tp['cpu_us_per_event_own'], 1)} "
          f"µs/event; {fmt(tp.get('requested_events_per_s'), 0)} events/s requested")  # fmt: skip
    print(f"  {'figure':<30}" + "".join(f"{c.replace('_', ' '):>20}" for c in COLUMNS) + f"{'tokenpace vs ref':>24}")
    for label, keys, how in ROWS:
        digits = 1 if how == "ratio" else 2

        def cell(row: dict[str, Any], keys: tuple[str, ...] = keys, digits: int = digits, how: str = how) -> str:
            if not all(k in row for k in keys):
                return "-"
            pct = how == "pct"
            return "/".join(f"{row[k]:.1%}" if pct and row[k] is not None else fmt(row[k], digits) for k in keys)

        versus = "/".join(_versus(how, tp.get(k), ref.get(k)) for k in keys[: 1 if how == "ratio" else None])
        print(f"  {label:<30}" + "".join(f"{cell(r[c]):>20}" for c in COLUMNS) + f"{versus:>24}")
    for g in r["goals"]:
        verdict = {True: "met", False: "MISSED", None: "not measured"}[g["met"]]
        print(f"  goal {g['goal']}: {fmt(g['value'], 3)} (tokenpace {fmt(g['tokenpace'], 3)}, "
              f"{g['against'].replace('_', ' ')} {fmt(g['reference'], 3)}): {verdict}")  # fmt: skip


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
    parser.add_argument("--json", type=Path, help="also write the figures and verdicts here")
    parser.add_argument("--stagger-ms", type=float, default=release.CLOSED_LOOP_STAGGER_S * 1000,
                        help="closed-loop streams start this far apart (0: all at once), both clients")  # fmt: skip
    parser.add_argument("--hold-decode-ms", type=float, default=decodegate.MAX_HOLD_S * 1000,
                        help="tokenpace's longest decoding waits for requests being written (0: never)")  # fmt: skip
    args = parser.parse_args()
    release.CLOSED_LOOP_STAGGER_S = args.stagger_ms / 1000  # A/B, one knob each, for every closed loop
    decodegate.MAX_HOLD_S = args.hold_decode_ms / 1000
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[0]})  # the clients get one core, the server another
    from tokenpace.prompts.prompt import build_turns
    from tokenpace.prompts.tokens import preload

    preload()
    build_turns(Workload("fidelity", args.output_tokens, input_tokens=args.input_tokens), 0)  # the corpus, once
    port = 18000 + os.getpid() % 1000
    sim = start_simulator(args, port)
    try:
        levels = [one_level(args, port, sim, int(x)) for x in args.levels.split(",")]
    finally:
        sim.terminate()
        sim.wait()
    load_average = os.getloadavg()
    print(
        f"truth server {args.server}: TTFT {args.ttft_ms:g} ms, {args.tokens_per_s:g} events/s per stream, "
        f"{args.tokens_per_chunk} token(s) per event, {args.output_tokens} tokens; clients on 1 core, reference first"
    )
    print(f"load average {' '.join(f'{x:.2f}' for x in load_average)} (this machine, at the end)")
    for r in levels:
        print_level(r)
    verdicts = [g["met"] for r in levels for g in r["goals"]]
    print(f"\ngoals: {verdicts.count(True)} met, {verdicts.count(False)} missed, {verdicts.count(None)} not measured")
    if args.json:
        settings = {k: v for k, v in vars(args).items() if k != "json"}
        doc = {"settings": settings, "load_average": load_average, "levels": levels}
        args.json.write_text(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
