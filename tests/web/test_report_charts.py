"""The report's charts draw the result's figures, a bounded number of request dots, and failures apart."""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
import xml.etree.ElementTree as ET

from tests.reportkit import concurrency_sweep, latency, one_point, rate_sweep, result, rows
from tests.webkit import legend, marks
from tokenpace.config.traffic import Load
from tokenpace.load.results import BenchPoint, BenchResult, Bracket, Row
from tokenpace.web import report_charts
from tokenpace.web.charts import Chart
from tokenpace.web.report_charts import dots_per_chart, ladder, swept, thin


def _svg(chart: Chart) -> ET.Element:
    return ET.fromstring(str(chart.svg))  # noqa: S314 (our own SVG)


def test_thin_keeps_the_first_and_last_and_spreads_the_rest_evenly() -> None:
    assert thin(list(range(10)), 20) == list(range(10))
    assert thin(list(range(101)), 5) == [0, 25, 50, 75, 100]
    assert thin(list(range(10)), 1) == [0] and thin(list(range(10)), 0) == []
    picked = thin(list(range(20_000)), 300)
    assert len(picked) == 300 and picked[0] == 0 and picked[-1] == 19_999
    gaps = {b - a for a, b in itertools.pairwise(picked)}
    assert max(gaps) - min(gaps) <= 1


def test_a_chart_gets_fewer_dots_the_more_points_a_report_has_within_bounds() -> None:
    assert dots_per_chart(1) == report_charts.RUN_DOTS_MAX == dots_per_chart(0)
    assert dots_per_chart(32) == report_charts.REPORT_DOTS // 32
    assert dots_per_chart(10_000) == report_charts.MIN_DOTS


def test_the_ladder_is_the_latency_as_measured_without_missing_or_infinite_values() -> None:
    t = latency(100.0)
    assert ladder(t) == {"mean": t.mean, "p50": t.p50, "p90": t.p90, "p95": t.p95, "p99": t.p99, "max": t.max}
    assert ladder(dataclasses.replace(latency(1.0), p99=None, max=math.inf, mean=math.nan)) == {
        "p50": 1.0, "p90": 1.5, "p95": 1.8
    }  # fmt: skip
    chart = report_charts.ttft_ladder(one_point().points[0], "x")
    assert chart.series == {k: [v] for k, v in ladder(one_point().points[0].figures.ttft).items()}
    assert "(n=100)" in chart.title


def test_the_swept_value_is_the_concurrency_or_the_offered_rate() -> None:
    title, values = swept(concurrency_sweep())
    assert title == "concurrency" and [v for _, v in values] == [1.0, 4.0, 16.0, 64.0]
    title, values = swept(rate_sweep())
    assert title == "Offered rate (req/s)" and [v for _, v in values] == [1.0, 2.0, 4.0]
    unnamed = dataclasses.replace(rate_sweep(), sweep=None)  # an old result: its loads say what varied
    assert swept(unnamed)[0] == "Offered rate (req/s)"


def test_sweep_charts_draw_the_figures_per_point_and_only_a_rate_sweep_compares_achieved_with_offered() -> None:
    assert report_charts.sweep_charts(one_point()) == []
    res = concurrency_sweep()
    by_id = {c.id: c for c in report_charts.sweep_charts(res)}
    assert list(by_id) == ["chart-sweep-throughput", "chart-sweep-tpot", "chart-sweep-latency"]
    f = [p.figures for p in res.points]
    labels = ["c=1", "c=4", "c=16", "c=64"]
    assert by_id["chart-sweep-throughput"].series == {
        "TTFT p50": [(lab, x.output_tokens_per_s, x.ttft.p50) for lab, x in zip(labels, f, strict=True)],
        "TTFT p99": [(lab, x.output_tokens_per_s, x.ttft.p99) for lab, x in zip(labels, f, strict=True)],
    }
    assert by_id["chart-sweep-tpot"].series == {
        "TPOT p50": [(lab, x.output_tokens_per_s, x.tpot.p50) for lab, x in zip(labels, f, strict=True)],
        "TPOT p99": [(lab, x.output_tokens_per_s, x.tpot.p99) for lab, x in zip(labels, f, strict=True)],
    }
    assert by_id["chart-sweep-latency"].series["E2E p50"] == [
        (lab, c, x.e2e.p50) for lab, c, x in zip(labels, (1.0, 4.0, 16.0, 64.0), f, strict=True)
    ]
    rates = {c.id: c for c in report_charts.sweep_charts(rate_sweep())}
    assert list(rates) == ["chart-sweep-throughput", "chart-sweep-tpot", "chart-sweep-latency", "chart-sweep-achieved"]
    assert rates["chart-sweep-achieved"].series["achieved"] == [
        (f"{p.load.rate:g}/s", p.load.rate, p.figures.request_rate) for p in rate_sweep().points
    ]
    assert rates["chart-sweep-achieved"].series["achieved = offered"] == [
        ("y = x", 0.0, 0.0),
        ("y = x", 14.25, 14.25),
    ]


def test_a_run_chart_draws_at_most_its_budget_and_keeps_rare_failures() -> None:
    many = list(rows(20_000, 100.0, 7))
    many[12_345] = Row(many[12_345].t_s, None, 50.0, 0, False, "")  # one failure in 20,000, no first token
    point = BenchPoint(Load(concurrency=8), one_point().points[0].figures, "run-big", rows=tuple(many))
    chart = report_charts.ttft_over_run(point, "c", 300)
    assert len(chart.series["ok"]) == 299 and chart.series["failed"] == [
        ("failed, no first token", many[12_345].t_s, 0.0)
    ]
    assert "(300 of 20,000 requests)" in chart.title
    assert len(marks(_svg(chart))) == 300
    failing = BenchPoint(Load(), one_point().points[0].figures, "run-bad", rows=rows(1_000, 100.0, 8, 2))
    chart = report_charts.ttft_over_run(failing, "c", 100)
    assert len(chart.series["failed"]) == 25 and len(chart.series["ok"]) == 75  # failures a quarter at most


def test_a_run_chart_leaves_out_values_it_cannot_place() -> None:
    odd = (Row(math.nan, 10.0, 20.0, 1, True), Row(1.0, math.inf, 20.0, 1, True), Row(2.0, 30.0, 40.0, 1, True))
    chart = report_charts.ttft_over_run(BenchPoint(Load(), one_point().points[0].figures, "r", rows=odd), "c", 300)
    assert chart.series == {"ok": [("", 2.0, 30.0)]}
    assert legend(_svg(chart)) == ["ok"]


def test_point_charts_are_numbered_by_the_point() -> None:
    res = result(concurrency_sweep().points[:2])
    assert [c.id for c in report_charts.point_charts(res.points[1], 2, 50)] == [
        "chart-point2-run",
        "chart-point2-ladder",
    ]


def test_a_request_that_failed_after_its_first_token_is_marked_at_its_ttft() -> None:
    started = (Row(0.5, 80.0, 90.0, 3, False, "turn-2"),)
    chart = report_charts.ttft_over_run(BenchPoint(Load(), one_point().points[0].figures, "r", rows=started), "c", 300)
    assert chart.series == {"failed": [("turn-2, failed", 0.5, 80.0)]}


def test_sweep_curves_follow_the_swept_value_whatever_order_the_levels_ran_in() -> None:
    res = rate_sweep()
    shuffled = dataclasses.replace(res, sweep="auto", points=(res.points[2], res.points[0], res.points[1]))
    assert [v for _, v in swept(shuffled)[1]] == [1.0, 2.0, 4.0]
    by_id = {c.id: c for c in report_charts.sweep_charts(shuffled)}
    assert [label for label, _, _ in by_id["chart-sweep-throughput"].series["TTFT p50"]] == [
        "1/s", "2/s", "4/s"
    ]  # fmt: skip
    assert [x for _, x, _ in by_id["chart-sweep-achieved"].series["achieved"]] == [1.0, 2.0, 4.0]


def test_a_long_tag_is_cut_in_its_dots_tooltip() -> None:
    long = "t" * 100_000
    point = BenchPoint(Load(), one_point().points[0].figures, "r", rows=rows(300, 100.0, 4, 3, (long,)))
    chart = report_charts.ttft_over_run(point, "c", 300)
    tag = "t" * report_charts.TAG_CHARS + "…"
    assert {label for label, _, _ in chart.series["ok"]} == {tag}
    assert {label for label, _, _ in chart.series["failed"]} == {f"{tag}, failed, no first token"}
    assert len(str(chart.svg)) < 300 * 1_000


def auto_sweep() -> BenchResult:
    """An auto sweep as bench writes one: concurrency 1 first, then rates doubled and bisected, out of order."""
    first, *rated = rate_sweep().points
    unloaded = dataclasses.replace(first, load=Load(concurrency=1))
    bracket = Bracket(2.0, 4.0, "the limit of 16 levels")
    return dataclasses.replace(rate_sweep(), sweep="auto", points=(unloaded, *reversed(rated)), bracket=bracket)


def test_every_level_of_an_auto_sweep_is_on_every_sweep_chart_named_beside_its_dot() -> None:
    # The concurrency-1 level has no offered rate: it was left out of every chart whose axis was the rate, and
    # so of the throughput curves drawn in the rate's order.
    res = auto_sweep()
    charts = report_charts.sweep_charts(res)
    assert len(charts) == 4
    for chart in charts:
        levels = {label for series in chart.series.values() for label, _, _ in series if label != "y = x"}
        assert levels == {"c=1", "4/s", "2/s"}, chart.id
        printed = [
            t.text or "" for t in _svg(chart).iter("{http://www.w3.org/2000/svg}text") if "label" in t.get("class", "")
        ]
        assert sorted(printed) == ["2/s", "4/s", "c=1"], (chart.id, printed)  # once each, on one series
    by_id = {c.id: c for c in charts}
    unloaded = res.points[0].figures.request_rate  # a closed loop is offered what it completes
    assert ("c=1", unloaded, unloaded) in by_id["chart-sweep-achieved"].series["achieved"]
    assert [(label, x) for label, x, _ in by_id["chart-sweep-latency"].series["TTFT p50"]] == [
        ("2/s", 2.0), ("4/s", 4.0), ("c=1", unloaded)
    ]  # fmt: skip


def test_no_two_series_of_a_chart_share_a_colour() -> None:
    # "TTFT p50" and "TTFT p99" hashed to two blues of the board's palette; the report's are Okabe-Ito's, one each,
    # and each is the colour pygal's stylesheet gives its series (pygal colours series by their place).
    scattered = [*report_charts.sweep_charts(auto_sweep()), report_charts.ttft_over_run(failing(), "chart-run", 50)]
    for chart in scattered:
        colours = [report_charts.SERIES_COLOURS[name] for name in chart.series]
        assert len(set(colours)) == len(colours) >= 2, chart.id
        for place, colour in enumerate(colours):
            assert re.search(rf"\.color-{place}[^{{]*\{{[^}}]*{colour}", str(chart.svg), re.I), (chart.id, place)
    assert set(report_charts.SERIES_COLOURS.values()) <= set(report_charts.OKABE_ITO.values())


def failing() -> BenchPoint:
    return BenchPoint(Load(), one_point().points[0].figures, "run-bad", rows=rows(100, 100.0, 8, 2))
