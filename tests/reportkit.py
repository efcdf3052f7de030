"""Load test results built by hand for the report's tests: every figure a distinct, known number."""

from __future__ import annotations

import random

from tokenpace.config.traffic import Load, Slo
from tokenpace.load.figures import Figures, TagFigures
from tokenpace.load.results import BenchPoint, BenchResult, Row
from tokenpace.measure.stats import Figure

EVIL = "<script>alert(1)</script>"


def latency(base: float, n: int = 100) -> Figure:
    """Distinct figures around ``base``: mean 1.1x, p50 1x, p90 1.5x, p95 1.8x, p99 2.5x, max 4x."""
    return Figure(n=n, mean=base * 1.1, p50=base, p90=base * 1.5, p95=base * 1.8, p99=base * 2.5, max=base * 4)


def rows(count: int, ttft_ms: float, seed: int, fail_every: int = 0, tags: tuple[str, ...] = ("",)) -> tuple[Row, ...]:
    """``count`` requests 0.05 s apart around ``ttft_ms``; every ``fail_every``-th failed with no first token."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        failed = fail_every > 0 and i % fail_every == fail_every - 1
        ttft = None if failed else ttft_ms * (0.8 + 0.4 * rng.random())
        out.append(Row(i * 0.05, ttft, ttft_ms * 5, 0 if failed else 120, not failed, tags[i % len(tags)]))
    return tuple(out)


def figures(scale: float, requests: int = 200, by_tag: tuple[TagFigures, ...] = (), slo: bool = False) -> Figures:
    """Figures that grow with ``scale`` (1, 2, 3...), each field a different number."""
    return Figures(
        requests=requests,
        ok=requests - 3,
        errors={"http 500": 2, "timeout": 1},
        duration_s=40.0 + scale,
        request_rate=4.75 * scale,
        output_tokens_per_s=512.25 * scale,
        input_tokens_per_s=1000.5 * scale,
        concurrency_held=0.97 * scale,
        ttft=latency(111.0 * scale),
        tpot=latency(12.25 + scale),
        itl=latency(11.5 + scale),
        e2e=latency(1333.0 * scale),
        wait=latency(0.3),
        output_speed=latency(80.0),
        goodput=4.25 * scale if slo else None,
        slo_attainment=0.9 - 0.1 * scale if slo else None,
        by_tag=by_tag,
    )


def result(
    points: tuple[BenchPoint, ...], sweep: str | None = None, slo: Slo | None = None, **more: object
) -> BenchResult:
    base: dict[str, object] = {
        "endpoint": "groq/llama-3.1-8b-instant",
        "model": "llama-3.1-8b-instant",
        "protocol": "openai",
        "dataset": "fresh:1k",
        "started_at": "2026-12-03T17:00:00+00:00",
        "tool_version": "0.12.0",
        "command": "tokenpace bench groq/llama-3.1-8b-instant -c 4 -n 200",
        "slo": slo,
        "sweep": sweep,
        **more,
    }
    return BenchResult(points=points, **base)  # type: ignore[arg-type]


def one_point() -> BenchResult:
    """One closed-loop level of 4, with 200 rows, every 20th failed."""
    return result(
        (BenchPoint(Load(concurrency=4, requests=200), figures(1.0), "run-one", rows=rows(200, 111.0, 1, 20)),)
    )


def concurrency_sweep(row_count: int = 200) -> BenchResult:
    """Concurrency 1, 4, 16, 64; the last client-bound."""
    points = tuple(
        BenchPoint(
            Load(concurrency=c, requests=200),
            figures(i + 1.0),
            f"run-c{c}",
            client_bound=c == 64,
            cpu_us_per_event=20.5 + i,
            loop_lag_p99_ms=2.5 * (i + 1),
            rows=rows(row_count, 111.0 * (i + 1), i, 50),
        )
        for i, c in enumerate((1, 4, 16, 64))
    )
    command = "tokenpace bench groq/llama-3.1-8b-instant --sweep concurrency=1,4,16,64"
    return result(points, "concurrency", command=command)


def tags(scale: float) -> tuple[TagFigures, ...]:
    return (
        TagFigures("prefix-hit", 120, 119, latency(80.0 * scale), latency(12.0), latency(900.0 * scale)),
        TagFigures("prefix-miss", 80, 78, latency(160.0 * scale), latency(13.0), latency(1200.0 * scale)),
    )


def rate_sweep() -> BenchResult:
    """Rates 1, 2 and 4 per second under an SLO, each level's requests tagged prefix-hit or prefix-miss."""
    slo = Slo(ttft_ms=500.0, tpot_ms=50.0)
    points = tuple(
        BenchPoint(
            Load(concurrency=None, rate=r, requests=200),
            figures(i + 1.0, by_tag=tags(i + 1.0), slo=True),
            f"run-r{r:g}",
            rows=rows(200, 100.0 * (i + 1), 10 + i, 25, ("prefix-hit", "prefix-miss")),
        )
        for i, r in enumerate((1.0, 2.0, 4.0))
    )
    return result(points, "rate", slo, saturation=2.0, command="tokenpace bench x --sweep rate=1,2,4 --slo ttft=500ms")
