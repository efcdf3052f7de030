"""Availability excluding rate limits beside the success rate (issue 30): each as /methodology defines it, on a
scripted sequence of outcomes, in the board's rows, JSON, CSV, terminal and pages, on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from rich.console import Console
from starlette.testclient import TestClient

from tests.store.test_windows import CEREBRAS, GROQ, NOW, stream
from tokenpace.board.query import Query
from tokenpace.board.ranking import as_dict, csv_table, read_board
from tokenpace.board.terminal import print_board
from tokenpace.config.endpoints import Config
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.sample import make_sample
from tokenpace.measure.stats import availability, success_rate
from tokenpace.store.database import Store, open_store
from tokenpace.web import create_app
from tokenpace.web.paths import endpoint_path

# One outcome per sample, oldest first, an hour apart: whole hours of the rollup and the raw edge hours both.
SCRIPT = ("ok", "429", "ok", "500", "429", "ok", "cancelled", "ok", "429", "ok", "ok", "500")
OK, SAMPLES, CANCELLED, LIMITED = 6, 12, 1, 3
SUCCESS = OK / (SAMPLES - CANCELLED)  # 6 / 11: every failure but the cancelled one counts against it
AVAILABILITY = OK / (SAMPLES - CANCELLED - LIMITED)  # 6 / 8: the 429s are not the endpoint's failures
FAILURES = {
    "429": Failure(ErrorKind.RATE_LIMITED, "HTTP 429: slow down", 429, 120.0, (("x-ratelimit-remaining", "0"),)),
    "500": Failure(ErrorKind.HTTP_ERROR, "HTTP 500: oops", 500),
    "cancelled": Failure(ErrorKind.CANCELLED, "cancelled by the client"),
}


def write(store: Store, now: datetime = NOW) -> None:
    """groq follows SCRIPT; cerebras answers all four of its requests."""
    for i, outcome in enumerate(SCRIPT):
        at = now - timedelta(hours=len(SCRIPT) - i, minutes=30)
        store.add_sample(make_sample("run", GROQ, "1k", at, stream(300, 10, failure=FAILURES.get(outcome))))
    for i in range(4):
        store.add_sample(make_sample("run", CEREBRAS, "1k", now - timedelta(hours=i + 1), stream(200, 10)))
    store.flush()


@pytest.fixture
def store(any_store: Store) -> Store:
    write(any_store)
    return any_store


def test_the_formulas() -> None:
    assert success_rate(OK, SAMPLES, CANCELLED) == SUCCESS
    assert availability(OK, SAMPLES, CANCELLED, LIMITED) == AVAILABILITY
    assert availability(0, 3, 0, 3) is None  # every request rate-limited: nothing says how available it is
    assert availability(4, 4, 0, 0) == success_rate(4, 4, 0) == 1.0  # no 429: the two are one


def test_rows_json_and_csv_give_both_as_defined_on_a_scripted_sequence(store: Store) -> None:
    board = read_board(store, Query(), NOW)
    rows = {e.row.name: e.row for e in board.entries}
    groq, cerebras = rows["groq:free/llama"], rows["cerebras/llama"]
    assert (groq.samples, groq.ok, groq.cancelled, groq.rate_limited) == (SAMPLES, OK, CANCELLED, LIMITED)
    assert groq.success_rate == pytest.approx(SUCCESS) and groq.availability == pytest.approx(AVAILABILITY)
    assert cerebras.rate_limited == 0 and cerebras.availability == cerebras.success_rate == 1.0
    entries = {e["name"]: e for e in as_dict(board)["entries"]}
    assert entries["groq:free/llama"]["availability"] == pytest.approx(AVAILABILITY)
    assert entries["groq:free/llama"]["success_rate"] == pytest.approx(SUCCESS)
    assert entries["groq:free/llama"]["rate_limited"] == LIMITED
    header, table = csv_table(board)
    text = "\n".join(",".join(map(str, x)) for x in [header, *table])
    by_name = {r["name"]: r for r in csv.DictReader(io.StringIO(text))}
    assert header.index("availability") == header.index("success_rate") + 2  # beside it, after rate_limited
    assert float(by_name["groq:free/llama"]["availability"]) == pytest.approx(AVAILABILITY)
    assert by_name["groq:free/llama"]["rate_limited"] == str(LIMITED)


def test_the_terminal_shows_availability_where_requests_were_rate_limited(store: Store) -> None:
    out = io.StringIO()
    print_board(Console(file=out, width=400, color_system=None), read_board(store, Query(), NOW))
    lines = {line.split("│")[2].strip().split(" ")[0]: line for line in out.getvalue().splitlines() if "llama" in line}
    assert "(availability 75" in lines["groq:free/llama"] and "3 rate-limited)" in lines["groq:free/llama"]
    assert "availability" not in lines["cerebras/llama"]  # no 429: it would only repeat the success rate


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with open_store(str(tmp_path / "web.db")) as s:
        write(s, datetime.now(UTC))
        with TestClient(create_app(s, Config(endpoints=(GROQ, CEREBRAS), source="limits.toml"))) as c:
            yield c


def test_the_pages_show_availability_beside_success_and_methodology_defines_both(client: TestClient) -> None:
    page = client.get("/").text
    groq = re.search(r'data-endpoint="groq:free/llama">.*?</tr>', page, re.S)
    assert groq and re.search(r'data-col="success">54(\.5)?%.*?availability 75(\.0)?% · 3 rate-limited', groq[0])
    cerebras = re.search(r'data-endpoint="cerebras/llama">.*?</tr>', page, re.S)
    assert cerebras and "availability" not in cerebras[0]
    endpoint = client.get(endpoint_path(GROQ.provider, GROQ.plan, "llama")).text
    assert re.search(r'id="endpoint-availability">75(\.0)?% <small>\(6 of 8 ok, 3 rate-limited left out\)', endpoint)
    data = client.get(endpoint_path(GROQ.provider, GROQ.plan, "llama", "json")).json()
    (row,) = data["rows"]
    assert row["availability"] == pytest.approx(AVAILABILITY) and row["success_rate"] == pytest.approx(SUCCESS)
    (standing,) = data["standing"]
    assert standing["availability"] == pytest.approx(AVAILABILITY) and standing["rate_limited"] == LIMITED
    text = client.get("/methodology").text
    assert "Success rate = successful samples / (samples - samples cancelled at shutdown), per window." in text
    assert (
        "Availability excluding rate limits = successful samples / (samples - samples cancelled at shutdown - "
        "rate-limited samples), per window."
    ) in text
    assert 'id="rate-limits"' in text and "OpenRouter" in text and "1 min when the 429 said none" in text
