"""Ranks users can trust in the first minutes (issue 29): a failing endpoint never ranked above a healthy one,
provisional ranks said so, the window's coverage instead of a bare "72 h median", stale per row against its own
cadence (and rows no job measures any more), tails withheld below their sufficiency bound; on the board, its
JSON, CSV and the terminal, and on the leaderboard, endpoint and model pages with their JSON twins."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from rich.console import Console
from starlette.testclient import TestClient

from tests.board.conftest import as_json
from tests.store.test_windows import NOW, fail, put, stream
from tokenpace.board.leaderboard_page import read_leaderboard_page
from tokenpace.board.model_page import read_model_page
from tokenpace.board.query import Query
from tokenpace.board.ranking import Board, as_dict, csv_table, read_board
from tokenpace.board.rules import rules
from tokenpace.board.terminal import print_board
from tokenpace.config import endpoints
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.config.windows import WINDOWS
from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.sample import make_sample
from tokenpace.schedule.cadence import jobs
from tokenpace.store.database import Store, open_store
from tokenpace.web import create_app
from tokenpace.web.paths import endpoint_path

# Three simulated endpoints on a 1-minute cadence, as the embedded default measures them, with the daily parallel.
TOML = (
    "".join(f'[providers.{name}]\nsimulate = {{ ttft_ms = 5 }}\nevery = "1m"\n' for name in ("fast", "steady", "flaky"))
    + '[schedule]\nworkloads = ["1k", "parallel"]\n'
)
GONE = Endpoint("gone", "sim", "simulated://gone", simulated=True)  # measured once, no longer in the config


@pytest.fixture
def config(tmp_path: Path) -> Config:
    path = tmp_path / "serve.toml"
    path.write_text(TOML)
    return endpoints.read_config(path)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(str(tmp_path / "first.db")) as s:
        yield s


def named(config: Config) -> dict[str, Endpoint]:
    return {e.provider: e for e in config.endpoints}


def board(store: Store, config: Config, **query: object) -> Board:
    store.flush()
    scheduled = jobs(config, config.endpoints)
    found, expected = rules(config, scheduled), [j.key for j in scheduled]
    q = Query(**query)  # type: ignore[arg-type]
    return read_board(store, q, NOW, stale_after=found.stale_after, config=config, expected=expected)


def terminal(b: Board, width: int = 250) -> str:
    out = io.StringIO()
    print_board(Console(file=out, width=width, color_system=None), b)
    return out.getvalue()


def minutes(n: float) -> timedelta:
    return timedelta(minutes=n)


def test_a_failing_endpoint_never_ranks_above_a_healthy_one(store: Store, config: Config) -> None:
    """The newcomer's board at 3 minutes: sim-flaky at 55.6 % (5 of 9) ranked #1 for its speed."""
    e = named(config)
    for i in range(5):
        put(store, e["flaky"], NOW - minutes(i), ttft_ms=20, gap_ms=1)  # the fastest by far
    for i in range(4):
        fail(store, e["flaky"], NOW - minutes(i), ErrorKind.HTTP_ERROR)
    for i in range(3):
        put(store, e["steady"], NOW - minutes(i), ttft_ms=300, gap_ms=12)
    for sort in ("speed", "ttft", "e2e"):
        b = board(store, config, sort=sort)
        assert [(x.row.provider, x.rank) for x in b.entries] == [("steady", 1), ("flaky", 2)], sort
        assert [x.failing for x in b.entries] == [False, True]
    (model,) = board(store, config).models  # the board's model row: steady's figure, flaky's failures
    assert model.providers == 1 and model.output_speed == board(store, config).entries[0].row.output_speed.p50
    assert model.success_rate == pytest.approx(8 / 12)
    doc = as_dict(board(store, config))
    assert [(x["name"], x["rank"], x["failing"]) for x in doc["entries"]] == [
        ("steady/sim", 1, False), ("flaky/sim", 2, True)
    ]  # fmt: skip
    assert "(failing · 55.6% ok)" in terminal(board(store, config))  # the word the web row shows
    # At 3 minutes: sim-fast, healthy and the fastest of the healthy, still short of its minimum. The failing
    # endpoint is listed after it and ranked behind it, not #1 above an endpoint that will outrank it.
    for i in range(2):
        put(store, e["fast"], NOW - minutes(i), ttft_ms=90, gap_ms=4)
    b = board(store, config)
    assert [(x.row.provider, x.rank, x.too_few) for x in b.entries] == [
        ("steady", 1, False), ("fast", None, True), ("flaky", 3, False)
    ]  # fmt: skip
    assert b.provisional and b.waiting == ["fast/sim"]


def test_ranks_are_provisional_until_every_listed_endpoint_that_can_has_its_minimum(
    store: Store, config: Config
) -> None:
    e = named(config)
    for i in range(3):
        put(store, e["steady"], NOW - minutes(i), ttft_ms=300, gap_ms=12)
        fail(store, e["flaky"], NOW - minutes(i), ErrorKind.HTTP_ERROR)  # failing: may never reach its minimum
    for i in range(2):
        put(store, e["fast"], NOW - minutes(i), ttft_ms=90, gap_ms=4)
    b = board(store, config)
    assert b.provisional and b.waiting == ["fast/sim"]
    doc = as_dict(b)
    assert doc["provisional"] and doc["waiting"] == ["fast/sim"]
    assert [(x["name"], x["provisional"]) for x in doc["entries"]] == [
        ("steady/sim", True), ("fast/sim", False), ("flaky/sim", False)
    ]  # fmt: skip
    header, rows = csv_table(b)
    assert [dict(zip(header, r, strict=True))["provisional"] for r in rows] == [True, False, False]
    assert "provisional ranks: 1 endpoint below 3 samples" in terminal(b)
    put(store, e["fast"], NOW - minutes(2), ttft_ms=90, gap_ms=4)
    settled = board(store, config)
    assert not settled.provisional and not as_dict(settled)["provisional"]
    assert [x.rank for x in settled.entries] == [1, 2, None]  # fast first; flaky has no successful sample
    assert "provisional" not in terminal(settled)


def test_ranks_are_provisional_while_a_measured_endpoint_has_no_sample_yet(store: Store, config: Config) -> None:
    """The newcomer's parallel board at 15 s: one endpoint's burst in, ranked #1 alone and not called provisional,
    while the other two the config measures had not answered yet."""
    e = named(config)
    for i in range(3):
        put(store, e["flaky"], NOW - minutes(i), ttft_ms=20, gap_ms=1)
    b = board(store, config)
    assert [(x.row.provider, x.rank) for x in b.entries] == [("flaky", 1)]
    assert b.provisional and b.waiting == [] and b.unsampled == ("fast/sim", "steady/sim")
    assert as_dict(b)["provisional"] and as_dict(b)["unsampled"] == 2  # counted, not named: no sample published
    assert "provisional ranks: 2 endpoints below 3 samples" in terminal(b)
    assert not board(store, config, provider="flaky").provisional  # the others are not on this board
    for name in ("fast", "steady"):
        for i in range(3):
            put(store, e[name], NOW - minutes(i), ttft_ms=90, gap_ms=4)
    assert not board(store, config).provisional


def test_the_window_label_says_how_much_of_it_holds_samples(store: Store, config: Config) -> None:
    e = named(config)
    for i in range(3):
        put(store, e["steady"], NOW - minutes(8 * i / 2), ttft_ms=300, gap_ms=12)  # 0, 4 and 8 min old
    b = board(store, config)
    assert (b.cover.text, b.cover.label) == ("8 min of 72 h", "median over 8 min of 72 h")
    doc = as_dict(b)
    assert doc["coverage"]["label"] == "median over 8 min of 72 h" and doc["coverage"]["covered_s"] == pytest.approx(
        480
    )
    assert "median over 8 min of 72 h" in terminal(b) and "72 h median" not in terminal(b)
    put(store, e["steady"], NOW - timedelta(hours=71), ttft_ms=300, gap_ms=12)
    assert board(store, config).cover.label == "72 h median"  # samples span the window: its own name
    assert board(store, config, window="24h").cover.label == "mean over 8 min of 24 h"


def test_stale_is_judged_per_row_against_its_own_cadence(store: Store, config: Config) -> None:
    """Seven minutes after the last sample on a 1-minute cadence: stale, whatever the daily parallel workload
    allows its own rows; and a row of an endpoint the running config no longer names is not measured any more."""
    e = named(config)
    for i in range(3):
        put(store, e["steady"], NOW - minutes(7 + i), ttft_ms=300, gap_ms=12)
        put(store, e["fast"], NOW - minutes(i), ttft_ms=90, gap_ms=4)
        put(store, GONE, NOW - minutes(i), ttft_ms=50, gap_ms=2)
        put(store, e["steady"], NOW - minutes(7 + i), workload="parallel")
    b = board(store, config)
    state = {x.row.provider: (x.stale, x.measured) for x in b.entries}
    assert state == {"steady": (True, True), "fast": (False, True), "gone": (True, False)}
    parallel = board(store, config, workload="parallel")
    assert [(x.row.provider, x.stale) for x in parallel.entries] == [("steady", False)]  # a daily cadence
    doc = {x["name"]: (x["stale"], x["measured"]) for x in as_dict(b)["entries"]}
    assert doc["gone/sim"] == (True, False) and doc["steady/sim"] == (True, True)
    text = terminal(b)
    gone, steady = (next(line for line in text.splitlines() if name in line) for name in ("gone/sim", "steady/sim"))
    assert "(not measured any more)" in gone and "(stale)" not in gone
    assert "(stale)" in steady
    header, rows = csv_table(b)
    assert {r[header.index("name")]: r[header.index("measured")] for r in rows}["gone/sim"] is False


def test_tails_are_withheld_below_their_bound_with_the_reason(store: Store, config: Config) -> None:
    e = named(config)
    for i in range(4):
        put(store, e["steady"], NOW - minutes(i), ttft_ms=300 + i, gap_ms=12)
    for i in range(90):
        put(store, e["fast"], NOW - minutes(i / 10), ttft_ms=90 + i, gap_ms=4)
    doc = {x["name"]: x for x in as_dict(board(store, config))["entries"]}
    steady, fast = doc["steady/sim"]["ttft_ms"], doc["fast/sim"]["ttft_ms"]
    assert steady["n"] == 4 and steady["p5"] is None and steady["p95"] is None and steady["p50"] is not None
    assert steady["withheld"]["p95"] == "n=4 < 90: a P95 needs 90 samples at 99% confidence"
    assert fast["n"] == 90 and fast["p95"] == pytest.approx(90 + 0.95 * 89, abs=0.5) and fast["withheld"] == {}
    header, rows = csv_table(board(store, config))
    record = {r[header.index("name")]: dict(zip(header, r, strict=True)) for r in rows}
    assert record["steady/sim"]["ttft_ms_p95"] is None and record["fast/sim"]["ttft_ms_p95"] is not None


@pytest.fixture
def client(store: Store, config: Config) -> Iterator[TestClient]:
    """The newcomer's board at 3 minutes: fast with 2 samples, steady with 4, flaky failing 4 of 9, gone stopped;
    every 10k sample succeeded but was client-bound."""
    e = named(config)
    for i in range(2):
        put(store, e["fast"], NOW - minutes(i), ttft_ms=90, gap_ms=4)
    for i in range(4):
        put(store, e["steady"], NOW - minutes(i), ttft_ms=300, gap_ms=12)
    for i in range(9):
        if i < 5:
            put(store, e["flaky"], NOW - minutes(i / 3), ttft_ms=20, gap_ms=1)
        else:
            fail(store, e["flaky"], NOW - minutes(i / 3), ErrorKind.HTTP_ERROR)
    for i in range(3):
        put(store, GONE, NOW - minutes(7 + i), ttft_ms=50, gap_ms=2)
        sample = make_sample("run", e["steady"], "10k", NOW - minutes(i), stream(300, 12), client_bound=True)
        store.add_sample(sample)
    store.flush()
    with TestClient(create_app(store, config, now=lambda: NOW)) as c:
        yield c


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_board_page_says_what_its_ranks_are_worth(client: TestClient) -> None:
    site = client.app.state.site  # type: ignore[attr-defined]
    page = client.get("/").text
    said = text_of(page)
    assert 'id="provisional"' in page and "1 endpoint (fast/sim) has fewer than 3 successful samples" in said
    assert "median over 9 min of 72 h" in said and "72 h median ·" not in said
    row = page.split('data-endpoint="gone/sim"')[1].split("</tr>")[0]
    assert "not measured any more" in row
    assert "p5\u2013p95 withheld: n &lt; 90" in page  # the figures of n=4 and n=5: tails withheld, reason in the title
    assert "a P95 needs 90 samples at 99% confidence" in page
    names = re.findall(r'data-endpoint="([^"]+)"', page)
    assert names.index("steady/sim") < names.index("flaky/sim")  # failing after healthy, however fast
    served = client.get("/leaderboard.json").json()
    assert served["provisional"] and served["waiting"] == ["fast/sim"]
    model = read_leaderboard_page(site, {})
    assert as_json(model.data()) == served  # the page's model is its JSON twin


def test_a_board_whose_samples_were_all_client_bound_says_so_and_draws_no_empty_chart(
    client: TestClient, config: Config
) -> None:
    """The newcomer's 10k board: "no successful samples" in large type while its rows said 100 % ok."""
    page = client.get("/?workload=10k").text
    assert "no successful samples" not in page and 'id="chart-board-speed"' not in page
    notice = text_of(page.split('id="client-bound-only"')[1].split("</p>")[0])
    assert "3 successful samples, all client-bound" in notice and "include them" in notice
    assert 'href="/?workload=10k&amp;client_bound=include"' in page.split('id="client-bound-only"')[1]
    assert client.get("/leaderboard.json?workload=10k").json()["client_bound_only"] == 3
    site = client.app.state.site  # type: ignore[attr-defined]
    said = terminal(read_leaderboard_page(site, {"workload": "10k"}).board)
    assert "3 successful samples, all client-bound" in said and "--client-bound include counts them" in said
    included = client.get("/?workload=10k&client_bound=include").text
    assert 'id="client-bound-only"' not in included and "chart-board-speed" in included
    steady = named(config)["steady"]
    endpoint = client.get(endpoint_path(steady.provider, steady.plan, steady.model) + "?workload=10k").text
    assert "no successful samples" not in endpoint and 'id="client-bound-only"' in endpoint
    assert "client_bound=include" in endpoint.split('id="client-bound-only"')[1].split("</p>")[0]
    model = client.get("/model/sim?workload=10k").text
    assert "no successful samples" not in model and "3 successful samples, all client-bound" in text_of(model)
    assert client.get("/model/sim.json?workload=10k").json()["client_bound_only"] == 3


def test_the_endpoint_page_header_says_success_rank_and_badges(client: TestClient, config: Config) -> None:
    flaky = named(config)["flaky"]
    page = client.get(endpoint_path(flaky.provider, flaky.plan, flaky.model)).text
    header = page.split("<h1>")[1].split("</dl>")[0]
    assert "failing · 55.6% ok" in header
    success = text_of(header.split('id="endpoint-success"')[1].split("</dd>")[0])
    assert "55.6% (5 of 9 ok)" in success
    rank = text_of(header.split('id="endpoint-rank"')[1].split("</dd>")[0])
    assert "4 of 4" in rank and "provisional" in rank  # after gone, steady and fast (healthy, still waiting)
    served = client.get(endpoint_path(flaky.provider, flaky.plan, flaky.model, "json")).json()
    (standing,) = served["standing"]
    assert (standing["rank"], standing["of"], standing["failing"], standing["provisional"]) == (4, 4, True, True)
    assert standing["success_rate"] == pytest.approx(5 / 9)
    gone = client.get(endpoint_path(GONE.provider, GONE.plan, GONE.model)).text
    assert "not measured any more" in gone.split("</h1>")[0]
    assert "median over 3 min of 72 h" in header and served["coverage"]["label"] == "median over 3 min of 72 h"


def test_the_model_page_headline_comes_from_ranked_endpoints_only(client: TestClient) -> None:
    site = client.app.state.site  # type: ignore[attr-defined]
    page = client.get("/model/sim").text
    head = text_of(page.split('id="model-headline"')[1].split("</dl>")[0])
    assert "Ranked endpoints 2 of 4 (1 with too few samples, 1 failing: left out of these figures)" in head
    assert "Fastest gone/sim" in head and "flaky" not in head  # flaky is the fastest of all, but failing
    assert "Median output speed" not in page  # no median across endpoints
    assert "median over 9 min of 72 h" in text_of(page.split("</h1>")[1].split("</p>")[0])
    served = client.get("/model/sim.json?window=72h&workload=1k&region=all").json()
    assert (
        served["headline"]["ranked"] == ["gone/sim", "steady/sim"] and "flaky/sim" not in served["headline"]["ranked"]
    )
    assert "output_speed" not in served["summary"]
    m = read_model_page(site, "sim", WINDOWS["72h"], False, {})
    assert m is not None and m.headline.failing == 1 and m.headline.too_few == 1


def test_the_methodology_page_states_the_tails_rule_and_its_json_the_same(client: TestClient) -> None:
    page = text_of(client.get("/methodology").text)
    assert "P5 and P95 are withheld below 90 samples" in page and "MLPerf's early-stopping rule" in page
    tails = client.get("/methodology.json").json()["tails"]
    assert (tails["confidence"], tails["needs"]) == (0.99, 90) and tails["rule"].startswith("n = ⌈ln(1 - c)")
