"""Plotly figures as plain JSON: the server decides what is drawn, static/app.js only hands it to Plotly.

Building the figure dicts here (not with plotly.graph_objects) keeps a page's cost to a few list copies, and
lets the JSON twin and the tests see exactly what the chart shows. SVG traces (``scatter``, ``box``), not
WebGL ones: they draw in any browser, including a headless one without a GPU.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from tokenpace.store.series import Point

# (element id, title): the page lays out one box per chart and the JSON block is keyed by the same ids.
TITLES: tuple[tuple[str, str], ...] = (
    ("chart-speed", "Output speed over time"),
    ("chart-ttft", "Time to first token over time"),
    ("chart-speed-dist", "Output speed distribution"),
    ("chart-ttft-dist", "TTFT distribution"),
)
_METRICS = {"speed": ("output_speed", "tok/s"), "ttft": ("ttft_ms", "ms")}


def _layout(title: str, unit: str, dates: bool) -> dict[str, Any]:
    layout: dict[str, Any] = {
        "title": {"text": title, "font": {"size": 14}},
        "height": 320,
        "margin": {"l": 56, "r": 16, "t": 40, "b": 40},
        "yaxis": {"title": {"text": unit}, "rangemode": "tozero", "zeroline": False},
        "legend": {"orientation": "h", "y": -0.2},
        "font": {"family": "system-ui, sans-serif", "size": 12},
    }
    if dates:
        layout["xaxis"] = {"type": "date"}
    return layout


def figures(groups: Mapping[str, Sequence[Point]]) -> dict[str, dict[str, Any]]:
    """Time series and box plots of output speed and TTFT, one trace per group (workload or endpoint).

    Only successful samples are drawn: a failed request has no speed, and its count is in the tables.
    """
    out: dict[str, dict[str, Any]] = {}
    for key, (attr, unit) in _METRICS.items():
        lines, boxes = [], []
        for group, points in groups.items():
            name = html.escape(group)  # Plotly reads <b>, <br> and <a href> in trace names as markup
            shown = [(p.started_at.isoformat(), getattr(p, attr)) for p in points if p.ok]
            shown = [(t, v) for t, v in shown if v is not None]
            xs, ys = [t for t, _ in shown], [v for _, v in shown]
            lines.append({"type": "scatter", "mode": "lines+markers", "name": name, "x": xs, "y": ys})
            boxes.append({"type": "box", "name": name, "y": ys, "boxpoints": "outliers", "boxmean": True})
        title = dict(TITLES)
        out[f"chart-{key}"] = {"data": lines, "layout": _layout(title[f"chart-{key}"], unit, dates=True)}
        dist = {"data": boxes, "layout": _layout(title[f"chart-{key}-dist"], unit, dates=False) | {"showlegend": False}}
        out[f"chart-{key}-dist"] = dist
    return out
