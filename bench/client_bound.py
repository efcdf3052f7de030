"""How many samples the client-bound verdict keeps on a busy machine, and how far each kept figure is from the truth.

Issue 29's target: with a CPU burner on one core (and whatever else the machine runs), >= 90 % of samples kept
and each kept figure within its tolerance (measure/verdict.py: max(1 %, 2 ms) of its span) of the simulator's
truth. The simulator runs in its own process (sim/process.py), tokenpace's engine here, both beside the
burners; every figure of every sample is compared with what the simulator says it sent (tests/truthkit.py).

    uv run --group dev python bench/client_bound.py [--requests 60] [--concurrency 3] [--burners 1]
        [--ttft-ms 150] [--tokens-per-s 240] [--output-tokens 1000]

Prints the load average before, the share of samples with every figure kept, the share kept per figure, and
the kept figures' errors as a share of their tolerance (p50, p99, max: at most 1 is the target), and how many
flagged figures the client's lag did move past their tolerance (the rest were flagged for what it could have done).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.truthkit, from a checkout

from tests.truthkit import Judged, judged_run

from tokenpace import sim
from tokenpace.measure.metrics import percentile


def report(judged: list[list[Judged]]) -> list[str]:
    whole = sum(not any(j.flagged for j in sample) for sample in judged)
    lines = [f"samples with every figure kept: {whole}/{len(judged)} ({whole / len(judged):.0%})"]
    for name in ("ttft", "speed", "e2e"):
        figures = [j for sample in judged for j in sample if j.figure == name]
        kept = [j for j in figures if not j.flagged]
        shares = [abs(j.error_ms) / j.tolerance_ms for j in kept]
        p50, p99 = percentile(shares, 50), percentile(shares, 99)
        spread = "n/a" if p50 is None or p99 is None else f"{p50:.2f} / {p99:.2f} / {max(shares):.2f}"
        moved = sum(abs(j.error_ms) > j.tolerance_ms for j in figures if j.flagged)
        lines.append(
            f"{name:>5}: kept {len(kept)}/{len(figures)}, kept error / tolerance p50 / p99 / max {spread};"
            f" of {len(figures) - len(kept)} flagged, {moved} were moved past their tolerance"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--concurrency", type=int, default=3)
    parser.add_argument("--burners", type=int, default=1)
    parser.add_argument("--ttft-ms", type=float, default=150.0)
    parser.add_argument("--tokens-per-s", type=float, default=240.0)
    parser.add_argument("--output-tokens", type=int, default=1000)
    a = parser.parse_args()
    scenario = sim.Scenario(ttft_ms=a.ttft_ms, tokens_per_s=a.tokens_per_s, output_tokens=a.output_tokens)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; burners: {a.burners}")
    judged = asyncio.run(judged_run(scenario, a.requests, a.concurrency, a.burners))
    print("\n".join(report(judged)))


if __name__ == "__main__":
    main()
