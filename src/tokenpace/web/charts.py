"""Charts as inline SVG, drawn on the server by pygal: nothing to fetch, no script, no CDN.

A chart is part of the page it is on: it reads without JavaScript, prints, and costs a few kilobytes
compressed, where a client-side library cost a 4.8 MB script. Each :class:`Chart` keeps what it draws beside its
SVG, so tests (and the JSON twin's ``series``) see exactly the values shown. Boxes are drawn from percentiles
this project computes (measure/stats.py), never from pygal's own quartiles, so a chart and its table agree.
Hovering a mark shows its value from an SVG ``<title>``: pygal's tooltip script is left out, and so is the
inline configuration script it writes into every chart.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pygal
from markupsafe import Markup
from pygal.style import Style

from tokenpace.board import sufficiency
from tokenpace.measure.catalogue import metric
from tokenpace.measure.stats import Figure, figure
from tokenpace.store.series import SamplePoint

MAX_BOXES = 30  # boxes in one chart: more are unreadable, and pygal's cost grows as their square (200: 0.25 s)
# Series a chart's legend lists. Past about 150 the legend (at the bottom) leaves the plot a negative height, and
# pygal's split_title then loops for ever, appending to a list: a board of 200 endpoints took all memory. Past
# this many, no legend: each mark's tooltip still names its series.
MAX_LEGEND = 60
MAX_DOTS = 400  # a dot per sample up to this many in a chart; past it lines only (each dot costs ~200 bytes)
# What a box's whiskers are, as its chart's title says: P5-P95 where enough samples bound them (sufficiency.py).
TAILS_TITLE = f"P5-P95 where n ≥ {sufficiency.samples_needed(0.95)} (fewer: withheld)"
MARKERS = "changes"  # the series of change markers, as the legend names it
LABEL_CHARS = 28  # endpoint names on an axis are cut to this, the whole name stays in the mark's title
# Colours a series may take: Okabe and Ito's "Color Universal Design" palette (2008), chosen so that people with
# each common colour-vision deficiency still tell its colours apart (tests/web/test_colours.py measures it). Its
# yellow (#F0E442) is left out: a line of it is lost on a white page. The most different come first, so the few
# endpoints of a small board are blue, vermillion and bluish green, never two reds.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
MARKER_COLOUR = "#8c959f"  # change markers: grey, apart from every series' colour
DASHES = ("6,3", "2,3", "8,3,2,3")  # an endpoint's second, third and fourth workloads' lines
_LOOK = {
    "font_family": "system-ui, -apple-system, 'Segoe UI', sans-serif",
    "background": "transparent",
    "plot_background": "transparent",
    "foreground": "#1f2328",
    "foreground_strong": "#1f2328",
    "foreground_subtle": "#8c959f",
    "title_font_size": 15,
    "legend_font_size": 12,
    "label_font_size": 11,
    "major_label_font_size": 11,
    "tooltip_font_size": 12,
    "no_data_font_size": 18,  # pygal's 64 ran past a chart's edge
}


def colours(names: Iterable[str]) -> dict[str, str]:
    """Each name's colour: the palette's entries in turn to the names A to Z (repeating past its size), so that a
    chart's colours depend on which names it holds, never on their order."""
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(sorted(set(names)))}


def endpoint_colours(configured: Iterable[str], names: Iterable[str]) -> dict[str, str]:
    """Each endpoint's colour, the same on every chart of every page whatever else it charts: the configured
    endpoints take the palette in turn A to Z (:func:`colours`), one no longer configured the entry its name
    hashes to (crc32: the same in every process)."""
    known = colours(configured)
    return {n: known.get(n) or PALETTE[zlib.crc32(n.encode()) % len(PALETTE)] for n in names}


def tints(colour: str, count: int) -> list[str]:
    """``count`` shades of one ``#rrggbb`` colour: itself, then mixed 45 % with black, 40 % and 62 % with white
    (repeating): one endpoint's several series (its workloads) told apart in its own colour."""
    rgb = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    mixes = [(0, 0.0), (0, 0.45), (255, 0.4), (255, 0.62)]  # (towards, share)
    return [
        "#" + "".join(f"{round(c + (to - c) * share):02x}" for c in rgb)
        for to, share in (mixes[i % len(mixes)] for i in range(count))
    ]


def _style(names: Sequence[str], series_colours: Mapping[str, str]) -> Style:
    """The style whose colours, in series order, are the series' own (pygal colours series by their place):
    ``series_colours``'s where it names one, else :func:`colours` among the others."""
    rest = colours(n for n in names if n not in series_colours)
    return Style(**_LOOK, colors=tuple(series_colours.get(n) or rest[n] for n in names) or PALETTE)


@dataclass(frozen=True, slots=True)
class Chart:
    """One chart: its element id and title, the values it draws per series, and the SVG drawing them."""

    id: str
    title: str
    series: Mapping[str, Sequence[Any]]
    svg: Markup


@dataclass(frozen=True, slots=True)
class Dot:
    """One mark of a scatter chart: its series (the legend), its label and where it goes."""

    group: str
    label: str
    x: float
    y: float


def _tooltips(root: ET.Element) -> ET.Element:
    """pygal's SVG without scripts, each value's ``<desc>`` also a ``<title>`` naming its series: a tooltip
    with no JavaScript."""
    for parent in list(root.iter()):
        for child in [c for c in parent if c.tag in ("script", ET.Comment)]:  # pygal's config, credits, date
            parent.remove(child)
    legend = {
        g.get("id", "").removeprefix("activate-"): g.findtext("title") or g.findtext("text") or ""
        for g in root.iter("g")
    }
    for series in root.iter("g"):
        classes = series.get("class", "").split()
        if "series" not in classes:
            continue
        name = next((legend[c] for c in classes if c in legend), "")
        for mark in series.iter("g"):
            desc = {d.get("class", "").split(" ")[0]: d.text or "" for d in mark.findall("desc")}
            if "value" in desc:
                title = ET.Element("title")
                title.text = ": ".join(
                    t for t in (desc.get("label") or desc.get("x_label") or name, desc["value"]) if t
                )
                mark.insert(0, title)
    return root


def _config(title: str, names: Sequence[str], series_colours: Mapping[str, str], **more: Any) -> dict[str, Any]:
    """A chart's settings; ``names``: its series, in the order they are added (their colours are their own)."""
    return {
        "title": title,
        "style": _style(names, series_colours),
        "js": [],  # pygal's tooltip script would come from its project's site: never a CDN
        "disable_xml_declaration": True,  # inline in the page
        "width": 720,
        "height": 340,
        "legend_at_bottom": True,
        "truncate_legend": LABEL_CHARS,
        "truncate_label": LABEL_CHARS,
        "no_data_text": "no successful samples",
        "show_legend": len(names) <= MAX_LEGEND,
        **more,
    }


def _from_zero(values: Sequence[float]) -> tuple[float, float] | None:
    """An axis from 0 to a little above the largest value: a bar of speed read from zero, never magnified."""
    top = max(values, default=0.0)
    return (0.0, top * 1.06) if top > 0 else None


def _short(value: float) -> str:
    """A value for a tooltip: four significant digits, whole from 1,000 on (never 1.235e+04)."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:,.4g}"


def _svg(chart: Any, chart_id: str) -> Markup:  # a pygal chart
    chart.uuid = chart_id  # the SVG's id and its CSS scope: the same page twice is the same bytes, not a uuid4
    # pygal builds the SVG with ElementTree, which escapes every name and label it is given.
    return Markup(chart.add_xml_filter(_tooltips).render(is_unicode=True))  # noqa: S704


class _Percentiles(pygal.Box):  # type: ignore[misc]
    """A box plot from percentiles already computed: box P25-P75, a line at the median, whiskers P5-P95."""

    withheld: frozenset[str] = frozenset()  # the boxes whose tails are withheld (boxes() sets it)

    @staticmethod
    def _box_points(values: Sequence[float], mode: str | None = None) -> tuple[tuple[float, ...], list[float]]:
        # pygal pads each series with None to the number of x labels, one per box here
        p5, p25, p50, p75, p95 = (v for v in values if v is not None)
        return (p5, p5, p25, p50, p75, p95, p95), []  # pygal's (min, low whisker, Q1, Q2, Q3, high, max)

    def _value_format(self, value: Any, serie: Any) -> str:
        p5, p25, p50, p75, p95 = (self._y_format(v) for v in serie.points[1:6])
        # boxes() draws a withheld tail's whisker at the box's edge
        tails = "P5-P95 withheld: too few samples" if serie.title in self.withheld else f"P5-P95 {p5}-{p95}"
        return f"median {p50}, P25-P75 {p25}-{p75}, {tails}"


def boxes(
    chart_id: str, title: str, unit: str, figures: Mapping[str, Figure], series_colours: Mapping[str, str] = {}
) -> Chart:
    """A box per name from its Figure's percentiles (names without any are left out), in the mapping's order;
    ``series_colours``: a box's colour, where given (its endpoint's, say). A tail too few samples bound
    (board/sufficiency.py) is withheld: its whisker ends at the box and its title says so."""
    drawn: dict[str, list[float]] = {}
    withheld: set[str] = set()
    for name, f in figures.items():
        if f.p25 is None or f.p50 is None or f.p75 is None:  # no values: no box
            continue
        shown = sufficiency.as_shown(f)
        if shown.p5 is None or shown.p95 is None:
            withheld.add(name)
        low, high = f.p25 if shown.p5 is None else shown.p5, f.p75 if shown.p95 is None else shown.p95
        drawn[name] = [low, f.p25, f.p50, f.p75, high]
    rotation = -30 if len(drawn) > 4 else 0
    top = _from_zero([v[-1] for v in drawn.values()])
    chart = _Percentiles(
        **_config(
            title,
            list(drawn),
            series_colours,
            y_title=unit,
            show_legend=False,
            x_label_rotation=rotation,
            range=top,
        )
    )
    chart.x_labels = list(drawn)
    chart.withheld = frozenset(withheld)
    for name, values in drawn.items():
        chart.add(name, values)
    return Chart(chart_id, title, drawn, _svg(chart, chart_id))


class _LabelledXY(pygal.XY):  # type: ignore[misc]
    """An XY chart that prints beside its mark the label of a value marked ``printed`` only: pygal prints every
    value's label or none, and a label on each series' dot of one level would say the same thing four times."""

    def _static_value(self, serie_node: Any, value: Any, x: float, y: float, metadata: Any, *more: Any) -> Any:
        if metadata and not metadata.get("printed"):
            metadata = {k: v for k, v in metadata.items() if k != "label"}
        return super()._static_value(serie_node, value, x, y, metadata, *more)


def scatter(
    chart_id: str,
    title: str,
    x_title: str,
    y_title: str,
    dots: Sequence[Dot],
    lines: bool = False,
    dot_size: float = 5,
    series_colours: Mapping[str, str] = {},
    printed: str | None = None,
) -> Chart:
    """One dot per item, a series (colour and legend entry) per group; with ``lines`` each group's dots joined
    in the order given (a curve through a sweep's levels). ``series_colours``: a group's colour, where given
    (else they follow the names); ``printed``: the group whose dots show their label."""
    xs, ys = _from_zero([d.x for d in dots]), _from_zero([d.y for d in dots])

    def said(xy: tuple[float, float]) -> str:
        return f"{x_title} {_short(xy[0])}, {y_title} {_short(xy[1])}"

    drawn: dict[str, list[tuple[str, float, float]]] = {}
    for d in dots:
        drawn.setdefault(d.group, []).append((d.label, d.x, d.y))
    config = _config(
        title,
        list(drawn),
        series_colours,
        stroke=lines,
        x_title=x_title,
        y_title=y_title,
        dots_size=dot_size,
        xrange=xs,
        range=ys,
    )
    chart = (_LabelledXY if printed is not None else pygal.XY)(**config, print_labels=printed is not None)
    for group, marks in drawn.items():
        values = [{"value": (x, y), "label": label, "formatter": said} for label, x, y in marks]
        chart.add(group, [{**v, "printed": True} for v in values] if group == printed else values)
    return Chart(chart_id, title, drawn, _svg(chart, chart_id))


def bars(chart_id: str, title: str, unit: str, values: Mapping[str, float]) -> Chart:
    """A bar per name, read from zero, in the mapping's order: a ladder of percentiles, say. Its series: each
    name's value, as a list of one."""
    config = _config(title, [title], {}, y_title=unit, show_legend=False, range=_from_zero(list(values.values())))
    chart = pygal.Bar(**config, value_formatter=lambda v: f"{_short(v)} {unit}")
    chart.x_labels = list(values)
    chart.add(title, [{"value": v, "label": name} for name, v in values.items()])
    return Chart(chart_id, title, {name: [v] for name, v in values.items()}, _svg(chart, chart_id))


@dataclass(frozen=True, slots=True)
class Marker:
    """A point a time chart marks apart from the samples: a detected change, at its time and its new level."""

    at: datetime
    value: float
    label: str


def over_time(
    chart_id: str,
    title: str,
    unit: str,
    groups: Mapping[str, Sequence[tuple[datetime, float]]],
    markers: Sequence[Marker] = (),
    series_colours: Mapping[str, str] = {},
    dashed: bool = False,
) -> Chart:
    """A line per group through its values in time order, a dot per value while the chart holds few enough; the
    markers as a series of their own, large grey dots without a line. ``series_colours``: a group's colour, where
    given; ``dashed``: each group's line after the first dashed in its own way (groups in shades of one colour)."""
    dots = sum(len(v) for v in groups.values()) <= MAX_DOTS
    top = _from_zero([v for values in groups.values() for _, v in values])
    times = [t for values in groups.values() for t, _ in values]
    span = (max(times) - min(times)).total_seconds() if times else 0.0
    form = "%d %b" if span > 36 * 3600 else "%H:%M" if span > 2 * 3600 else "%H:%M:%S"  # UTC, as the page says

    def clock(t: datetime) -> str:
        return t.strftime(form)

    chart = pygal.DateTimeLine(
        **_config(
            title,
            [*groups, *([MARKERS] if markers else [])],
            {**series_colours, MARKERS: MARKER_COLOUR},
            y_title=f"{unit}",
            x_title="UTC",
            show_dots=dots,
            dots_size=2.5,
            x_value_formatter=clock,
            x_labels_major_count=6,  # pygal labelled every step of its scale: 15 clocks ran into each other
            show_minor_x_labels=False,
            range=top,
        )
    )
    for i, (group, values) in enumerate(groups.items()):
        dashes = DASHES[(i - 1) % len(DASHES)] if dashed and i else None
        chart.add(group, list(values), **({"stroke_style": {"dasharray": dashes}} if dashes else {}))
    if markers:
        marks = [{"value": (m.at, m.value), "label": m.label} for m in markers]
        chart.add(MARKERS, marks, stroke=False, show_dots=True, dots_size=7)
    return Chart(chart_id, title, {**groups, **({MARKERS: [(m.at, m.value) for m in markers]} if markers else {})},
                 _svg(chart, chart_id))  # fmt: skip


_METRICS = (("speed", "output_speed"), ("ttft", "ttft_ms"))  # a chart id's part and the catalogue's figure


def sample_charts(
    groups: Mapping[str, Sequence[SamplePoint]],
    markers: Mapping[str, Sequence[Marker]] = {},
    series_colours: Mapping[str, str] = {},
    dashed: bool = False,
) -> list[Chart]:
    """An endpoint's or a model's page: each metric over time and its distribution, a series per group.

    ``groups`` holds the samples the page charts (published, successful): a failed request has no speed, and
    its count is in the tables. ``markers``: per metric (a SamplePoint attribute), what its time chart marks.
    ``series_colours``: each group's colour, its endpoint's as the board paints it (an endpoint page's workloads:
    shades of its one colour, their lines ``dashed``).
    """
    out = []
    for key, attr in _METRICS:
        m = metric(attr)
        values = {
            group: [(p.started_at, v) for p in points if (v := getattr(p, attr)) is not None]
            for group, points in groups.items()
        }
        marked = markers.get(attr, ())
        out.append(over_time(f"chart-{key}", f"{m.label} over time", m.detail, values, marked, series_colours, dashed))
        spread = {group: figure([v for _, v in vs]) for group, vs in values.items()}
        title = f"{m.label}: median, P25-P75, {TAILS_TITLE}"
        out.append(boxes(f"chart-{key}-dist", title, m.detail, spread, series_colours))
    return out
