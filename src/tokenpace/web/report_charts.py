"""A load test report's charts, drawn from its BenchResult by web/charts.py: what a sweep and each level did.

A sweep (two or more points) gets throughput against TTFT and, on an axis of its own, against TPOT; latency
percentiles against the swept value and, for a rate sweep, the rate achieved against the rate offered. Every
level is on every sweep chart, its short name printed beside its dot (an auto sweep's concurrency-1 level
sits on the rate axes at the rate it achieved: a closed loop is offered what it completes), and each series has
a colour of its own from the Okabe-Ito palette (SERIES_COLOURS), safe for colour-blind readers. Every point
gets TTFT over its run (a dot per request row, failures apart) and its TTFT percentile ladder. The ladder and the
sweep charts draw the figures the result carries (load/figures.py), never figures recomputed from the rows:
the rows are a bounded sample, the figures cover every request. Dots are bounded: a chart draws at most
``RUN_DOTS_MAX`` rows, and fewer per chart when the report has many points, thinned evenly over the run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeGuard, TypeVar

from tokenpace.load.figures import Figures
from tokenpace.load.results import BenchPoint, BenchResult
from tokenpace.measure.catalogue import metric
from tokenpace.measure.stats import Figure
from tokenpace.web.charts import Chart, Dot, bars, scatter

T = TypeVar("T")

RUN_DOTS_MAX = 300  # request dots in one run chart (~250 bytes of SVG each)
REPORT_DOTS = 3_000  # request dots over all of a report's run charts: a 32-point sweep stays near a megabyte
MIN_DOTS = 40  # a run chart keeps at least this many, however many points the report has
FAILED_SHARE = 4  # failures keep up to 1/4 of a chart's dots, so a rare failure is not thinned away
TAG_CHARS = 60  # a request's tag in its dot's tooltip is cut to this: a row's tag is the dataset's text
LADDER = ("mean", "p50", "p90", "p95", "p99", "max")  # a latency Figure's fields the distribution chart draws


# Okabe & Ito's colour-blind-safe palette (2008), its yellow left out (unreadable on white): a colour per series
# name, so no two series of one chart share one and a series keeps its colour from chart to chart.
OKABE_ITO = {
    "blue": "#0072B2", "orange": "#E69F00", "vermillion": "#D55E00", "bluish green": "#009E73",
    "reddish purple": "#CC79A7", "sky blue": "#56B4E9", "black": "#000000",
}  # fmt: skip


def series_name(key: str, stat: str) -> str:
    """A latency series' name: the figure's narrow label (measure/catalogue.py) and its statistic, "TTFT p99"."""
    return f"{metric(key).narrow} {stat}"


SERIES_COLOURS = {
    series_name("ttft_ms", "p50"): OKABE_ITO["blue"], series_name("ttft_ms", "p90"): OKABE_ITO["orange"],
    series_name("ttft_ms", "p99"): OKABE_ITO["vermillion"], series_name("e2e_ms", "p50"): OKABE_ITO["bluish green"],
    series_name("tpot_ms", "p50"): OKABE_ITO["blue"], series_name("tpot_ms", "p99"): OKABE_ITO["vermillion"],
    "achieved": OKABE_ITO["blue"], "achieved = offered": OKABE_ITO["black"],
    "ok": OKABE_ITO["blue"], "failed": OKABE_ITO["vermillion"],
}  # fmt: skip


def thin(items: Sequence[T], k: int) -> list[T]:
    """``k`` items spread evenly, first and last kept: items[round(i*(n-1)/(k-1))] for i in 0..k-1."""
    n = len(items)
    if n <= k:
        return list(items)
    if k <= 1:
        return list(items[:k])
    return [items[round(i * (n - 1) / (k - 1))] for i in range(k)]


def dots_per_chart(points: int) -> int:
    """A run chart's dot budget: REPORT_DOTS / points, between MIN_DOTS and RUN_DOTS_MAX."""
    return max(MIN_DOTS, min(RUN_DOTS_MAX, REPORT_DOTS // max(points, 1)))


def _finite(value: float | None) -> TypeGuard[float]:
    return value is not None and math.isfinite(value)


def swept(result: BenchResult) -> tuple[str, list[tuple[BenchPoint, float]]]:
    """The swept quantity's axis title and each point's value of it, ascending (points without one left out):
    a curve through the levels follows the load, whatever order an auto sweep tried them in. On a rate axis a
    closed loop stands at the rate it achieved (what it was offered: the next request went as one ended)."""
    by_rate = result.sweep in ("rate", "auto") or (
        result.sweep is None and all(p.load.rate is not None for p in result.points)
    )
    title = metric("offered_rate").header if by_rate else "concurrency"
    values = [(p, (p.load.rate or p.figures.request_rate) if by_rate else p.load.concurrency) for p in result.points]
    found = [(p, float(v)) for p, v in values if v is not None and math.isfinite(v) and v > 0]
    return title, sorted(found, key=lambda pv: pv[1])


def level_name(point: BenchPoint) -> str:
    """A level's name beside its dot: ``c=1``, ``bursts of 10``, ``24.8/s``, and ``#2`` for a second run."""
    load = point.load
    name = f"{load.rate:g}/s" if load.rate is not None else load.describe() if load.burst else f"c={load.concurrency}"
    return name + (f" #{point.repeat}" if point.repeat else "")


def _dots(label: str, x: float, lines: Sequence[tuple[str, float | None]]) -> list[Dot]:
    return [Dot(group, label, x, y) for group, y in lines if _finite(y) and math.isfinite(x)]


def _against_throughput(
    result: BenchResult, chart_id: str, title: str, key: str, figure: Callable[[Figures], Figure]
) -> Chart:
    """Each point at its achieved output throughput, against the p50 and p99 of ``figure`` (the catalogue's
    ``key``), joined in the order of the swept value."""
    p50, p99 = series_name(key, "p50"), series_name(key, "p99")
    dots = [
        d
        for p, _ in swept(result)[1]
        for d in _dots(
            level_name(p), p.figures.output_tokens_per_s, ((p50, figure(p.figures).p50), (p99, figure(p.figures).p99))
        )
    ]
    return _sweep_chart(chart_id, title, metric("output_tokens_per_s").header, metric(key).header, _by_group(dots), p50)


def _sweep_chart(chart_id: str, title: str, x_title: str, y_title: str, dots: list[Dot], printed: str) -> Chart:
    """A sweep's curves, in their own colours, the ``printed`` series' dots named by their level."""
    return scatter(chart_id, title, x_title, y_title, dots, lines=True, series_colours=SERIES_COLOURS, printed=printed)


def throughput_latency(result: BenchResult) -> Chart:
    """TTFT p50 and p99 against achieved output throughput."""
    return _against_throughput(result, "chart-sweep-throughput", "Throughput vs TTFT", "ttft_ms", lambda f: f.ttft)


def throughput_tpot(result: BenchResult) -> Chart:
    """TPOT p50 and p99 against achieved output throughput, on an axis of their own: a TPOT of 20 ms drawn on
    TTFT's 2,000 ms axis is a flat line at the bottom."""
    title = "Throughput vs time per output token"
    return _against_throughput(result, "chart-sweep-tpot", title, "tpot_ms", lambda f: f.tpot)


def latency_by_load(result: BenchResult) -> Chart:
    """TTFT p50, p90 and p99 and E2E p50 against the swept value."""
    x_title, values = swept(result)
    dots = [
        d
        for p, x in values
        for d in _dots(
            level_name(p),
            x,
            (
                (series_name("ttft_ms", "p50"), p.figures.ttft.p50),
                (series_name("ttft_ms", "p90"), p.figures.ttft.p90),
                (series_name("ttft_ms", "p99"), p.figures.ttft.p99),
                (series_name("e2e_ms", "p50"), p.figures.e2e.p50),
            ),
        )
    ]
    printed = series_name("ttft_ms", "p50")
    return _sweep_chart("chart-sweep-latency", "Latency percentiles vs load", x_title, "ms", _by_group(dots), printed)


def achieved_offered(result: BenchResult) -> Chart:
    """The request rate achieved against the rate offered, beside the line where they are equal (y = x)."""
    _, values = swept(result)
    dots = [d for p, rate in values for d in _dots(level_name(p), rate, (("achieved", p.figures.request_rate),))]
    top = max([d.x for d in dots] + [d.y for d in dots], default=0.0)
    ideal = [Dot("achieved = offered", "y = x", v, v) for v in (0.0, top)] if top > 0 else []
    title = "Achieved vs offered rate"
    offered, achieved = metric("offered_rate").header, metric("request_rate").header
    return _sweep_chart("chart-sweep-achieved", title, offered, achieved, dots + ideal, "achieved")


def _by_group(dots: list[Dot]) -> list[Dot]:
    """Dots grouped by series (stable): each series' line runs through its own points in the sweep's order."""
    order = {g: i for i, g in enumerate(dict.fromkeys(d.group for d in dots))}
    return sorted(dots, key=lambda d: order[d.group])


def sweep_charts(result: BenchResult) -> list[Chart]:
    """A sweep's charts (two or more points); none for one level."""
    if len(result.points) < 2:
        return []
    out = [throughput_latency(result), throughput_tpot(result), latency_by_load(result)]
    if swept(result)[0] == metric("offered_rate").header:
        out.append(achieved_offered(result))
    return out


def _tag(tag: str) -> str:
    return tag if len(tag) <= TAG_CHARS else tag[:TAG_CHARS] + "…"


def ttft_over_run(point: BenchPoint, chart_id: str, budget: int) -> Chart:
    """The point's request rows as dots, seconds into the run against TTFT, at most ``budget`` of them; failures a
    series of their own (at 0 ms when they never got a first token)."""
    rows = sorted((r for r in point.rows if math.isfinite(r.t_s)), key=lambda r: r.t_s)
    failed = thin([r for r in rows if not r.ok], budget // FAILED_SHARE)
    ok = thin([r for r in rows if r.ok and _finite(r.ttft_ms)], budget - len(failed))
    dots = [Dot("ok", _tag(r.tag), r.t_s, r.ttft_ms) for r in ok if _finite(r.ttft_ms)]
    for r in failed:
        started = _finite(r.ttft_ms)
        label = ", ".join(filter(None, (_tag(r.tag), "failed" if started else "failed, no first token")))
        dots.append(Dot("failed", label, r.t_s, r.ttft_ms if _finite(r.ttft_ms) else 0.0))
    drawn = len(ok) + len(failed)
    shown = f" ({drawn:,} of {len(point.rows):,} requests)" if drawn < len(point.rows) else ""
    ttft = metric("ttft_ms")
    title = f"{ttft.label} over the run, {point.load.describe()}{shown}"
    return scatter(chart_id, title, "s into the run", ttft.header, dots, dot_size=2.5, series_colours=SERIES_COLOURS)


def ladder(latency: Figure) -> dict[str, float]:
    """A latency's mean, percentiles and max as they were measured, those it has."""
    return {name: v for name in LADDER if _finite(v := getattr(latency, name))}


def ttft_ladder(point: BenchPoint, chart_id: str) -> Chart:
    """The point's TTFT figures (every measured request, not the rows) as bars from zero."""
    ttft = metric("ttft_ms")
    title = f"{ttft.label} distribution, {point.load.describe()} (n={point.figures.ttft.n:,})"
    return bars(chart_id, title, ttft.unit_text, ladder(point.figures.ttft))


def point_charts(point: BenchPoint, index: int, budget: int) -> list[Chart]:
    """One point's run and distribution charts, their ids numbered by the point's place in the result."""
    return [ttft_over_run(point, f"chart-point{index}-run", budget), ttft_ladder(point, f"chart-point{index}-ladder")]
