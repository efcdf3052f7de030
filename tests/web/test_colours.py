"""Chart colours people tell apart, and one per endpoint: the board's, on every chart of every page (issue 29 item 3).

How far apart two colours look is CIEDE2000 (CIE 142-2001) in CIELAB under D65; how they look to people with each
common colour-vision deficiency, Machado, Oliveira and Fernandes' simulation (IEEE TVCG 2009, severity 1.0).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from tests.webkit import SVG, Fleet, charts, filled_store
from tokenpace.store.database import Store
from tokenpace.web import charts as drawing
from tokenpace.web import create_app
from tokenpace.web.paths import endpoint_path, model_path

Matrix = tuple[tuple[float, float, float], ...]
VISIONS: dict[str, Matrix] = {
    "typical": ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
    "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602), (0.004733, 0.691367, 0.303900)),
}
APART = 10.0  # CIEDE2000: 1 is about the least difference seen side by side; 10 is plain at a glance
OLD_RED, OLD_MAGENTA = "#cf222e", "#bf3989"  # sim-flaky's and sim-fast's colours before this palette


def _lab(colour: str, vision: Matrix) -> tuple[float, float, float]:
    """A ``#rrggbb`` colour as one seeing with ``vision`` sees it, in CIELAB (D65)."""

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    rgb = [linear(int(colour[i : i + 2], 16) / 255) for i in (1, 3, 5)]
    r, g, b = (min(1.0, max(0.0, sum(m * c for m, c in zip(row, rgb, strict=True)))) for row in vision)
    xyz = (
        (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047,
        0.2126 * r + 0.7152 * g + 0.0722 * b,
        (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883,
    )
    fx, fy, fz = (t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116 for t in xyz)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def _de2000(one: tuple[float, float, float], two: tuple[float, float, float]) -> float:
    """CIEDE2000 colour difference (Sharma, Wu and Dalal's formulation, 2005)."""
    (l1, a1, b1), (l2, a2, b2) = one, two
    mean_c = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(mean_c**7 / (mean_c**7 + 25**7)))
    c1, c2 = math.hypot((1 + g) * a1, b1), math.hypot((1 + g) * a2, b2)
    h1, h2 = (math.degrees(math.atan2(b, (1 + g) * a)) % 360 for a, b in ((a1, b1), (a2, b2)))
    dh = 0.0 if c1 * c2 == 0 else (h2 - h1 + 180) % 360 - 180
    big_dh = 2 * math.sqrt(c1 * c2) * math.sin(math.radians(dh / 2))
    mean_l, mean_cp = (l1 + l2) / 2, (c1 + c2) / 2
    if c1 * c2 == 0:
        mean_h = h1 + h2
    elif abs(h1 - h2) <= 180:
        mean_h = (h1 + h2) / 2
    else:
        mean_h = (h1 + h2 + 360) / 2 if h1 + h2 < 360 else (h1 + h2 - 360) / 2
    t = (
        1
        - 0.17 * math.cos(math.radians(mean_h - 30))
        + 0.24 * math.cos(math.radians(2 * mean_h))
        + 0.32 * math.cos(math.radians(3 * mean_h + 6))
        - 0.20 * math.cos(math.radians(4 * mean_h - 63))
    )
    rotation = (
        -math.sin(math.radians(60 * math.exp(-(((mean_h - 275) / 25) ** 2))))
        * 2
        * math.sqrt(mean_cp**7 / (mean_cp**7 + 25**7))
    )
    sl = 1 + 0.015 * (mean_l - 50) ** 2 / math.sqrt(20 + (mean_l - 50) ** 2)
    sc, sh = 1 + 0.045 * mean_cp, 1 + 0.015 * mean_cp * t
    dl, dc, dhh = (l2 - l1) / sl, (c2 - c1) / sc, big_dh / sh
    return math.sqrt(dl**2 + dc**2 + dhh**2 + rotation * dc * dhh)


def _closest(palette: tuple[str, ...], vision: Matrix) -> float:
    return min(_de2000(_lab(a, vision), _lab(b, vision)) for a, b in itertools.combinations(palette, 2))


def test_the_formula_gives_the_published_differences() -> None:
    """Sharma et al.'s test pairs 1 and 17 (CIELAB in, CIEDE2000 out), and a colour is its own."""
    assert _de2000((50, 2.6772, -79.7751), (50, 0, -82.7485)) == pytest.approx(2.0425, abs=1e-4)
    assert _de2000((50, 2.5, 0), (73, 25, -18)) == pytest.approx(27.1492, abs=1e-4)
    assert _de2000(_lab("#0072B2", VISIONS["typical"]), _lab("#0072B2", VISIONS["typical"])) == 0


@pytest.mark.parametrize("vision", list(VISIONS))
def test_every_two_colours_of_the_palette_are_told_apart(vision: str) -> None:
    """Issue 29: sim-flaky's red and sim-fast's magenta were hard to tell apart; the old palette's closest pair
    was 1.1 apart to a deuteranope. Every pair of this one is at least APART, with every common deficiency."""
    assert _closest(drawing.PALETTE, VISIONS[vision]) >= APART
    assert _de2000(_lab(OLD_RED, VISIONS[vision]), _lab(OLD_MAGENTA, VISIONS[vision])) < _de2000(
        _lab(drawing.PALETTE[0], VISIONS[vision]), _lab(drawing.PALETTE[1], VISIONS[vision])
    )  # the first two, a two-endpoint board's: further apart than the red and magenta were


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, Fleet]]:
    store, fleet = filled_store(tmp_path_factory.mktemp("colours") / "web.db")
    with store:
        yield store, fleet


def _painted(page: str, chart_id: str) -> dict[str, str]:
    """Each series' colour as the page paints it, by the series' name (the first part of each mark's title):
    pygal classes the Nth series ``color-N`` and its CSS fills that class."""
    fills = dict(re.findall(rf"#chart-{chart_id} \.color-(\d+)[^{{]*\{{stroke:(#\w+);fill", page))
    out = {}
    for g in charts(page)[chart_id].iter(f"{SVG}g"):
        classes = g.get("class", "").split()
        index = next((c.removeprefix("color-") for c in classes if c.startswith("color-")), None)
        title = next((t.text or "" for t in g.iter(f"{SVG}title")), "")
        if "series" in classes and index is not None and title:
            out[title.split(": ")[0].split(" @")[0]] = fills[index].lower()
    return out


def test_an_endpoint_has_the_boards_colour_on_every_chart_of_every_page(filled: tuple[Store, Fleet]) -> None:
    """The board's boxes and dots, the endpoint's own page (its workloads in its colour) and its model's page
    paint an endpoint alike; the board's endpoints each have their own colour."""
    store, fleet = filled
    with TestClient(create_app(store, fleet.config)) as client:
        board = client.get("/").text
        boxes, dots = _painted(board, "chart-board-speed"), _painted(board, "chart-board-ttft-speed")
        assert set(boxes) == {e.name for e in fleet.config.endpoints}
        assert dots == boxes and len(set(boxes.values())) == len(boxes)  # one colour each
        for endpoint in (fleet.fast, fleet.slow, fleet.flaky):
            colour = boxes[endpoint.name]
            own = client.get(endpoint_path(endpoint.provider, endpoint.plan, endpoint.model)).text
            for chart_id in ("chart-speed", "chart-ttft", "chart-speed-dist"):
                assert _painted(own, chart_id)["1k"] == colour, (endpoint.name, chart_id)
            heat = re.search(r'id="heatmap" style="--hue: (#\w+)"', own)  # its speed by hour, in its colour
            assert heat is not None and heat.group(1).lower() == colour, endpoint.name
            model = client.get(model_path(endpoint.model)).text
            assert _painted(model, "chart-ttft")[endpoint.name] == colour, endpoint.name
        slow = client.get(endpoint_path(fleet.slow.provider, fleet.slow.plan, fleet.slow.model)).text
        shades = _painted(slow, "chart-ttft")
        assert list(shades) == ["1k", "tiny"] and shades["tiny"] != shades["1k"]  # its workloads, its shades
