"""Page URLs (issue 10 item 1): one route per page with an optional ``.json``, names tilde-encoded so any name
(``x.json``, ``org/model``, ``%``, unicode) has an HTML page and a JSON twin; bad parameters are one 400 line;
an endpoint row has one JSON shape wherever it is printed."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from starlette.routing import Match
from starlette.testclient import TestClient

from tests.store.test_windows import stream
from tokenpace import errors
from tokenpace.board.numbers import figure_text, percent
from tokenpace.cli import main
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.errors import BadRequest, ConfigError, TokenpaceError
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.sample import make_sample
from tokenpace.store.database import open_store
from tokenpace.web import create_app
from tokenpace.web.paths import decode_part, encode_part, endpoint_path, model_path, parse_endpoint, parse_model

# A model x and a model x.json side by side: /model/x.json must not be ambiguous between them.
PLAIN = Endpoint("dots.co", "x", "http://dots.invalid/v1")
DOTTED = Endpoint("dots.co", "x.json", "http://dots.invalid/v1", plan="a/b")
SLASHED = Endpoint("hub", "org/name-3.1", "http://hub.invalid/v1")
ODD = Endpoint("odd", "模型 100% ~ok+", "http://odd.invalid/v1")
ALL = (PLAIN, DOTTED, SLASHED, ODD)
NAMES = ["x", "x.json", ".json", "org/name-3.1", "模型 100% ~ok+", "a~2Eb", "..", "/lead", "trail/", 'tab\tquote"<']


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("urls") / "urls.db"
    now = datetime.now(UTC)
    with open_store(str(path)) as store:
        for i in range(4):
            for n, e in enumerate(ALL):
                store.add_sample(make_sample("r", e, "1k", now - timedelta(minutes=5 + i), stream(100 + 50 * n, 5)))
        for i in range(3):  # hub: 7 of 8 succeed, a success rate of 87.5% (the terminal once wrote 88%)
            store.add_sample(make_sample("r", SLASHED, "1k", now - timedelta(minutes=20 + i), stream(200, 5)))
        failed = stream(200, 5, failure=Failure(ErrorKind.HTTP_ERROR, "overloaded", 503))
        store.add_sample(make_sample("r", SLASHED, "1k", now - timedelta(minutes=30), failed))
        store.flush()
    yield path


@pytest.fixture(scope="module")
def client(db: Path) -> Iterator[TestClient]:
    with open_store(str(db)) as store, TestClient(create_app(store, Config(endpoints=ALL))) as c:
        yield c


@pytest.mark.parametrize("name", NAMES)
def test_a_name_round_trips_and_never_ends_in_a_format(name: str) -> None:
    encoded = encode_part(name, keep="/")
    assert "." not in encoded and "%" not in encoded and decode_part(encoded) == name
    assert parse_model(model_path(name).removeprefix("/model/")) == (name, "html")
    assert parse_model(model_path(name, "json").removeprefix("/model/")) == (name, "json")
    assert parse_endpoint(endpoint_path(name, name, name, "json").removeprefix("/endpoint/")) == (
        name,
        name,
        name,
        "json",
    )


def test_links_from_before_tilde_encoding_still_resolve() -> None:
    assert parse_model("gpt-4.1") == ("gpt-4.1", "html")
    assert parse_model("gpt-4.1.json") == ("gpt-4.1", "json")
    assert parse_model("org/name%3A3b") == ("org/name:3b", "html")
    assert parse_endpoint("a%2Fb/default/m+1.json") == ("a/b", "default", "m+1", "json")


def test_a_model_named_x_json_has_a_page_and_a_twin_beside_model_x(client: TestClient) -> None:
    assert model_path("x.json") == "/model/x~2Ejson"
    assert client.get("/model/x").headers["content-type"].startswith("text/html")
    assert client.get("/model/x.json").json()["model"] == "x"
    page = client.get("/model/x~2Ejson")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<h1>x.json" in page.text or ">x.json<" in page.text
    assert client.get("/model/x~2Ejson.json").json()["model"] == "x.json"


@pytest.mark.parametrize("e", ALL, ids=lambda e: e.name)
def test_every_endpoint_and_model_has_a_page_whose_alternate_link_is_its_twin(client: TestClient, e: Endpoint) -> None:
    for path, key in ((endpoint_path(e.provider, e.plan, e.model), "endpoint"), (model_path(e.model), "model")):
        page = client.get(path)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html"), (path, page.text)
        found = re.search(r'<link rel="alternate" type="application/json" href="([^"]*)">', page.text)
        assert found, path
        twin = html.unescape(found.group(1))
        assert twin.split("?")[0] == path + ".json"
        data = client.get(twin).json()
        assert (data["endpoint"]["model"] if key == "endpoint" else data["model"]) == e.model


def test_every_link_on_the_leaderboard_leads_to_a_page(client: TestClient) -> None:
    page = client.get("/").text
    links = {html.unescape(h) for h in re.findall(r'href="(/(?:endpoint|model)/[^"]*)"', page)}
    assert {endpoint_path(e.provider, e.plan, e.model) for e in ALL} | {model_path(e.model) for e in ALL} <= links
    assert "/endpoint/dots~2Eco/a~2Fb/x~2Ejson" in links
    for link in links:
        r = client.get(link)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html"), link


@pytest.mark.parametrize(
    ("page", "twin"),
    [("/", "/leaderboard.json"), ("/leaderboard", "/leaderboard.json"), ("/methodology", "/methodology.json"),
     ("/model/x~2Ejson", "/model/x~2Ejson.json"),
     ("/endpoint/hub/default/org/name-3~2E1", "/endpoint/hub/default/org/name-3~2E1.json")],
)  # fmt: skip
def test_a_page_and_its_twin_are_one_route(client: TestClient, page: str, twin: str) -> None:
    def route(path: str) -> Any:
        scope = {"type": "http", "method": "GET", "path": path, "root_path": ""}
        (found,) = [r for r in client.app.routes if r.matches(scope)[0] == Match.FULL]  # type: ignore[attr-defined]
        return found.endpoint

    assert route(page) is route(twin)
    assert client.get(page).headers["content-type"].startswith("text/html")
    assert client.get(twin).headers["content-type"].startswith("application/json")


def test_bad_request_is_its_own_branch_of_the_tree() -> None:
    assert issubclass(BadRequest, TokenpaceError) and not issubclass(BadRequest, ConfigError)
    assert BadRequest.exit_code == 2
    assert "BadRequest" in (errors.__doc__ or "")


@pytest.mark.parametrize(
    "path",
    ["/?window=1y", "/leaderboard.json?sort=fast", "/model/x.json?window=1y", "/model/x~00", "/samples.csv?since=soon"],
)
def test_a_bad_parameter_is_one_400_line(client: TestClient, path: str) -> None:
    r = client.get(path)
    assert r.status_code == 400, (path, r.status_code)
    if path.split("?")[0].endswith(".json"):
        message = r.json()["error"]
        assert message and "\n" not in message
    elif ".csv" in path:
        assert r.text.count("\n") == 1
    else:
        assert "<h1>" in r.text


def _row(entry: dict[str, Any]) -> dict[str, Any]:
    # on the board, not the row
    placement = ("rank", "tied", "too_few", "stale", "measured", "failing", "provisional", "ranked_on")
    return {k: v for k, v in entry.items() if k not in placement}


def test_an_endpoint_row_has_one_json_shape_on_the_web_and_in_the_terminal(client: TestClient, db: Path) -> None:
    out = CliRunner().invoke(main, ["leaderboard", "--db", str(db), "--json"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    cli = {e["name"]: _row(e) for e in json.loads(out.stdout)["entries"]}
    web = {e["name"]: _row(e) for e in client.get("/leaderboard.json").json()["entries"]}
    assert cli == web and set(cli) == {e.name for e in ALL}
    for e in ALL:
        (row,) = client.get(endpoint_path(e.provider, e.plan, e.model, "json")).json()["rows"]
        assert row == web[e.name], e.name
        served = client.get(model_path(e.model, "json")).json()["endpoints"]
        assert [r for r in served if r["name"] == e.name] == [web[e.name]]


def test_the_page_and_the_terminal_write_each_headline_alike(client: TestClient, db: Path) -> None:
    out = CliRunner().invoke(main, ["leaderboard", "--db", str(db)], catch_exceptions=False, terminal_width=80)
    page = client.get("/").text
    for entry in client.get("/leaderboard.json").json()["entries"]:
        speed = figure_text(entry["output_speed"]["headline"])
        assert f"{speed} tok/s" in out.stdout and f'<span class="big">{speed}</span>' in page, (speed, out.stdout)
        assert f"success {percent(entry['success_rate'])}" in out.stdout
        assert f">{percent(entry['success_rate'])}<" in page
    assert "87.5%" in out.stdout
