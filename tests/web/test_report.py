"""A load test's report: every figure the result's, all text escaped, nothing fetched, bounded; and in a real
Chromium, offline, its charts drawn and its table on paper."""

from __future__ import annotations

import dataclasses
import html
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import ViewportSize

from tests.reportkit import EVIL, concurrency_sweep, latency, one_point, rate_sweep, result, rows, tags
from tests.web.test_browser import ARGS, ARTIFACTS, CHROMIUM, _chromium
from tests.webkit import SVG, charts, legend, marks
from tokenpace.board import numbers
from tokenpace.config.traffic import Load
from tokenpace.load.figures import Figures, TagFigures
from tokenpace.load.results import BenchPoint, BenchResult, Bracket
from tokenpace.measure.stats import Figure
from tokenpace.web import report
from tokenpace.web.report import render_report

THROUGHPUT = "Output throughput (over the whole run, o200k tok/s)"  # the x axis: every request's tokens together
PAPER = ViewportSize(width=1047, height=740)  # A4 landscape less 10 mm margins (the report's @page), in CSS pixels
_ROW = re.compile(r'<tr id="row-(\d+)">(.*?)</tr>', re.S)
_CELL = re.compile(r'<td class="num" data-col="([\w-]+)"(?: data-value="([^"]*)")?[^>]*>(.*?)</td>', re.S)


def cells(text: str) -> list[dict[str, tuple[str | None, str]]]:
    """Each row of the points table: column -> (its data-value, its text up to any note)."""
    return [
        {col: (value or None, body.split("<small")[0].strip()) for col, value, body in _CELL.findall(row)}
        for _, row in _ROW.findall(text)
    ]


def fact(text: str, name: str) -> str:
    m = re.search(rf'<dd data-fact="{name}"[^>]*>(.*?)</dd>', text, re.S)
    assert m, name
    return m.group(1)


# A column of the points table: its figure in a Figures and how the board writes it.
COLUMNS: dict[str, tuple[Callable[[Figures], float | None], numbers.Kind]] = {
    "tok-s": (lambda f: f.output_tokens_per_s, "num"),
    "ttft-p50": (lambda f: f.ttft.p50, "ms"),
    "ttft-p90": (lambda f: f.ttft.p90, "ms"),
    "ttft-p99": (lambda f: f.ttft.p99, "ms"),
    "tpot-p50": (lambda f: f.tpot.p50, "num"),
    "tpot-p99": (lambda f: f.tpot.p99, "num"),
    "itl-p99": (lambda f: f.itl.p99, "num"),
    "e2e-p50": (lambda f: f.e2e.p50, "ms"),
    "e2e-p99": (lambda f: f.e2e.p99, "ms"),
    "held": (lambda f: f.concurrency_held, "num"),
}


def assert_table_is_the_figures(text: str, res: BenchResult) -> None:
    table = cells(text)
    assert len(table) == len(res.points)
    for row, p in zip(table, res.points, strict=True):
        f = p.figures
        for col, (get, kind) in COLUMNS.items():
            value = get(f)
            assert row[col] == (repr(value), numbers.figure_text(value, kind)), col
        assert row["req-s"] == (repr(f.request_rate), numbers.rate(f.request_rate))
        assert row["ok"] == (str(f.ok), f"{f.ok} / {f.requests}")
        if res.slo is None:
            assert "goodput" not in row and "attainment" not in row
        else:
            assert row["goodput"][0] == repr(f.goodput)
            assert row["attainment"] == (repr(f.slo_attainment), numbers.percent(f.slo_attainment))


def test_one_point_shows_its_header_its_figures_and_its_two_charts() -> None:
    res = one_point()
    text = render_report(res)
    assert text.startswith("<!doctype html>")
    for name, value in (("endpoint", res.endpoint), ("model", res.model), ("protocol", "openai"),
                        ("dataset", "fresh:1k"), ("started", res.started_at), ("version", "0.12.0")):  # fmt: skip
        assert fact(text, name) == value
    assert fact(text, "command") == f"<code>{res.command}</code>"
    assert fact(text, "slo") == "none" and fact(text, "sweep") == "none, one level"
    assert 'data-fact="saturation"' not in text and "client-bound" not in text
    assert_table_is_the_figures(text, res)
    assert "http 500 2, timeout 1" in text
    drawn = charts(text)
    assert sorted(drawn) == ["chart-point1-ladder", "chart-point1-run"]
    ttft = res.points[0].figures.ttft
    ladder = {"mean": ttft.mean, "p50": ttft.p50, "p90": ttft.p90, "p95": ttft.p95, "p99": ttft.p99, "max": ttft.max}
    assert marks(drawn["chart-point1-ladder"]) == [f"{name}: {value:,.4g} ms" for name, value in ladder.items()]
    run = marks(drawn["chart-point1-run"])
    assert len(run) == 200 and sum("failed" in m for m in run) == 10  # every request, the 10 failures apart
    assert legend(drawn["chart-point1-run"]) == ["ok", "failed"]


def y_axis(svg: ET.Element) -> list[float]:
    """The values a chart's y axis is labelled with, bottom to top."""
    axis = next(g for g in svg.iter(f"{SVG}g") if g.get("class", "").split()[:2] == ["axis", "y"])
    return [float(t.text.replace(",", "")) for t in axis.iter(f"{SVG}text") if t.text and t.text[0].isdigit()]


def test_token_counts_are_named_in_the_headers_and_the_servers_own_shown_where_usage_reported_them() -> None:
    plain = render_report(one_point())
    head = plain.split('<table id="points">')[1].split("</thead>")[0]
    assert len(re.findall(r"<small>[^<]*o200k tok", head)) == 3  # throughput, TPOT p50 and p99
    assert 'id="server-tokens"' not in plain
    f = one_point().points[0].figures
    served = dataclasses.replace(f, tpot_server=latency(6.5, n=150), output_tokens_per_s_server=1024.5)
    res = result((dataclasses.replace(one_point().points[0], figures=served),))
    text = render_report(res)
    assert_table_is_the_figures(text, res)  # the o200k table as before
    table = text.split('<table id="server-tokens">')[1].split("</table>")[0]
    head = table.split("</thead>")[0]
    assert len(re.findall(r"<small>[^<]*server tok", head)) == len(re.findall(r"<small>[^<]*o200k tok", head)) == 4
    assert "(E2E - TTFT) / (the output tokens the server&#39;s usage reported - 1)" in head  # the catalogue's
    row = {col: (value, body.split("<small")[0]) for col, value, body in _CELL.findall(table.split("</thead>")[1])}
    assert row["tok-s-server"] == (repr(1024.5), numbers.figure_text(1024.5))
    assert row["tok-s"] == (repr(f.output_tokens_per_s), numbers.figure_text(f.output_tokens_per_s))
    for q, server, o200k in (("p50", 6.5, f.tpot.p50), ("p90", 6.5 * 1.5, f.tpot.p90), ("p99", 6.5 * 2.5, f.tpot.p99)):
        assert row[f"tpot-server-{q}"] == (repr(server), numbers.figure_text(server))
        assert row[f"tpot-{q}"] == (repr(o200k), numbers.figure_text(o200k))
    assert 'data-col="usage" data-value="150" data-total="197">150 / 197<' in table
    assert 'data-col="tpot-server-p99" data-value="16.25" data-n="150">16.2<small>n=150</small>' in table  # its n


def test_a_concurrency_sweep_charts_throughput_against_latency_and_latency_against_load() -> None:
    res = concurrency_sweep()
    text = render_report(res)
    assert fact(text, "sweep") == "concurrency"
    assert_table_is_the_figures(text, res)
    drawn = charts(text)
    assert sorted(drawn) == sorted(
        ["chart-sweep-throughput", "chart-sweep-tpot", "chart-sweep-latency"]
        + [f"chart-point{i}-{kind}" for i in range(1, 5) for kind in ("run", "ladder")]
    )
    # one dot per point and series, labelled with its level's short name, at the result's figures
    assert legend(drawn["chart-sweep-throughput"]) == ["TTFT p50", "TTFT p99"]
    throughput = marks(drawn["chart-sweep-throughput"])
    assert throughput[:4] == [
        f"c=1: {THROUGHPUT} 512.2, TTFT (ms) 111",
        f"c=4: {THROUGHPUT} 1,024, TTFT (ms) 222",
        f"c=16: {THROUGHPUT} 1,537, TTFT (ms) 333",
        f"c=64: {THROUGHPUT} 2,049, TTFT (ms) 444",
    ]
    # TPOT on its own axis (issue 21 item 9): on TTFT's it was a flat line at the bottom
    assert legend(drawn["chart-sweep-tpot"]) == ["TPOT p50", "TPOT p99"]
    assert marks(drawn["chart-sweep-tpot"])[:4] == [
        f"c=1: {THROUGHPUT} 512.2, TPOT (ms per o200k token) 13.25",
        f"c=4: {THROUGHPUT} 1,024, TPOT (ms per o200k token) 14.25",
        f"c=16: {THROUGHPUT} 1,537, TPOT (ms per o200k token) 15.25",
        f"c=64: {THROUGHPUT} 2,049, TPOT (ms per o200k token) 16.25",
    ]
    tpots = [t.tpot.p99 for t in (p.figures for p in res.points) if t.tpot.p99 is not None]
    assert (
        0
        < max(y_axis(drawn["chart-sweep-tpot"]))
        <= 1.2 * max(tpots)
        < min(y_axis(drawn["chart-sweep-throughput"])[1:])
    )
    assert legend(drawn["chart-sweep-latency"]) == ["TTFT p50", "TTFT p90", "TTFT p99", "E2E p50"]
    latency_marks = marks(drawn["chart-sweep-latency"])
    levels = enumerate((1, 4, 16, 64), 1)
    assert latency_marks[:4] == [f"c={c}: concurrency {c}, ms {111 * i}" for i, c in levels]
    assert latency_marks[-1] == "c=64: concurrency 64, ms 5,332"  # E2E p50, 1333 x 4
    # the last level was client-bound: said above the table and in its row
    assert "1 of 4 load levels ran while this client was the bottleneck" in text
    assert [("client-bound" in r) for _, r in _ROW.findall(text)] == [False, False, False, True]
    assert '<small data-value="10.0">lag p99 10.0 ms</small>' in text


def test_a_rate_sweep_with_an_slo_shows_goodput_attainment_achieved_against_offered_and_its_tags() -> None:
    res = rate_sweep()
    text = render_report(res)
    assert fact(text, "slo").startswith("ttft&lt;=500ms,tpot&lt;=50ms")
    assert fact(text, "sweep") == "rate"
    assert fact(text, "saturation") == "saturation: 2.00 req/s offered"  # a document from before brackets
    assert_table_is_the_figures(text, res)
    assert [cells(text)[i]["attainment"][1] for i in range(3)] == ["80%", "70%", "60%"]
    drawn = charts(text)
    achieved = drawn["chart-sweep-achieved"]
    assert legend(achieved) == ["achieved", "achieved = offered"]
    assert marks(achieved) == [
        "1/s: Offered rate (req/s) 1, Request rate (req/s) 4.75",
        "2/s: Offered rate (req/s) 2, Request rate (req/s) 9.5",
        "4/s: Offered rate (req/s) 4, Request rate (req/s) 14.25",
        "y = x: Offered rate (req/s) 0, Request rate (req/s) 0",
        "y = x: Offered rate (req/s) 14.25, Request rate (req/s) 14.25",
    ]
    assert marks(drawn["chart-sweep-latency"])[0] == "1/s: Offered rate (req/s) 1, ms 111"
    for i, p in enumerate(res.points, 1):
        table = re.search(rf'<table class="tags" id="tags-{i}">(.*?)</table>', text, re.S)
        assert table
        found = [
            {col: (value, body.split("<small")[0]) for col, value, body in _CELL.findall(r)}
            for r in re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S)[1:]
        ]
        assert [re.search(r'<td class="name">(.*?)</td>', r).group(1) for r in  # type: ignore[union-attr]
                re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S)[1:]] == ["prefix-hit", "prefix-miss"]  # fmt: skip
        for row, t in zip(found, p.figures.by_tag, strict=True):
            assert row["ok"] == (str(t.ok), f"{t.ok} / {t.requests}")
            assert row["ttft-p50"] == (repr(t.ttft.p50), numbers.figure_text(t.ttft.p50, "ms"))
            assert row["ttft-p99"] == (repr(t.ttft.p99), numbers.figure_text(t.ttft.p99, "ms"))
            assert row["tpot-p50"] == (repr(t.tpot.p50), numbers.figure_text(t.tpot.p50))
            assert row["e2e-p99"] == (repr(t.e2e.p99), numbers.figure_text(t.e2e.p99, "ms"))


def test_an_auto_sweep_names_its_saturation_bracket_and_why_it_stopped() -> None:
    bracket = Bracket(21.8, 22.8, "the bracket is within 5%")
    text = render_report(dataclasses.replace(rate_sweep(), sweep="auto", saturation=21.8, bracket=bracket))
    said = "saturation between 21.8 and 22.8 req/s offered: kept up with 21.8, not with 22.8 (stopped: the bracket"
    assert fact(text, "saturation").startswith(said)
    assert 'data-fact="saturation" data-low="21.8" data-high="22.8"' in text
    never = Bracket(640.0, None, "the limit of 16 levels")
    text = render_report(dataclasses.replace(rate_sweep(), sweep="auto", saturation=None, bracket=never))
    assert fact(text, "saturation").startswith("no saturation found: kept up with every rate up to 640 req/s")


def test_text_from_the_result_is_escaped_everywhere() -> None:
    point = one_point().points[0]
    evil_tag = TagFigures(EVIL, 1, 1, latency(1.0), latency(1.0), latency(1.0))
    figures = dataclasses.replace(point.figures, errors={EVIL: 3}, by_tag=(evil_tag,))
    hostile = dataclasses.replace(point, run_id=EVIL, figures=figures, rows=rows(20, 100.0, 3, 4, (EVIL,)))
    res = result(
        (hostile,),
        sweep=EVIL,
        endpoint=f"endpoint {EVIL}",
        model=f"model {EVIL}",
        protocol=f"protocol {EVIL}",
        dataset=f"dataset {EVIL}",
        started_at=f"started {EVIL}",
        tool_version=f"version {EVIL}",
        command=f"command {EVIL}",
    )
    text = render_report(res)
    assert "<script" not in text.lower()
    escaped = html.escape(EVIL, quote=False)
    assert fact(text, "endpoint") == f"endpoint {escaped}"
    assert fact(text, "command") == f"<code>command {escaped}</code>"
    assert text.count(escaped) >= 10  # each field, the run id, the error kind, the tag, the title and the heading


def test_nothing_in_the_report_is_fetched() -> None:
    text = render_report(rate_sweep())
    assert "<script" not in text and "<link" not in text and "<img" not in text and "<iframe" not in text
    assert "url(" not in text and "@import" not in text
    assert set(re.findall(r'\b(?:src|href)="([^"]*)"', text)) == {"#point-1", "#point-2", "#point-3"}
    # SVG's namespace names are identifiers, never fetched; nothing else names a web address
    assert not re.findall(r"https?://", re.sub(r'xmlns(?::\w+)?="[^"]*"', "", text))
    assert not re.findall(r"\son\w+=", text)  # no event handlers


def test_a_rate_has_two_decimals_below_ten() -> None:
    assert [numbers.rate(v) for v in (0.25, 4.75, 9.999, 12.25, 1234.5, None)] == [
        "0.25", "4.75", "10.00", "12.2", "1,234", numbers.DASH
    ]  # fmt: skip


def test_the_same_result_is_the_same_bytes() -> None:
    assert render_report(concurrency_sweep()) == render_report(concurrency_sweep())


def test_a_result_without_points_or_values_still_renders() -> None:
    assert "No load level was measured" in render_report(result(()))
    none = Figure()
    empty = Figures(0, 0, {}, 0.0, 0.0, 0.0, 0.0, 0.0, none, none, none, none, none, none)
    text = render_report(result((BenchPoint(Load(), empty, "run-empty"),)))
    assert cells(text)[0]["ttft-p50"] == (None, numbers.DASH)
    assert "no successful samples" in text  # the empty charts say so
    weird = dataclasses.replace(empty, ttft=dataclasses.replace(latency(5.0), p99=math.nan, max=math.inf))
    text = render_report(result((BenchPoint(Load(), weird, "run-nan", rows=rows(5, 5.0, 1)),)))
    assert [m.split(":")[0] for m in marks(charts(text)["chart-point1-ladder"])] == ["mean", "p50", "p90", "p95"]


def test_long_text_many_tags_error_kinds_and_points_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    base = rate_sweep()
    many_tags = tuple(dataclasses.replace(tags(1.0)[0], tag=f"tag-{i}") for i in range(report.MAX_TAGS + 25))
    errors = {f"kind-{i:02d}": 100 - i for i in range(report.MAX_ERROR_KINDS + 5)}
    p = base.points[0]
    crowded = dataclasses.replace(p, figures=dataclasses.replace(p.figures, by_tag=many_tags, errors=errors))
    res = dataclasses.replace(base, points=(crowded,), command="x" * 100_000, endpoint="e" * 10_000)
    text = render_report(res)
    assert fact(text, "command") == f"<code>{'x' * report.MAX_COMMAND}…</code>"
    assert fact(text, "endpoint") == "e" * 300 + "…"
    assert text.count('<td class="name">tag-') == report.MAX_TAGS and "25 more tags not shown" in text
    assert "kind-07 93" in text and "kind-08" not in text and "5 more kinds" in text
    monkeypatch.setattr(report, "MAX_POINTS", 2)
    text = render_report(rate_sweep())
    assert len(cells(text)) == 2 and "1 more load level in this result is not shown" in text
    assert "rate 4/s" not in text


def test_a_big_sweep_keeps_the_report_small() -> None:
    sweep = concurrency_sweep(row_count=20_000)
    res = dataclasses.replace(sweep, points=tuple(sweep.points[i % 4] for i in range(32)))
    text = render_report(res)
    drawn = charts(text)
    dots = sum(len(marks(svg)) for chart_id, svg in drawn.items() if chart_id.endswith("-run"))
    assert dots <= 3_000 and len(text) < 2_500_000


def test_in_chromium_offline_the_charts_draw_and_the_table_prints(tmp_path: Path) -> None:
    _chromium()
    from playwright.sync_api import Request, Route, sync_playwright

    path = tmp_path / "report.html"
    path.write_text(render_report(rate_sweep()), encoding="utf-8")  # the widest table: goodput and SLO columns
    url = path.as_uri()
    asked: list[str] = []

    def only_the_file(route: Route) -> None:
        if route.request.url == url:
            route.continue_()
        else:
            route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900}, offline=True)
            context.route("**/*", only_the_file)
            page = context.new_page()

            def seen(request: Request) -> None:
                asked.append(request.url)

            page.on("request", seen)
            page.goto(url)
            page.wait_for_load_state("load")
            assert asked == [url]  # nothing but the file itself
            figures = page.locator("figure.chart svg")
            assert figures.count() == 4 + 2 * 3  # throughput vs TTFT and vs TPOT, latency, achieved; per point two
            for i in range(figures.count()):
                box = figures.nth(i).bounding_box()
                assert figures.nth(i).is_visible() and box and box["width"] > 300 and box["height"] > 100
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "bench-report.png"), full_page=True)
            page.emulate_media(media="print")
            page.set_viewport_size(PAPER)
            table = page.locator("#points")
            assert table.is_visible() and page.locator("#points tbody tr").count() == 3
            box = table.bounding_box()
            assert box and box["width"] > 300 and box["height"] > 50
            assert page.evaluate("document.querySelector('#points').scrollWidth") <= PAPER["width"]  # no column cut
            assert page.locator("#chart-sweep-throughput svg").is_visible()
            assert len(page.pdf()) > 10_000  # it prints
            assert asked == [url]
        finally:
            browser.close()


def test_an_invalid_repeat_says_why_and_shows_latency_from_schedule() -> None:
    base = one_point()
    (p,) = base.points
    why = "dispatch delay P99 900 ms > 50 ms: the client sent late, the load was not the one asked"
    f = dataclasses.replace(p.figures, wait=latency(300.0), ttft_from_schedule=latency(777.0))
    late = dataclasses.replace(p, figures=f, repeat=2, invalid=why, run_id="run-late")
    text = render_report(dataclasses.replace(base, points=(dataclasses.replace(p, repeat=1), late), repeat=2))
    assert "2 runs, each load level 2 times back to back, against" in text
    assert 'id="invalid-notice"' in text and "1 of 2 load levels is invalid" in text
    assert "concurrency 4 #1" in text and "concurrency 4 #2" in text and html.escape(why) in text
    assert (
        'data-col="ttft-sched-p50" data-value="777.0"' in text and 'data-col="dispatch-p99" data-value="750.0"' in text
    )
    assert 'id="invalid-notice"' not in render_report(base)


def test_each_percentile_carries_its_n_and_each_p99_its_early_stopping_estimate() -> None:
    from tests import loadkit

    few = loadkit.point(Load(concurrency=1), loadkit.steady(10, 100, 20, failed=2))
    many = loadkit.point(Load(concurrency=2), loadkit.steady(700, 100, 20))
    text = render_report(loadkit.result(few, many))
    row = dict(_ROW.findall(text))["1"]
    ns = dict(re.findall(r'data-col="([\w-]+)"[^>]*? data-n="(\d+)"', row))
    assert ns == {"ttft-p50": "8", "ttft-p90": "8", "ttft-p99": "8", "tpot-p50": "8", "tpot-p99": "8",
                  "itl-p99": "72", "e2e-p50": "8", "e2e-p99": "8", "dispatch-p99": "10"}  # fmt: skip
    assert re.search(r'data-col="ttft-p99"[^>]*>100<small>n=8</small>', row)  # and written beneath the P99
    schedule = re.search(r'id="schedule-1">(.*?)</table>', text, re.S)
    assert schedule and re.search(r'data-col="ttft-n" data-value="8">8<', schedule.group(1))

    def tails(i: int) -> dict[str, dict[str, str]]:
        table = re.search(rf'id="tails-{i}">(.*?)</table>', text, re.S)
        assert table
        found = re.findall(r'<tr data-figure="(\w+)">(.*?)</tr>', table.group(1), re.S)
        return {name: {c: b for c, _, b in _CELL.findall(r) if not c.endswith("-bounded")} | dict(
            re.findall(r'data-col="\w+-(bounded)"[^>]*>(.*?)</td>', r)) for name, r in found}  # fmt: skip

    assert list(tails(1)) == ["ttft", "tpot", "e2e"]
    assert tails(1)["ttft"] == {"ttft-n": "8", "ttft-p99": "100", "bounded": "too few", "ttft-bound": "—",
                                "ttft-needed": "662"}  # fmt: skip
    assert tails(2)["e2e"] == {"e2e-n": "700", "e2e-p99": "280", "bounded": "P99", "e2e-bound": "280",
                               "e2e-needed": "662"}  # fmt: skip
