"""Badges (issue 33 part 4) from a real SQLite store: their figures, colours and 30-day uptime, the SVG's stated
size, escaping, cache headers and ETag, 404s, and the endpoint page's snippets and JSON twin."""

from __future__ import annotations

import gzip
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from starlette.responses import Response
from starlette.testclient import TestClient

from tests.store.test_windows import NOW, fail, put
from tests.webkit import EVIL
from tokenpace.board import badges, numbers
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.config.windows import WINDOWS
from tokenpace.measure.failures import ErrorKind
from tokenpace.store.database import open_store
from tokenpace.store.windows import endpoint_rows
from tokenpace.web import create_app
from tokenpace.web.badges import CACHE_CONTROL, HEIGHT, PAD_PX, text_width
from tokenpace.web.gzipped import Answer
from tokenpace.web.paths import badge_path, endpoint_path, model_badge_path, parse_badge

SVG = "{http://www.w3.org/2000/svg}"
GROQ = Endpoint("groq", "llama", "http://groq.invalid/v1", plan="free")
FAST = Endpoint("fast", "llama", "http://fast.invalid/v1")
FEW = Endpoint("few", "llama", "http://few.invalid/v1")
RARE = Endpoint("rare", "qwen", "http://rare.invalid/v1")  # the one endpoint of its model, two samples
IDLE = Endpoint("idle", "llama", "http://idle.invalid/v1")  # configured, never measured
HOSTILE = Endpoint("evil", f'{EVIL}&"x"', "http://evil.invalid/v1")
LONG = Endpoint("long", "m" * 4000, "http://long.invalid/v1")  # configured, never measured: a long name


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with open_store(str(tmp_path / "badges.db")) as store:
        for i in range(10):
            at = NOW - timedelta(minutes=1 + 2 * i)  # recent: not stale on a 1k cadence
            put(store, GROQ, at, ttft_ms=200, gap_ms=20)
            put(store, FAST, at, ttft_ms=50, gap_ms=5)
            put(store, HOSTILE, at)
        for i in range(2):
            put(store, FEW, NOW - timedelta(hours=2, minutes=i))
            put(store, RARE, NOW - timedelta(hours=2, minutes=i))
        # Ten days ago: outside the 72 h board, inside the 30-day uptime; the cancellation is tokenpace's own.
        fail(store, GROQ, NOW - timedelta(days=10), ErrorKind.HTTP_ERROR)
        fail(store, GROQ, NOW - timedelta(days=10, minutes=1), ErrorKind.CANCELLED)
        fail(store, GROQ, NOW - timedelta(days=40), ErrorKind.HTTP_ERROR)  # past 30 days: not counted
        store.flush()
        config = Config(endpoints=(GROQ, FAST, FEW, RARE, IDLE, HOSTILE, LONG), source="badges.toml")
        with TestClient(create_app(store, config, now=lambda: NOW)) as c:
            yield c


def parsed(body: bytes) -> ET.Element:
    return ET.fromstring(body)  # noqa: S314 (the SVG we served: well-formed, every name escaped)


def texts(svg: ET.Element) -> list[str]:
    return [t.text or "" for t in svg.iter(f"{SVG}text")]


def test_the_colour_rule() -> None:
    assert badges.figure_colour(True, False, False, False) == badges.BLUE
    assert badges.figure_colour(True, False, False, True) == badges.RED
    for grey in ((False, False, False, False), (True, True, False, False), (True, False, True, True)):
        assert badges.figure_colour(*grey) == badges.GREY
    shares = (None, 1.0, 0.99, 0.989, 0.95, 0.949, 0.9, 0.899, 0.0)
    colours = ("GREY", "GREEN", "GREEN", "YELLOW_GREEN", "YELLOW_GREEN", "ORANGE", "ORANGE", "RED", "RED")
    assert [badges.uptime_colour(s) for s in shares] == [getattr(badges, c) for c in colours]


def test_uptime_leaves_out_cancellations_and_says_over_what() -> None:
    b = badges.uptime_badge(99, 101, 1, "x/y")
    assert (b.label, b.value, b.colour) == ("uptime 30d", "99%", badges.GREEN)
    assert b.title == "x/y: success share over the last 30 days, every workload: 99 of 100 judged samples ok"
    none = badges.uptime_badge(0, 2, 2, "x/y")
    assert (none.value, none.colour) == ("no data", badges.GREY) and "no judged sample" in none.title
    empty = badges.figure_badge("speed", None, None, WINDOWS["72h"], "x/y")
    assert (empty.value, empty.colour, empty.title) == (
        "no data",
        badges.GREY,
        "x/y: Output speed no data, 72 h median",
    )


def test_a_speed_badge_states_its_size_figure_window_and_cache_headers(client: TestClient) -> None:
    site = client.app.state.site  # type: ignore[attr-defined]
    (row,) = endpoint_rows(site.store, WINDOWS["72h"], NOW, provider="groq", plan="free", model="llama")
    response = client.get(badge_path("groq", "free", "llama", "speed"))
    assert response.status_code == 200 and response.headers["content-type"].startswith("image/svg+xml")
    assert response.headers["cache-control"] == CACHE_CONTROL == "public, max-age=300"
    svg = parsed(response.content)
    value = f"{numbers.figure_text(row.output_speed.p50)} tok/s"
    assert texts(svg) == ["Output speed", value]
    width = text_width("Output speed") + text_width(value) + 4 * PAD_PX
    assert (svg.get("width"), svg.get("height")) == (str(width), str(HEIGHT))
    assert [r.get("fill") for r in svg.iter(f"{SVG}rect")][2] == badges.BLUE
    assert (
        svg.findtext(f"{SVG}title") == f"groq:free/llama: Output speed {value}, 72 h median on workload 1k, 10 samples"
    )
    ttft = parsed(client.get(badge_path("groq", "free", "llama", "ttft")).content)
    assert texts(ttft) == ["TTFT", f"{numbers.figure_text(row.ttft_ms.p50, 'ms')} ms"]


def test_an_etag_is_answered_304_and_the_gzip_twin_has_its_own(client: TestClient) -> None:
    url = badge_path("fast", "default", "llama", "speed")
    first = client.get(url)
    tag = first.headers["etag"]
    assert tag.startswith('"') and tag.endswith('"') and len(tag) == 34
    for asked in (tag, f'"other", W/{tag}', "*"):
        again = client.get(url, headers={"If-None-Match": asked})
        assert again.status_code == 304 and again.content == b"", asked
        assert (again.headers["etag"], again.headers["cache-control"]) == (tag, CACHE_CONTROL)
    assert client.get(url, headers={"If-None-Match": '"other"'}).status_code == 200
    big = Response(b"x" * 2000, headers={"ETag": '"abc"'})
    twin = Answer.of(big).gzipped
    assert twin is not None and twin.headers["etag"] == '"abc-gzip"' and gzip.decompress(twin.body) == b"x" * 2000


def test_uptime_is_30_days_of_published_samples_without_cancellations(client: TestClient) -> None:
    svg = parsed(client.get(badge_path("groq", "free", "llama", "uptime")).content)
    assert texts(svg) == ["uptime 30d", "90.9%"]  # 10 of 11 judged: the cancellation out, the 40-day-old one out
    assert [r.get("fill") for r in svg.iter(f"{SVG}rect")][2] == badges.ORANGE
    assert svg.findtext(f"{SVG}title", "").endswith("every workload: 10 of 11 judged samples ok")


def test_grey_for_too_few_or_none_and_404_for_what_is_not_there(client: TestClient) -> None:
    few = parsed(client.get(badge_path("few", "default", "llama", "speed")).content)
    assert texts(few)[1] == "too few samples" and [r.get("fill") for r in few.iter(f"{SVG}rect")][2] == badges.GREY
    idle = parsed(client.get(badge_path("idle", "default", "llama", "ttft")).content)
    assert texts(idle)[1] == "no data"
    for missing in (
        badge_path("nobody", "default", "llama", "speed"), badge_path("groq", "free", "llama", "e2e"),
        "/badge/endpoint/groq/free/llama.json/speed.svg", "/badge/endpoint/groq/free/llama/speed.png",
        model_badge_path("llama", "e2e"), model_badge_path("nobody", "uptime"), "/badge/", "/badge/x/speed.svg",
    ):  # fmt: skip
        response = client.get(missing)
        assert response.status_code == 404 and response.headers["content-type"].startswith("text/plain"), missing
    assert client.get("/badge/endpoint/g%00/free/llama/speed.svg").status_code == 400


def test_a_hostile_name_is_escaped_and_a_model_badge_names_its_best_endpoint(client: TestClient) -> None:
    response = client.get(badge_path("evil", "default", f'{EVIL}&"x"', "speed"))
    assert response.status_code == 200 and EVIL.encode() not in response.content
    assert parsed(response.content).findtext(f"{SVG}title", "").startswith(f'evil/{EVIL}&"x": Output speed ')
    model = parsed(client.get(model_badge_path("llama", "speed")).content)
    assert model.findtext(f"{SVG}title", "").startswith("llama on fast/llama: Output speed ")
    quickest = parsed(client.get(model_badge_path("llama", "ttft")).content)
    assert quickest.findtext(f"{SVG}title", "").startswith("llama on fast/llama: TTFT ")
    rare = parsed(client.get(model_badge_path("qwen", "speed")).content)
    assert texts(rare)[1] == "too few samples" and [r.get("fill") for r in rare.iter(f"{SVG}rect")][2] == badges.GREY
    assert rare.findtext(f"{SVG}title") == "qwen: no endpoint has enough samples and succeeds"


def test_the_endpoint_page_shows_its_badges_with_escaped_snippets(client: TestClient) -> None:
    model = f'{EVIL}&"x"'
    twin = client.get(endpoint_path("evil", "default", model, "json")).json()
    assert twin["badges"] == {m: badge_path("evil", "default", model, m) for m in ("speed", "ttft", "uptime")}
    page = client.get(endpoint_path("evil", "default", model))
    assert page.status_code == 200 and EVIL not in page.text
    url = badge_path("evil", "default", model, "speed")
    assert f'<img src="{url}"' in page.text
    markdown = f"[![Output speed]({url})]({endpoint_path('evil', 'default', model)})"
    assert f'<code class="embed">{markdown}</code>' in page.text
    assert "&lt;img src=&#34;" + url in page.text and "&amp;lt;script&amp;gt;" in page.text  # the HTML snippet, shown


def test_a_long_name_never_makes_a_badge_long(client: TestClient) -> None:
    for metric in ("speed", "uptime"):
        response = client.get(badge_path("long", "default", LONG.model, metric))
        assert response.status_code == 200 and len(response.content) < 1500, len(response.content)
        title = parsed(response.content).findtext(f"{SVG}title", "")
        assert title.startswith("long/" + "m" * 115) and "…" in title


@pytest.mark.parametrize(
    ("provider", "plan", "model"),
    [("groq", "free", "llama"), ("a/b", "p.json", "org/model.svg"), ("x", "y", "speed.svg"), ("é", "~", "m/s/x.json")],
)
def test_a_badge_path_reads_back_as_the_names_it_was_built_from(provider: str, plan: str, model: str) -> None:
    for metric in ("speed", "uptime"):
        path = badge_path(provider, plan, model, metric)
        assert parse_badge(path.removeprefix("/badge/")) == ("endpoint", (provider, plan, model), metric)
        path = model_badge_path(model, metric)
        assert parse_badge(path.removeprefix("/badge/")) == ("model", (model,), metric)


def test_a_model_uptime_badge_is_its_ranked_endpoint_that_kept_the_highest(client: TestClient) -> None:
    # groq and fast are ranked for llama: fast 10 of 10 over 30 days, groq 10 of 11 (90.9 %, its endpoint badge).
    svg = parsed(client.get(model_badge_path("llama", "uptime")).content)
    assert texts(svg) == ["uptime 30d", "100%"] and [r.get("fill") for r in svg.iter(f"{SVG}rect")][2] == badges.GREEN
    assert svg.findtext(f"{SVG}title") == (
        "llama on fast/llama: success share over the last 30 days, every workload: 10 of 10 judged samples ok;"
        " the best of the 2 endpoints ranked for it"
    )
    rare = parsed(client.get(model_badge_path("qwen", "uptime")).content)  # two samples: none ranked
    assert texts(rare) == ["uptime 30d", "too few samples"] and "no endpoint ranked" in rare.findtext(f"{SVG}title", "")
    missing = client.get(model_badge_path("nobody", "uptime"))
    assert missing.status_code == 404 and "no endpoint serving model nobody" in missing.text
