"""A load test's report: one self-contained HTML document from a BenchResult, to open from disk, mail and print.

Everything is inside the file: the styles inline, the charts inline SVG drawn on the server (web/report_charts.py),
no script and no URL to fetch, so it reads offline and on paper. Every figure shown is one the result carries,
formatted as the board formats figures (board/numbers.py), each table cell keeping the exact value in a
``data-value`` attribute and, for a percentile, its n (the values it was computed over) in ``data-n``; each
point's P99s stand beside MLPerf's early-stopping estimate (load/figures.py). All text from the result (endpoint,
command, tags, error kinds) is escaped by the template, and bounded: a hand-written or tampered result cannot make
the report unbounded.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tokenpace.board.loadtable import load_label, saturation_line, server_tokens
from tokenpace.load.figures import EARLY_STOPPED, TagFigures
from tokenpace.load.results import BenchPoint, BenchResult
from tokenpace.measure.stats import ES_CONFIDENCE, EarlyStop, Figure
from tokenpace.web import report_charts
from tokenpace.web.charts import Chart
from tokenpace.web.render import environment

MAX_POINTS = 64  # points in the table and charted: a sweep has at most 32 (config/traffic.py)
MAX_TAGS = 40  # tag rows per point; the rest are counted
MAX_ERROR_KINDS = 8  # error kinds listed per point; the rest are counted
MAX_COMMAND = 4_000  # characters of the command shown


@dataclass(frozen=True, slots=True)
class PointView:
    """One point as the report shows it: its place, label, charts, and the tags and errors it lists."""

    index: int
    point: BenchPoint
    label: str
    charts: tuple[Chart, ...]
    tags: tuple[TagFigures, ...]
    tags_left_out: int
    errors: tuple[tuple[str, int], ...]
    errors_left_out: int
    tails: tuple[tuple[str, Figure, EarlyStop], ...] = ()  # each P99 with its n and early-stopping estimate


def point_view(point: BenchPoint, index: int, budget: int) -> PointView:
    """A point with its charts, its first MAX_TAGS tags and its MAX_ERROR_KINDS commonest error kinds."""
    errors = sorted(point.figures.errors.items(), key=lambda kv: (-kv[1], kv[0]))
    return PointView(
        index=index,
        point=point,
        label=load_label(point),
        charts=tuple(report_charts.point_charts(point, index, budget)),
        tags=point.figures.by_tag[:MAX_TAGS],
        tags_left_out=max(0, len(point.figures.by_tag) - MAX_TAGS),
        errors=tuple(errors[:MAX_ERROR_KINDS]),
        errors_left_out=max(0, len(errors) - MAX_ERROR_KINDS),
        tails=tuple(
            (name, getattr(point.figures, name), es)
            for name in EARLY_STOPPED
            if (es := point.figures.early_stopping.get(name)) is not None
        ),
    )


def render_report(result: BenchResult) -> str:
    """The report's HTML: the same result gives the same bytes (no clock, no random ids)."""
    shown = result.points[:MAX_POINTS]
    bounded = dataclasses.replace(result, points=shown)
    budget = report_charts.dots_per_chart(len(shown))
    points = [point_view(p, i, budget) for i, p in enumerate(shown, 1)]
    return (
        environment()
        .get_template("report.html")
        .render(
            result=result,
            points=points,
            points_left_out=len(result.points) - len(shown),
            sweep_charts=report_charts.sweep_charts(bounded),
            client_bound=sum(p.client_bound for p in shown),
            invalid=sum(bool(p.invalid) for p in shown),
            max_command=MAX_COMMAND,
            saturation=saturation_line(result),
            server=server_tokens(bounded),
            es_confidence=ES_CONFIDENCE,
        )
    )
