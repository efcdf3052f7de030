"""The client-bound verdict against the truth: the real simulator in its own process, measured by the real
engine beside CPU burners, each figure of each sample compared with what the simulator says it sent (issue 29).

Used by tests/load/test_client_bound.py and bench/client_bound.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

from tokenpace import sim
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.workloads import BUILTIN
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.measure.metrics import NS_PER_MS
from tokenpace.measure.sample import Sample
from tokenpace.measure.verdict import Bound, stamps, tolerance_ms

SIMULATED = Endpoint(provider="sim", plan="default", model="sim", base_url="simulated://sim", simulated=True)


@dataclass(frozen=True, slots=True)
class Judged:
    """One figure of one sample: its span's error against the truth, its tolerance, and whether it was flagged."""

    figure: str  # "ttft", "speed" (the span between the first and last token) or "e2e"
    error_ms: float  # measured span - the nearest span the simulator's truth allows (0: within it)
    tolerance_ms: float
    flagged: bool


@contextlib.contextmanager
def burning(cores: int) -> Iterator[None]:
    """``cores`` processes spinning a core each (``while True: pass``) while the block runs, killed after."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores)]
    try:
        yield
    finally:
        for b in burners:
            b.kill()
            b.wait()


def judge_against_truth(root: str, s: Sample) -> list[Judged]:
    """Each measured figure of a successful sample against what the simulator at ``root`` recorded sending: each
    event left between the simulator's stamp before its write and the write's return, so a true span is known to
    lie between two bounds (a simulator preempted between stamp and write, on a busy machine, widens them)."""
    with urllib.request.urlopen(f"{root}/sim/truth/{s.timeline.response_id}", timeout=10) as answer:
        doc = json.load(answer)
    sent = [(t, done, kind, text) for (t, kind, text), done in zip(doc["events"], doc["written"], strict=True)]
    tokens = [(t, done) for t, done, kind, text in sent if kind in ("content", "reasoning") and text]
    at = stamps(s.timeline)
    assert at.first is not None and at.last is not None, "every simulated answer here has many tokens"
    (first, first_done), (last, last_done) = tokens[0], tokens[-1]
    end, end_done = max(t for t, _, _, _ in sent), max(done for _, done, _, _ in sent)
    spans = {
        "ttft": (at.first - at.sent, first - at.sent, first_done - at.sent, Bound.TTFT),
        "speed": (at.last - at.first, last - first_done, last_done - first, Bound.SPEED),
        "e2e": (at.end - at.sent, end - at.sent, end_done - at.sent, Bound.E2E),
    }
    return [
        Judged(name, (measured - min(max(measured, lo), hi)) / NS_PER_MS, tolerance_ms(measured / NS_PER_MS),
               bool(s.client_bound & flag))
        for name, (measured, lo, hi, flag) in spans.items()
    ]  # fmt: skip


async def judged_run(scenario: sim.Scenario, requests: int, concurrency: int, burners: int) -> list[list[Judged]]:
    """A run of the 1k workload against a simulator of ``scenario`` with ``burners`` cores burned; per sample,
    its figures judged against the truth."""
    async with contextlib.AsyncExitStack() as stack:
        (endpoint,) = await sim.started_for([SIMULATED], {"sim": scenario}, stack)
        with burning(burners):
            result = await run_workload(
                [endpoint], BUILTIN["1k"], RunOptions(requests=requests, concurrency=concurrency)
            )
        root = endpoint.base_url.removesuffix("/v1")
        return [await asyncio.to_thread(judge_against_truth, root, s) for s in result.samples]
