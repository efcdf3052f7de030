"""The README's picture of a load test report: docs/bench-report.png, from a 4-level concurrency sweep.

The sweep is synthetic: a modelled server with 12 decode slots, its TTFT growing once requests queue for a slot
and its per-token time growing with the batch, each request drawn at random (seeded), its figures computed
as measure/loadstats.py defines them (percentiles by measure/metrics.py). It shows what the report looks
like; it measures nothing. The report is rendered by web/report.py, opened from disk in Debian's Chromium with
the network off, and its top (header, table, sweep charts, the first level) saved as a PNG:

    uv run --group dev python bench/report_screenshot.py [--out docs/bench-report.png] [--height 1500]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from tokenpace.config.load import Load
from tokenpace.measure.loadstats import Figures, Latency
from tokenpace.measure.metrics import percentile_sorted
from tokenpace.measure.results import BenchResult, Point, Row
from tokenpace.version import __version__
from tokenpace.web.report import render_report

SLOTS = 12  # the modelled server decodes this many requests at once; more wait for a slot
TTFT_MS = 180.0  # prefill with the server idle
TPOT_MS = 9.0  # per output token with one request decoding; grows with the batch
OUTPUT_TOKENS = 256
REQUESTS = 400
LEVELS = (1, 4, 8, 16)
CHROMIUM = "/usr/bin/chromium"


def latency(values: list[float]) -> Latency:
    """n, mean, p50/p90/p95/p99 (linear interpolation) and max of the values."""
    ordered = sorted(values)
    p = {q: percentile_sorted(ordered, q) for q in (50, 90, 95, 99)}
    return Latency(len(ordered), statistics.fmean(ordered), p[50], p[90], p[95], p[99], ordered[-1])


def level(concurrency: int, rng: random.Random) -> Point:
    """One closed-loop level of the modelled server: TTFT = prefill + the wait for a slot, TPOT by batch size."""
    batch = min(concurrency, SLOTS)
    tpot_mean = TPOT_MS * (1 + 0.12 * (batch - 1))
    service_ms = TTFT_MS + tpot_mean * (OUTPUT_TOKENS - 1)
    queue_ms = max(0.0, concurrency / SLOTS - 1) * service_ms
    ttfts, tpots, e2es, gaps, rows = [], [], [], [], []
    clock = 0.0
    for _ in range(REQUESTS):
        failed = rng.random() < 0.004
        ttft = TTFT_MS * rng.lognormvariate(0, 0.25) + queue_ms * rng.uniform(0.6, 1.4)
        own = [tpot_mean * rng.lognormvariate(0, 0.3) for _ in range(OUTPUT_TOKENS - 1)]  # its chunks' gaps
        e2e = ttft + sum(own)
        clock += e2e / 1000 / concurrency  # closed loop: a request ends about every E2E / concurrency
        rows.append(Row(round(clock, 3), None if failed else ttft, e2e, 0 if failed else OUTPUT_TOKENS, not failed))
        if not failed:
            ttfts.append(ttft)
            tpots.append((e2e - ttft) / (OUTPUT_TOKENS - 1))
            e2es.append(e2e)
            gaps.extend(own)
    window = clock + e2es[-1] / 1000
    ok = len(e2es)
    figures = Figures(
        requests=REQUESTS,
        ok=ok,
        errors={"http 503": REQUESTS - ok} if ok < REQUESTS else {},
        duration_s=window,
        request_rate=ok / window,
        output_tokens_per_s=ok * OUTPUT_TOKENS / window,
        input_tokens_per_s=ok * 1000 / window,
        concurrency_held=sum(e2es) / 1000 / window,
        ttft=latency(ttfts),
        tpot=latency(tpots),
        itl=latency(gaps),
        e2e=latency(e2es),
        wait=latency([rng.uniform(0.05, 0.4) for _ in range(ok)]),
        output_speed=latency([1000 / t for t in tpots]),
    )
    return Point(Load(concurrency=concurrency, requests=REQUESTS), figures, f"example-c{concurrency}", rows=tuple(rows))


def example() -> BenchResult:
    rng = random.Random(12)
    return BenchResult(
        endpoint="example/llama-3.1-8b (modelled)",
        model="llama-3.1-8b",
        protocol="openai",
        dataset="fresh:1k",
        started_at="2026-12-03T17:00:00+00:00",
        tool_version=__version__,
        command="tokenpace bench example/llama-3.1-8b --sweep concurrency=1,4,8,16 -n 400",
        sweep="concurrency",
        points=tuple(level(c, rng) for c in LEVELS),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("docs/bench-report.png"))
    parser.add_argument("--height", type=int, default=1500, help="pixels of the page's top to keep")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        page_file = Path(folder) / "report.html"
        page_file.write_text(render_report(example()), encoding="utf-8")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            try:
                page = browser.new_context(viewport={"width": 1200, "height": 900}, offline=True).new_page()
                page.goto(page_file.as_uri())
                height = min(args.height, int(page.evaluate("document.body.scrollHeight")))
                clip = {"x": 0, "y": 0, "width": 1200, "height": height}
                page.screenshot(path=str(args.out), clip=clip, full_page=True)  # type: ignore[arg-type]
            finally:
                browser.close()
    print(f"{args.out}: {args.out.stat().st_size / 1000:.0f} kB")


if __name__ == "__main__":
    main()
