"""What the pages say about where samples came from and why they failed (issue 9 items 2, 3, 7 and 15's web bits).

Against SQLite and PostgreSQL alike: a store written with samples of known origin (scheduled, one-shot published
or not, client-bound) and failures with HTTP statuses and provider messages.
"""

from __future__ import annotations

import csv
import html
import io
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.store.test_windows import stream
from tests.webkit import EVIL, charts, marks
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.sample import make_sample
from tokenpace.store.database import Store, open_store
from tokenpace.web import create_app
from tokenpace.web.paths import endpoint_path, model_path

KEY_ENV = "TOKENPACE_ORIGINS_TEST_KEY"
KEY = "sk-origins-test-93b1"  # a made-up key a provider echoes back in an error message
STEADY = Endpoint("steady", "m", "http://steady.invalid/v1")
BUSY = Endpoint("busy", "m", "http://busy.invalid/v1", api_key_env=KEY_ENV)  # timed on a lagging client
ONCE = Endpoint("once", "m", "http://once.invalid/v1")  # one-shot runs, published
PRIVATE = Endpoint("private", "m", "http://private.invalid/v1")  # one-shot runs, never published
MESSAGE = f"model overloaded {EVIL} (key {KEY})"


def _write(store: Store) -> None:
    now = datetime.now(UTC)
    for i in range(4):
        at = now - timedelta(minutes=10 + i)
        store.add_sample(make_sample("r", STEADY, "1k", at, stream(200, 10)))
        lag = 30.0 + i if i < 3 else 0.5
        store.add_sample(make_sample("r", BUSY, "1k", at, stream(20, 1), client_bound=i < 3, client_lag_ms=lag))
        store.add_sample(make_sample("r", ONCE, "1k", at, stream(100, 5), source="one-shot", published=True))
        store.add_sample(make_sample("r", PRIVATE, "1k", at, stream(1, 1), source="one-shot", published=False))
    failed = stream(9999, 1, failure=Failure(ErrorKind.HTTP_ERROR, MESSAGE, 503))
    store.add_sample(make_sample("r", STEADY, "1k", now - timedelta(minutes=1), failed))
    store.add_sample(
        make_sample("r", PRIVATE, "1k", now - timedelta(minutes=1), failed, source="one-shot", published=False)
    )
    store.flush()


@pytest.fixture(params=["sqlite", "postgres"])
def client(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    url = str(tmp_path / "origins.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    monkeypatch.setenv(KEY_ENV, KEY)
    with open_store(url) as store:
        _write(store)
        config = Config(endpoints=(STEADY, BUSY, ONCE, PRIVATE), source="origins-test.toml")
        with TestClient(create_app(store, config)) as c:
            yield c


def _entries(c: TestClient, query: str = "") -> dict[str, dict[str, Any]]:
    r = c.get(f"/leaderboard.json{query}")
    assert r.status_code == 200, r.text
    return {e["name"]: e for e in r.json()["entries"]}


def test_unpublished_one_shot_samples_stay_off_the_board_and_published_ones_are_labelled(client: TestClient) -> None:
    found = _entries(client)
    assert set(found) == {"steady/m", "busy/m", "once/m"}  # private ran one-shot without --publish
    assert found["once/m"]["one_shot"] == 4 and found["steady/m"]["one_shot"] == 0
    page = client.get("/").text
    row = re.search(r'data-endpoint="once/m">.*?</tr>', page, re.S)
    assert row and 'class="badge one-shot"' in row.group(0)
    assert "private" not in page
    table = list(csv.DictReader(io.StringIO(client.get("/leaderboard.csv").text)))
    assert {r["name"]: r["one_shot"] for r in table} == {"steady/m": "0", "busy/m": "0", "once/m": "4"}
    raw = list(csv.DictReader(io.StringIO(client.get("/samples.csv").text)))
    private = [r for r in raw if r["provider"] == "private"]
    assert len(private) == 5 and all((r["source"], r["published"]) == ("one-shot", "0") for r in private)
    assert sum(r["client_bound"] == "7" for r in raw) == 3  # every figure flagged (measure/verdict.py)
    metrics = client.get("/metrics").text
    assert 'provider="once"' in metrics and 'provider="private"' not in metrics
    counts = {
        (line.split('provider="')[1].split('"')[0], line.split('outcome="')[1].split('"')[0]): line.rsplit(" ", 1)[1]
        for line in metrics.splitlines()
        if line.startswith("tokenpace_samples{")
    }
    assert counts["once", "one_shot"] == "4.0" and counts["busy", "client_bound"] == "3.0"
    assert sorted(e["provider"] for e in client.get(model_path("m") + ".json").json()["endpoints"]) == [
        "busy",
        "once",
        "steady",
    ]


def test_an_endpoint_page_lists_unpublished_samples_labelled_but_draws_none(client: TestClient) -> None:
    r = client.get(endpoint_path("private", "default", "m"))
    assert r.status_code == 200
    assert "unpublished" in r.text and "one-shot" in r.text
    assert all(not marks(svg) for svg in charts(r.text).values())  # listed, never drawn


def test_client_bound_samples_are_counted_apart_unless_included(client: TestClient) -> None:
    busy = _entries(client)["busy/m"]
    assert (busy["client_bound"], busy["counted"], busy["ttft_ms"]["n"], busy["rank"]) == (3, 1, 1, None)
    assert busy["too_few"] is True and busy["success_rate"] == 1.0
    page = client.get("/").text
    row = re.search(r'data-endpoint="busy/m">.*?</tr>', page, re.S)
    assert row and "3 client-bound" in row.group(0)
    included = _entries(client, "?client_bound=include")["busy/m"]
    assert (included["counted"], included["rank"]) == (4, 1)  # the lagging client made it look fastest
    assert 'href="/?client_bound=include"' in page  # the page offers the other view
    table = list(csv.DictReader(io.StringIO(client.get("/leaderboard.csv").text)))
    assert {r["name"]: r["client_bound"] for r in table}["busy/m"] == "3"
    detail = client.get(endpoint_path("busy", "default", "m")).text
    assert "client-bound" in detail and 'name="client_bound"' not in detail
    assert 'title="TTFT, output speed, end-to-end: timed while' in detail  # the figures flagged, named
    assert "± 30.0 ms" in detail and "± 0.5 ms" in detail  # how late each sample's timestamps may be
    kept = client.get(endpoint_path("busy", "default", "m") + "?client_bound=include").text
    assert '<input type="hidden" name="client_bound" value="include">' in kept  # the filter form keeps it


def test_recent_failures_show_status_and_message_escaped_and_scrubbed(client: TestClient) -> None:
    for path in (endpoint_path("steady", "default", "m"), model_path("m")):
        page = client.get(path).text
        assert "http_error" in page and "503" in page and "model overloaded" in page, path
        assert html.escape(EVIL) in page and EVIL not in page
        assert KEY not in page
    data = client.get(endpoint_path("steady", "default", "m") + ".json").text
    assert KEY not in data


@pytest.mark.parametrize(
    "path",
    ["/", "/leaderboard.json", "/leaderboard.csv", "/samples.csv", "/endpoint/steady/default/m", "/model/m",
     "/endpoint/steady/default/m.json", "/methodology"],
)  # fmt: skip
def test_a_nul_in_a_parameter_is_400_with_one_line(client: TestClient, path: str) -> None:
    for params in ({"provider": "a\x00b"}, {"model": "\x00"}, {"workload": "1k\x00"}):
        r = client.get(path, params=params)
        assert r.status_code == 400, (path, params, r.status_code, r.text[:200])
        assert "NUL" in r.text
    assert client.get("/endpoint/ste%00ady/default/m").status_code == 400
    assert client.get("/model/m%00").status_code == 400


def test_min_samples_of_5000_digits_is_400_with_one_line(client: TestClient) -> None:
    for path in ("/", "/leaderboard.json", "/leaderboard.csv"):
        r = client.get(path, params={"min_samples": "9" * 5000})
        assert r.status_code == 400 and "min_samples" in r.text and len(r.text) < 3000, path
    assert client.get("/leaderboard.csv", params={"min_samples": "9" * 5000}).text.count("\n") == 1
