"""Charts draw what they are given, where it belongs, as inert SVG: no script, every name escaped."""

from __future__ import annotations

import re
import resource
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

from tests.webkit import EVIL, SVG, legend, marks
from tokenpace.measure.stats import figure
from tokenpace.store.series import SamplePoint
from tokenpace.web import charts

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def _svg(chart: charts.Chart) -> ET.Element:
    return ET.fromstring(str(chart.svg))  # noqa: S314 (our own SVG; well-formed, or this fails)


def _no_script(svg: ET.Element) -> None:
    assert not [e for e in svg.iter() if isinstance(e.tag, str) and e.tag.endswith("script")]
    assert not [k for e in svg.iter() for k in e.attrib if k.lower().startswith("on")]  # no event handlers


def test_a_box_spans_p25_to_p75_with_whiskers_at_p5_and_p95() -> None:
    spread = figure([float(v) for v in range(1, 101)])  # P5 5.95, P25 25.75, P50 50.5, P75 75.25, P95 95.05
    chart = charts.boxes("b", "Speed", "tok/s", {"wide": spread, "narrow": figure([40.0, 41.0, 42.0])})
    svg = _svg(chart)
    _no_script(svg)
    assert chart.series["wide"] == [spread.p5, spread.p25, spread.p50, spread.p75, spread.p95]
    box = next(g for g in svg.iter(f"{SVG}g") if g.get("class") == "box")
    rect = box.find(f"{SVG}rect")
    assert rect is not None
    top, height = float(rect.get("y", "nan")), float(rect.get("height", "nan"))
    # Horizontal strokes: whisker ends and the median, by their y; pygal draws y downwards.
    ys = sorted(
        {
            float(m.group(1))
            for p in box.iter(f"{SVG}path")
            if (m := re.match(r"M[\d.]+ ([\d.]+) L[\d.]+ \1", p.get("d", "")))
        }
    )
    low, median, high = ys[-1], ys[1], ys[0]  # P5 lowest on screen (largest y), then the median, P95 highest
    assert spread.p5 is not None and spread.p25 is not None and spread.p75 is not None and spread.p95 is not None
    scale = height / (spread.p75 - spread.p25)  # pixels per tok/s, from the box itself
    assert abs((low - high) - scale * (spread.p95 - spread.p5)) < 0.5
    assert top < median < top + height
    assert abs((top + height - median) - scale * (50.5 - spread.p25)) < 0.5
    assert marks(svg)[0] == "wide: median 50.5, P25-P75 25.75-75.25, P5-P95 5.95-95.05"


def test_a_board_of_many_endpoints_gets_a_box_each() -> None:
    spreads = {f"provider{i:02d}/model": figure([float(i + v) for v in range(20)]) for i in range(40)}
    svg = _svg(charts.boxes("b", "Speed", "tok/s", spreads))
    assert len(marks(svg)) == 40 and marks(svg)[39].startswith("provider39/model: median 48.5,")


def test_names_are_escaped_and_marks_carry_their_series() -> None:
    chart = charts.over_time("t", "TTFT", "ms", {EVIL: [(T0 + timedelta(minutes=i), 100.0 + i) for i in range(3)]})
    text = str(chart.svg)
    assert "<script" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    svg = _svg(chart)
    _no_script(svg)
    assert [m.split(": ", 1)[0] for m in marks(svg)] == [EVIL] * 3  # the whole name, unescaped once parsed
    assert marks(svg)[1].endswith("00:01:00: 101")  # a span of minutes: the clock to the second
    assert legend(svg) == [EVIL]


def test_a_time_axis_has_few_enough_clocks_to_read() -> None:
    """Five minutes of samples 20 s apart: pygal labelled each of its 15 steps, and at 720 px the clocks ran into
    each other; at most six are drawn."""
    chart = charts.over_time("t", "TTFT", "ms", {"1k": [(T0 + timedelta(seconds=20 * i), 100.0) for i in range(15)]})
    axis = next(g for g in _svg(chart).iter(f"{SVG}g") if g.get("class") == "axis x")
    clocks = [t.text for t in axis.iter(f"{SVG}text") if t.text]
    assert 2 <= len(clocks) <= 6 and clocks[0] == "00:00:00", clocks


def test_dots_until_a_chart_holds_too_many_then_lines_only() -> None:
    few = {"1k": [(T0 + timedelta(minutes=i), 10.0) for i in range(charts.MAX_DOTS)]}
    many = {"1k": [(T0 + timedelta(minutes=i), 10.0) for i in range(charts.MAX_DOTS + 1)]}
    assert len(marks(_svg(charts.over_time("a", "x", "ms", few)))) == charts.MAX_DOTS
    busy = _svg(charts.over_time("b", "x", "ms", many))
    assert marks(busy) == [] and any(p.get("class", "").startswith("line") for p in busy.iter(f"{SVG}path"))


def test_a_scatter_has_a_dot_per_item_and_a_series_per_group() -> None:
    dots = [charts.Dot("groq", "groq/a", 120.0, 300.0), charts.Dot("groq", "groq/b", 200.0, 250.0),
            charts.Dot("local", "local/c", 40.0, 80.0)]  # fmt: skip
    chart = charts.scatter("s", "TTFT against speed", "TTFT (ms)", "tok/s", dots)
    svg = _svg(chart)
    assert legend(svg) == ["groq", "local"]
    assert marks(svg) == ["groq/a: TTFT (ms) 120, tok/s 300", "groq/b: TTFT (ms) 200, tok/s 250",
                          "local/c: TTFT (ms) 40, tok/s 80"]  # fmt: skip
    labels = [t.text for g in svg.iter(f"{SVG}g") if "axis" in g.get("class", "") for t in g.iter(f"{SVG}text")]
    assert "0" in labels  # both axes start at zero: a dot's distance from the origin is its figure


def test_a_scatter_of_200_endpoints_draws_without_a_legend_rather_than_loop() -> None:
    """200 series' legend left the plot a negative height, where pygal's title split looped for ever, taking all
    memory (a board of 200 endpoints, bench/flood.py): drawn in a child process bounded to 2 GB and 60 s."""
    code = (
        "from tokenpace.web import charts\n"
        "dots = [charts.Dot(f'p{i:03d}/model', f'p{i:03d}/model', 100.0 + i, 50.0 + i) for i in range(200)]\n"
        "chart = charts.scatter('s', 'TTFT against output speed', 'TTFT (ms)', 'Output speed (tok/s)', dots)\n"
        "print(len(chart.svg))"
    )

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, preexec_fn=bounded)
    assert done.returncode == 0, done.stderr[-500:]
    few = _svg(
        charts.scatter("s", "t", "x", "y", [charts.Dot(f"p{i}", f"p{i}", i, i) for i in range(charts.MAX_LEGEND)])
    )
    many = [charts.Dot(f"p{i}", f"p{i}", i, i) for i in range(charts.MAX_LEGEND + 1)]
    assert len(legend(few)) == charts.MAX_LEGEND and legend(_svg(charts.scatter("s", "t", "x", "y", many))) == []


def test_a_scatter_with_lines_joins_each_group_in_the_order_given() -> None:
    dots = [charts.Dot("p50", "c 1", 100.0, 120.0), charts.Dot("p50", "c 4", 400.0, 12_345.6),
            charts.Dot("p50", "c 2", 200.0, 150.0)]  # fmt: skip
    svg = _svg(charts.scatter("l", "Curve", "tok/s", "ms", dots, lines=True))
    _no_script(svg)
    assert marks(svg) == ["c 1: tok/s 100, ms 120", "c 4: tok/s 400, ms 12,346", "c 2: tok/s 200, ms 150"]
    lines = [p.get("d", "") for p in svg.iter(f"{SVG}path") if p.get("class", "").startswith("line")]
    assert len(lines) == 1 and lines[0].count(" ") >= 2  # one path through the three dots
    xs = [float(x) for x in re.findall(r"([\d.]+) [\d.]+", lines[0])]
    assert xs[0] < xs[2] < xs[1]  # drawn as given (1, 4, 2), not sorted by x
    plain = _svg(charts.scatter("s", "Dots", "tok/s", "ms", dots))
    assert not [p for p in plain.iter(f"{SVG}path") if p.get("class", "").startswith("line")]


def test_bars_draw_each_value_from_zero_with_its_name_and_unit() -> None:
    chart = charts.bars("b", "TTFT", "ms", {"p50": 100.5, "p99": 250.0, EVIL: 12_345.6})
    svg = _svg(chart)
    _no_script(svg)
    assert marks(svg) == ["p50: 100.5 ms", "p99: 250 ms", f"{EVIL}: 12,346 ms"]
    assert chart.series == {"p50": [100.5], "p99": [250.0], EVIL: [12_345.6]}
    rects = {
        float(r.get("height", "0")) for r in svg.iter(f"{SVG}rect") if r.get("class") == "rect reactive tooltip-trigger"
    }
    assert len(rects) == 3 and abs(max(rects) / min(rects) - 12_345.6 / 100.5) < 0.5  # heights from zero


def test_sample_charts_draw_successful_samples_only() -> None:
    ok = SamplePoint(T0, "1k", True, None, 300.0, 120.0, 1000.0)
    failed = SamplePoint(T0 + timedelta(minutes=1), "1k", False, "http_error", None, None, None, http_status=500)
    drawn = {c.id: c for c in charts.sample_charts({"1k": [ok, failed]})}
    assert list(drawn) == ["chart-speed", "chart-speed-dist", "chart-ttft", "chart-ttft-dist"]
    assert drawn["chart-speed"].series == {"1k": [(T0, 300.0)]}
    assert drawn["chart-ttft-dist"].series == {"1k": [120.0] * 5}
    empty = charts.sample_charts({})
    assert all("no successful samples" in str(c.svg) for c in empty)
    # in type that fits the chart (pygal's 64 px ran past its edge): an average glyph is about 0.6 em wide
    size = float(re.findall(r"\.no_data\{[^}]*font-size:([\d.]+)px", str(empty[0].svg))[0])
    assert 0.6 * size * len("no successful samples") < 720 / 2


def test_change_markers_stay_dots_when_the_samples_are_lines_only() -> None:
    many = {"1k": [(T0 + timedelta(minutes=i), 300.0 if i < 300 else 150.0) for i in range(charts.MAX_DOTS + 1)]}
    marker = charts.Marker(T0 + timedelta(minutes=300), 150.0, "1k: output speed 300 -> 150 tok/s (slower)")
    chart = charts.over_time("m", "Speed", "tok/s", many, [marker])
    svg = _svg(chart)
    assert legend(svg) == ["1k", charts.MARKERS]
    assert marks(svg) == [f"{marker.label}: 05:00: 150"]  # the only dot: what changed, when, to what
    assert chart.series[charts.MARKERS] == [(marker.at, 150.0)]


def series_colours(chart: charts.Chart) -> dict[str, str]:
    """Each series' colour as the SVG paints it: pygal classes the Nth series added ``color-N``, and its CSS
    fills that class."""
    fills = dict(re.findall(rf"#chart-{chart.id} \.color-(\d+)[^{{]*\{{stroke:(#\w+);fill", str(chart.svg)))
    return {name: fills[str(i)] for i, name in enumerate(chart.series)}


def test_a_series_keeps_its_colour_whatever_its_place_and_the_other_series() -> None:
    """Issue 21 item 9, issue 29 item 3: an endpoint's colour follows its name among the configured endpoints,
    not its row: re-ranked, or charted with fewer endpoints, it keeps it; the configured endpoints of one chart
    have different colours; one no longer configured keeps one colour too, wherever it is charted."""
    names = ["quick/sim", "middling/sim", "sluggish/sim", "groq/llama-3.1-8b", "together/llama-3.1-8b"]

    def drawn(order: list[str], configured: list[str] = names) -> dict[str, str]:
        dots = [charts.Dot(name, name, i + 1.0, 10.0 * (i + 1)) for i, name in enumerate(order)]
        paint = charts.endpoint_colours(configured, order)
        return series_colours(charts.scatter("c", "TTFT against speed", "ms", "tok/s", dots, series_colours=paint))

    first = drawn(names)
    assert len(set(first.values())) == len(names)  # told apart
    assert first["groq/llama-3.1-8b"] == charts.PALETTE[0]  # the palette in turn, A to Z
    assert drawn(list(reversed(names))) == first  # re-ranked
    assert drawn([names[3], names[0]]) == {n: first[n] for n in (names[3], names[0])}  # the others filtered out
    gone = drawn(["old/sim", names[0]])["old/sim"]  # a name not configured: one colour, whatever else is
    assert gone in charts.PALETTE and drawn(["old/sim"], names[1:]) == {"old/sim": gone}  # charted or configured
    speeds = {n: figure([float(v) for v in range(10, 20)]) for n in names}
    paint = charts.endpoint_colours(names, names)
    assert series_colours(charts.boxes("b", "Speed", "tok/s", dict(reversed(speeds.items())), paint)) == first
    t = [(T0 + timedelta(minutes=i), 5.0 * i) for i in range(3)]
    over = charts.over_time("t", "Speed over time", "tok/s", {names[3]: t, names[0]: t}, series_colours=paint)
    assert series_colours(over) == {names[3]: first[names[3]], names[0]: first[names[0]]}


def test_series_not_painted_share_out_the_palette_a_to_z() -> None:
    """A chart with no colours given (a load test's): its series take the palette's colours in turn, by name, so
    no two of up to seven series share one, and their order changes none."""
    dots = [charts.Dot(g, g, i + 1.0, 2.0) for i, g in enumerate(["p99", "p50", "p90"])]
    drawn = series_colours(charts.scatter("s", "Latency", "tok/s", "ms", dots))
    assert drawn == {"p50": charts.PALETTE[0], "p90": charts.PALETTE[1], "p99": charts.PALETTE[2]}
    assert series_colours(charts.scatter("s", "Latency", "tok/s", "ms", dots[::-1])) == drawn


def test_tints_keep_the_colour_and_differ() -> None:
    """An endpoint page's workloads: the endpoint's own colour first, then shades of it, each different."""
    shades = charts.tints("#0072B2", 4)
    assert shades[0] == "#0072b2" and len(set(shades)) == 4
    assert charts.tints("#000000", 1) == ["#000000"]
