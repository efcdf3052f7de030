"""The leaderboard: sorting, filters, ranking rules, staleness and its JSON, CSV and terminal forms."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qsl

import pytest
from rich.console import Console
from starlette.testclient import TestClient

from tests.store.test_windows import CEREBRAS, DEMO, GROQ, NOW, fail, put, stream
from tests.webkit import Steady
from tokenpace import sim
from tokenpace.board.query import SORTS, Query
from tokenpace.board.ranking import Board, as_dict, csv_table, read_board
from tokenpace.board.rules import UNMEASURED_LIMIT, rules
from tokenpace.board.terminal import TERMINAL_COLUMNS, print_board
from tokenpace.clients.transport import Timeouts
from tokenpace.config import endpoints
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.workloads import Workload
from tokenpace.errors import BadRequest
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.sample import make_sample
from tokenpace.measure.stats import Figure
from tokenpace.measure.verdict import Bound
from tokenpace.schedule.cadence import jobs
from tokenpace.store.database import Store, open_store
from tokenpace.store.windows import EndpointRow
from tokenpace.web import create_app

SLOW = Endpoint("slowco", "big", "http://slow.invalid/v1")
FEW = Endpoint("[bold]fewco", "tiny", "http://few.invalid/v1")  # rich markup in a name must print as it is


@pytest.fixture(params=["sqlite", "postgres"])
def filled(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Four endpoints on 1k with known figures, one of them with too few samples, plus one on 10k."""
    url = str(tmp_path / "tokenpace.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    with open_store(url) as store:
        for i in range(4):
            at = NOW - timedelta(hours=i + 1)
            put(store, GROQ, at, ttft_ms=300, gap_ms=2)  # fastest output, slow first token
            put(store, CEREBRAS, at, ttft_ms=50, gap_ms=10)  # quickest first token
            put(store, SLOW, at - timedelta(hours=40), ttft_ms=200, gap_ms=40)  # last sample 41 h ago
        fail(store, CEREBRAS, NOW - timedelta(hours=2), ErrorKind.RATE_LIMITED)
        put(store, FEW, NOW, ttft_ms=10, gap_ms=1)  # best at everything, but one sample
        put(store, DEMO, NOW, workload="10k")
        store.flush()
        yield store


def names(b: Board) -> list[str]:
    return [e.row.name for e in b.entries]


def test_each_sort_in_its_natural_order_and_reversed(filled: Store) -> None:
    # cerebras/llama fails 1 of 5 (80 %, under rows.FAILING_BELOW): by a figure it follows every healthy row,
    # fewco's too (one sample, still short of its minimum), and ranks behind them all
    expected = {
        "speed": ["groq:free/llama", "slowco/big", "cerebras/llama"],
        "ttft": ["slowco/big", "groq:free/llama", "cerebras/llama"],
        "e2e": ["groq:free/llama", "slowco/big", "cerebras/llama"],  # 309 and 361 ms; cerebras's 91 failing
        "success": ["groq:free/llama", "slowco/big", "cerebras/llama"],  # ties by name
        "samples": ["cerebras/llama", "groq:free/llama", "slowco/big"],
        "name": ["cerebras/llama", "groq:free/llama", "slowco/big"],
    }
    assert set(expected) == set(SORTS)
    for sort, order in expected.items():
        b = read_board(filled, Query(sort=sort), NOW)
        flipped = read_board(filled, Query(sort=sort, order="asc" if SORTS[sort] == "desc" else "desc"), NOW)
        if sort in ("speed", "ttft", "e2e"):
            assert names(b) == [*order[:2], "[bold]fewco/tiny", "cerebras/llama"], sort
            assert [e.rank for e in b.entries] == [1, 2, None, 4]
            # the healthy rows flip; the failing one stays after them
            assert names(flipped) == [*order[1::-1], "[bold]fewco/tiny", "cerebras/llama"], sort
            continue
        assert names(b) == [*order, "[bold]fewco/tiny"], sort  # too few samples: last
        assert [e.rank for e in b.entries] == [1, 2, 3, None]
        if sort == "name":  # success and samples have ties, which keep name order either way
            assert names(flipped)[:3] == order[::-1], sort


def test_min_samples_marks_rows_too_few_and_leaves_them_unranked(filled: Store) -> None:
    b = read_board(filled, Query(min_samples=4), NOW)
    assert [(e.row.name, e.rank, e.too_few) for e in b.entries] == [
        ("groq:free/llama", 1, False),
        ("slowco/big", 2, False),
        ("[bold]fewco/tiny", None, True),
        ("cerebras/llama", 4, False),  # 5 samples, 4 of them successful: enough, but failing
    ]
    assert [e.too_few for e in read_board(filled, Query(min_samples=5), NOW).entries] == [True] * 4
    everyone = read_board(filled, Query(min_samples=0, sort="ttft"), NOW)
    assert names(everyone)[0] == "[bold]fewco/tiny" and everyone.entries[0].rank == 1
    assert [m.model for m in b.models] == ["big", "llama"]  # the one-sample endpoint speaks for no model


def test_filters_and_menus(filled: Store) -> None:
    assert names(read_board(filled, Query(provider="groq"), NOW)) == ["groq:free/llama"]
    by_plan = read_board(filled, Query(plan="default", sort="name"), NOW)
    assert names(by_plan) == ["cerebras/llama", "slowco/big", "[bold]fewco/tiny"]
    ten = read_board(filled, Query(workload="10k", min_samples=1), NOW)
    assert names(ten) == ["demo/sim"] and ten.entries[0].row.simulated
    assert ten.workloads == ("1k", "10k")  # built-ins by size, not as text sorts them
    assert ten.providers == ("[bold]fewco", "cerebras", "demo", "groq", "slowco")
    assert ten.plans == ("default", "free")
    day = read_board(filled, Query(window="24h"), NOW)
    assert day.window.statistic == "mean" and "slowco/big" not in names(day)  # its samples are 41+ h old


def test_stale_after_flags_rows_whose_samples_stopped(filled: Store) -> None:
    def stale_after(row: EndpointRow) -> float | None:
        return None if row.provider == "groq" else 6 * 3600.0

    b = read_board(filled, Query(), NOW, stale_after=stale_after)
    assert {e.row.name: e.stale for e in b.entries} == {
        "groq:free/llama": False, "cerebras/llama": False, "slowco/big": True, "[bold]fewco/tiny": False,
    }  # fmt: skip
    assert not any(e.stale for e in read_board(filled, Query(), NOW).entries)  # default: never stale


def test_json_twin_is_serialisable_and_complete(filled: Store) -> None:
    b = read_board(filled, Query(), NOW)
    doc = json.loads(json.dumps(as_dict(b)))
    assert doc["generated_at"] == NOW.isoformat() and doc["window"]["name"] == "72h"
    assert doc["query"]["sort"] == "speed" and "default_min_samples" not in doc["query"]
    first = doc["entries"][0]
    assert first["name"] == "groq:free/llama" and first["rank"] == 1 and first["last_at"].endswith("+00:00")
    assert first["output_speed"]["headline"] == first["output_speed"]["p50"] and first["output_speed"]["n"] == 4
    cerebras = doc["entries"][3]  # failing: after the healthy rows, the waiting fewco too
    assert cerebras["failing"] and not doc["entries"][1]["failing"] and cerebras["measured"]
    assert cerebras["errors"] == {"rate_limited": 1} and cerebras["success_rate"] == pytest.approx(0.8)
    assert [m["model"] for m in doc["models"]] == ["big", "llama"]


def test_csv_table_has_one_row_per_entry_under_its_header(filled: Store) -> None:
    header, rows = csv_table(read_board(filled, Query(sort="ttft"), NOW))
    assert len(rows) == 4 and all(len(r) == len(header) for r in rows)
    record = dict(zip(header, rows[3], strict=True))  # the quickest first token, but failing: after the healthy
    assert record["name"] == "cerebras/llama" and record["ttft_ms_headline"] == pytest.approx(50)
    assert record["failing"] and record["rank"] == 4
    assert record["samples"] == 5 and record["failures"] == 1 and record["statistic"] == "median"
    out = io.StringIO()
    csv.writer(out).writerows([header, *rows])  # plain values only
    assert out.getvalue().count("\n") == 5


_EMPTY = Figure(0, None, None, None, None, None, None)


def test_query_from_params_and_back() -> None:
    q = Query.from_params({"sort": "ttft", "workload": "10k", "provider": "groq", "plan": "", "window": "24h"})
    assert q == Query(window="24h", workload="10k", provider="groq", sort="ttft")
    assert q.direction == "asc" and Query(sort="ttft", order="desc").direction == "desc"
    assert Query.from_params(dict(parse_qsl(q.params()))) == q
    assert Query().params() == "" and Query().params(sort="e2e") == "sort=e2e"
    assert q.params(provider=None, order="desc") == "window=24h&workload=10k&sort=ttft&order=desc"
    configured = Query.from_params({}, min_samples=5)  # the config's minimum is a default, not a choice
    assert configured.min_samples == 5 and configured.params() == ""
    assert configured.params(min_samples=2) == "min_samples=2"
    assert Query.from_params({"min_samples": "0", "unknown": "x"}).min_samples == 0
    elsewhere = Query.from_params({}, workload="short")  # a config that does not schedule 1k
    assert elsewhere.workload == "short" and elsewhere.params() == ""
    assert elsewhere.params(workload="1k") == "workload=1k"


def test_rules_come_from_the_config_and_its_jobs(tmp_path: Path) -> None:
    path = tmp_path / "serve.toml"
    path.write_text(
        '[providers.demo]\nsimulate = { ttft_ms = 5 }\nevery = "1h"\n'
        '[schedule]\nworkloads = ["10k", "100k"]\nmin_samples = 5\njitter = 0.1\n'
        '[schedule.every]\n"10k" = "plan"\n'
    )
    cfg = endpoints.read_config(path)
    found = rules(cfg, jobs(cfg, cfg.endpoints))
    assert (found.workload, found.long_workloads, found.min_samples) == ("10k", frozenset({"100k"}), 5)
    row = EndpointRow(
        "demo", "default", "sim", "10k", "openai-chat", True, samples=1, failures=0, success_rate=1.0,
        output_speed=_EMPTY, ttft_ms=_EMPTY, e2e_ms=_EMPTY, first_at=None, last_at=None, window_s=0, errors=(),
    )  # fmt: skip
    assert found.stale_after(row) == pytest.approx(2 * 3600 * 1.1)
    # An endpoint the running config does not measure: stale from its last sample on; no jobs, no cadence known
    assert found.stale_after(dataclasses.replace(row, model="other")) == UNMEASURED_LIMIT
    assert rules(cfg, []).stale_after(row) is None
    assert rules(endpoints.Config(), []).workload == "1k"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"sort": "fast"}, "sort 'fast': use one of speed, ttft, e2e, success, samples, name"),
        ({"window": "1h"}, "window '1h': use one of 24h, 72h, 7d"),
        ({"order": "up"}, "order 'up': use one of asc, desc"),
        ({"min_samples": "-1"}, "min_samples '-1': use a whole number of samples, 0 to 999999999"),
        ({"min_samples": "²"}, "min_samples '²': use a whole number of samples, 0 to 999999999"),
        (
            {"min_samples": "9" * 5000},
            "min_samples '99999999999999999999...': use a whole number of samples, 0 to 999999999",
        ),
        ({"client_bound": "yes"}, "client_bound 'yes': use one of exclude, include"),
    ],
)
def test_bad_query_values_say_what_to_use(params: dict[str, str], message: str) -> None:
    with pytest.raises(BadRequest) as err:
        Query.from_params(params)
    assert str(err.value) == message and "\n" not in message


def test_terminal_table_has_the_page_columns(filled: Store) -> None:
    console = Console(record=True, width=200)
    print_board(console, read_board(filled, Query(), NOW))
    text = console.export_text()
    header = next(line for line in text.splitlines() if "Endpoint" in line)
    positions = [header.index(label) for _, label in TERMINAL_COLUMNS]
    assert positions == sorted(positions)
    assert "[bold]fewco/tiny" in text and "too few (1/3)" in text and "(n=4)" in text
    console = Console(record=True, width=200)
    print_board(console, read_board(filled, Query(workload="10k", min_samples=1), NOW))
    assert "demo/sim (simulated)" in console.export_text()
    console = Console(record=True, width=200)
    print_board(console, read_board(filled, Query(workload="vision"), NOW))
    assert "no samples of the vision workload" in console.export_text()


async def test_board_from_real_simulator_runs(tmp_path: Path) -> None:
    """End to end: two simulators of known speeds, measured for real, land on the board in speed order."""
    workload = Workload("tiny", 8, input_tokens=300)
    timeouts = Timeouts(connect=2, first_token=10, idle=10, total=30)
    plan = RunOptions(requests=3, warm_connections=False, timeouts=timeouts, source="scheduled")
    with open_store(str(tmp_path / "t.db")) as store:
        async with (
            # Tokens 2.5 ms apart at the fastest: a busy machine's loop still reads them apart, so speed is measured.
            sim.serve(sim.Simulator(sim.Scenario(ttft_ms=5, tokens_per_s=400, output_tokens=12))) as fast_url,
            sim.serve(sim.Simulator(sim.Scenario(ttft_ms=60, tokens_per_s=100, output_tokens=12))) as slow_url,
        ):
            endpoints = [Endpoint("slow", "m", slow_url, simulated=True), Endpoint("fast", "m", fast_url)]
            await run_workload(endpoints, workload, plan, Steady(store))
        store.flush()
        now = datetime.now(UTC)
        # Samples timed while a loaded machine's loop lagged are client-bound: counted here, as the order is the point.
        b = read_board(store, Query(workload="tiny", client_bound="include"), now)
        assert names(b) == ["fast/m", "slow/m"] and [e.rank for e in b.entries] == [1, 2]
        by_ttft = Query(workload="tiny", sort="ttft", client_bound="include")
        assert names(read_board(store, by_ttft, now)) == ["fast/m", "slow/m"]
        assert b.entries[1].row.simulated and b.models[0].providers == 2 and b.models[0].simulated


async def test_a_one_shot_run_reaches_the_board_only_when_published_and_labelled(tmp_path: Path) -> None:
    """Issue 9 item 2: `run` samples stay off the board unless published, and then say they were one-shot."""
    workload = Workload("tiny", 8, input_tokens=300)
    timeouts = Timeouts(connect=2, first_token=10, idle=10, total=30)
    with open_store(str(tmp_path / "t.db")) as store:
        async with sim.serve(sim.Simulator(sim.Scenario(ttft_ms=5, tokens_per_s=2000, output_tokens=12))) as url:
            quiet, loud = Endpoint("quiet", "m", url, simulated=True), Endpoint("loud", "m", url, simulated=True)
            await run_workload(
                [quiet],
                workload,
                RunOptions(requests=5, warm_connections=False, timeouts=timeouts, source="one-shot"),
                store,
            )
            plan = RunOptions(requests=5, warm_connections=False, timeouts=timeouts, source="one-shot", publish=True)
            await run_workload([loud], workload, plan, Steady(store))
        store.flush()
        b = read_board(store, Query(workload="tiny"), datetime.now(UTC))
        assert names(b) == ["loud/m"] and b.entries[0].rank == 1 and b.entries[0].row.one_shot == 5
        assert as_dict(b)["entries"][0]["one_shot"] == 5
        header, table = csv_table(b)
        assert table[0][header.index("one_shot")] == 5
        console = Console(record=True, width=200)
        print_board(console, b)
        assert "one-shot 5" in console.export_text()


def test_client_bound_rows_show_their_count_and_rank_on_the_rest(tmp_path: Path) -> None:
    """Issue 9 item 3: the terminal, JSON and CSV name the client-bound samples left out of a row's figures."""
    with open_store(str(tmp_path / "t.db")) as store:
        for i in range(4):
            put(store, GROQ, NOW - timedelta(hours=i + 1), ttft_ms=100)
        for i in range(2):
            bound = make_sample("r", CEREBRAS, "1k", NOW - timedelta(hours=i + 1), stream(5, 1), client_bound=True)
            store.add_sample(bound)  # would be the fastest, but the client was the bottleneck
        store.flush()
        b = read_board(store, Query(min_samples=1), NOW)
        assert names(b) == ["groq:free/llama", "cerebras/llama"] and b.entries[1].rank is None
        assert b.entries[1].too_few and b.entries[1].row.client_bound == 2
        entry = as_dict(b)["entries"][1]
        assert (entry["client_bound"], entry["counted"], entry["ok"]) == (2, 0, 2)
        header, table = csv_table(b)
        assert table[1][header.index("client_bound")] == 2
        console = Console(record=True, width=200)
        print_board(console, b)
        assert "2 client-bound" in console.export_text()
        included = read_board(store, Query(min_samples=1, client_bound="include"), NOW)
        assert names(included)[0] == "cerebras/llama" and included.entries[0].rank == 1
        assert Query.from_params({"client_bound": "include"}).params() == "client_bound=include"


def test_a_figure_flagged_client_bound_is_left_out_and_the_samples_other_figures_count(tmp_path: Path) -> None:
    """Issue 29: a sample whose TTFT the client's lag could have moved keeps its speed and end-to-end time on
    the board and counts towards the minimum; only its TTFT is left out, unless client-bound ones are included."""
    with open_store(str(tmp_path / "t.db")) as store:
        for i in range(3):
            put(store, GROQ, NOW - timedelta(hours=i + 1), ttft_ms=100)
            late = make_sample("r", GROQ, "1k", NOW - timedelta(hours=i + 1, minutes=30), stream(400, 10),
                               client_bound=Bound.TTFT, client_lag_ms=300.0)  # fmt: skip
            store.add_sample(late)
        store.flush()
        (entry,) = read_board(store, Query(min_samples=6), NOW).entries
        row = entry.row
        assert entry.rank == 1 and row.usable == 6 and row.client_bound == 3
        assert (row.output_speed.n, row.e2e_ms.n, row.ttft_ms.n) == (6, 6, 3)
        assert row.ttft_ms.p50 == pytest.approx(100.0)
        (included,) = read_board(store, Query(min_samples=6, client_bound="include"), NOW).entries
        assert included.row.ttft_ms.n == 6
        # ranked by TTFT it stands on its 3 TTFTs alone: too few for a minimum of 6, though 6 samples count
        (by_ttft,) = read_board(store, Query(min_samples=6, sort="ttft"), NOW).entries
        assert by_ttft.rank is None and by_ttft.too_few and by_ttft.n == 3


def test_endpoints_whose_intervals_overlap_share_a_rank(tmp_path: Path) -> None:
    """Issue 13 part 5: 120 vs 125 ms medians over five spread samples cannot be told apart; 420 ms can."""
    with open_store(str(tmp_path / "ties.db")) as store:
        for i in range(5):
            at = NOW - timedelta(hours=i + 1)
            put(store, GROQ, at, ttft_ms=100 + 10 * i)  # median 120, 95 % interval 100-140 (n = 5: the extremes)
            put(store, CEREBRAS, at, ttft_ms=105 + 10 * i)  # median 125, 105-145: overlaps
            put(store, SLOW, at, ttft_ms=400 + 10 * i)  # median 420, 400-440: wholly behind both
        store.flush()
        board = read_board(store, Query(sort="ttft"), NOW)
        assert [(e.row.name, e.rank, e.tied) for e in board.entries] == [
            ("groq:free/llama", 1, True), ("cerebras/llama", 1, True), ("slowco/big", 3, False)
        ]  # fmt: skip
        assert [e["tied"] for e in as_dict(board)["entries"]] == [True, True, False]
        header, rows = csv_table(board)
        assert [(r[header.index("rank")], r[header.index("tied")]) for r in rows] == [(1, True), (1, True), (3, False)]
        ttft_lo = rows[0][header.index("ttft_ms_p50_lo")]
        assert ttft_lo == pytest.approx(100, abs=2)  # the interval itself, as measured (timing adds a little)
        console = Console(record=True, width=200)
        print_board(console, board)
        assert "=1" in console.export_text()
        # Reversed (slowest first), the slow one leads alone and the two quick ones share the next rank.
        slowest = read_board(store, Query(sort="ttft", order="desc"), NOW)
        assert [(e.rank, e.tied) for e in slowest.entries] == [(1, False), (2, True), (2, True)]
        with TestClient(create_app(store, endpoints.Config(), now=lambda: NOW)) as c:
            page = c.get("/?sort=ttft").text
        assert page.count('title="95 % intervals overlap: not told apart">=1</span>') == 2
        assert "lies wholly better than its own" in page  # the page says how ties are decided
