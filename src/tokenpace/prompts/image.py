"""Images for vision workloads: a bar chart drawn locally with Pillow, its numbers chosen by a seed.

A chart has text to read (title, labels, values), so a model's answer shows whether it saw the image, and a
fresh one per request keeps image caches from helping. Only Pillow's built-in font is used: nothing is
downloaded (``ImageFont.load_default(size=...)`` needs Pillow >= 10.1).
"""

from __future__ import annotations

import base64
import io
import math
import random
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont

_QUANTITIES = (
    ("Parcels shipped per depot", "parcels"),
    ("Rainfall by station", "mm"),
    ("Books lent per library branch", "books"),
    ("Energy use per building", "MWh"),
    ("Visitors per museum", "thousand visitors"),
    ("Tickets resolved per team", "tickets"),
)
_NAMES = (
    "Alder",
    "Birch",
    "Cedar",
    "Dogwood",
    "Elm",
    "Fir",
    "Ginkgo",
    "Hazel",
    "Juniper",
    "Larch",
    "Maple",
    "Oak",
    "Pine",
    "Rowan",
    "Spruce",
    "Willow",
    "Yew",
    "Aspen",
)
_COLOURS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f")


@dataclass(frozen=True, slots=True)
class BarChart:
    """A rendered chart: PNG bytes and what is drawn in it."""

    png: bytes
    size: tuple[int, int]  # width, height in pixels
    title: str
    bars: tuple[tuple[str, int], ...]  # (label, value), left to right


def base64_text(png: bytes) -> str:
    """The PNG as the plain base64 text that Anthropic, Gemini and Ollama take inline."""
    return base64.b64encode(png).decode("ascii")


def data_uri(png: bytes) -> str:
    """``data:image/png;base64,<base64 of png>``: an image inline in an OpenAI request."""
    return "data:image/png;base64," + base64_text(png)


def _font(px: float) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=max(8, round(px)))


def bar_chart(seed: int, size: tuple[int, int] = (1200, 840)) -> BarChart:
    """A bar chart of 6 to 10 labelled values (the same seed draws the same PNG), with value labels and a scale."""
    rng = random.Random(seed)
    width, height = size
    metric, unit = rng.choice(_QUANTITIES)
    year = rng.randint(2015, 2024)
    title = f"{metric}, {year}"
    bars = tuple((name, rng.randint(12, 980)) for name in rng.sample(_NAMES, rng.randint(6, 10)))

    img = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(img)
    big, small = _font(height * 0.045), _font(height * 0.026)
    left, right, top, bottom = width * 0.11, width * 0.97, height * 0.16, height * 0.87
    draw.text((width / 2, height * 0.07), title, fill="black", font=big, anchor="mm")
    draw.text((left, top - height * 0.035), f"({unit})", fill="#444444", font=small, anchor="lm")

    top_value = math.ceil(max(v for _, v in bars) / 200) * 200
    for step in range(6):
        value = top_value * step // 5
        y = bottom - (bottom - top) * value / top_value
        draw.line([(left, y), (right, y)], fill="#dddddd" if step else "black", width=max(1, height // 400))
        draw.text((left - width * 0.01, y), str(value), fill="#444444", font=small, anchor="rm")

    slot = (right - left) / len(bars)
    for i, (label, value) in enumerate(bars):
        x0, x1 = left + slot * (i + 0.2), left + slot * (i + 0.8)
        y = bottom - (bottom - top) * value / top_value
        draw.rectangle([(x0, y), (x1, bottom)], fill=_COLOURS[i % len(_COLOURS)])
        draw.text(((x0 + x1) / 2, y - height * 0.008), str(value), fill="black", font=small, anchor="mb")
        draw.text(((x0 + x1) / 2, bottom + height * 0.015), label, fill="black", font=small, anchor="mt")

    out = io.BytesIO()
    img.save(out, format="PNG")
    return BarChart(out.getvalue(), size, title, bars)
