"""Changes on the board: found in an endpoint's stored samples, a badge on the page, a field in JSON and CSV."""

from __future__ import annotations

import csv
import dataclasses
import io
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rich.console import Console
from starlette.testclient import TestClient

from tests.store.test_windows import GROQ, NOW, fail, put
from tests.webkit import charts, legend, marks
from tokenpace.board import ranking
from tokenpace.board.changes import (
    LOOKBACK,
    Change,
    Kept,
    change_dict,
    current,
    describe,
    direction,
    read_current,
    read_recent,
    series_changes,
)
from tokenpace.board.query import Query
from tokenpace.board.terminal import print_board
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.config.windows import WINDOWS
from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.verdict import Bound
from tokenpace.store.database import Store, open_store
from tokenpace.store.series import SamplePoint, last_published, latest
from tokenpace.store.windows import endpoint_rows
from tokenpace.web import create_app
from tokenpace.web.charts import MARKERS
from tokenpace.web.paths import endpoint_path

T0 = NOW - timedelta(hours=20)
CALM = Endpoint("calm", "llama", "http://calm.invalid/v1")
STEP = 10  # minutes between samples: the uncapped cadence


def at(i: int) -> datetime:
    return T0 + timedelta(minutes=STEP * i)


def fill(store: Store, endpoint: Endpoint, gaps: list[float], ttfts: list[float] | None = None) -> None:
    """One sample per gap (ms between chunks: speed ~ 1000 / gap tok/s), 10 minutes apart."""
    for i, gap in enumerate(gaps):
        put(store, endpoint, at(i), ttft_ms=(ttfts or [100.0] * len(gaps))[i], gap_ms=gap)
    store.flush()


def noisy(rng: random.Random, level: float, n: int) -> list[float]:
    return [level * rng.uniform(0.9, 1.1) for _ in range(n)]


def point(i: int, speed: float | None = 100.0, ok: bool = True, kind: str | None = None) -> SamplePoint:
    return SamplePoint(at(i), "1k", ok, kind, speed if ok else None, 100.0 if ok else None, 500.0 if ok else None)


def test_direction_reads_each_metric_the_right_way_round() -> None:
    assert direction("output_speed", 300, 150) == "slower" and direction("output_speed", 150, 300) == "faster"
    assert direction("ttft_ms", 100, 300) == "slower" and direction("ttft_ms", 300, 100) == "faster"
    assert direction("success_rate", 1.0, 0.5) == "worse" and direction("success_rate", 0.5, 1.0) == "better"


def test_a_speed_drop_in_points_is_one_change_at_its_first_slow_sample() -> None:
    points = [point(i, 300.0 + i % 3) for i in range(40)] + [point(40 + i, 150.0 + i % 3) for i in range(10)]
    (change,) = series_changes(points, "groq", "free", "llama")
    assert (change.metric, change.direction, change.at, change.workload) == ("output_speed", "slower", at(40), "1k")
    assert (round(change.before), round(change.after)) == (301, 151)
    assert change.endpoint == "groq:free/llama"
    assert describe(change) == f"output speed 301 -> 151 tok/s since {at(40):%Y-%m-%d %H:%M} UTC (slower)"
    assert current(points, "groq", "free", "llama", "1k") == change


def test_client_bound_unpublished_and_cancelled_samples_are_not_evidence() -> None:
    base = [point(i, 300.0 + i % 3) for i in range(40)]
    odd = [dataclasses.replace(point(40 + i, 150.0), client_bound=Bound.SPEED) for i in range(10)]
    odd += [dataclasses.replace(point(50 + i, 150.0), published=False) for i in range(10)]
    odd += [point(60 + i, ok=False, kind=ErrorKind.CANCELLED.value) for i in range(10)]
    assert series_changes(base + odd, "groq", "free", "llama") == []
    # A sample flagged for its TTFT alone is evidence of its speed (issue 29): the speed fell.
    ttft_only = [dataclasses.replace(point(40 + i, 150.0), client_bound=Bound.TTFT) for i in range(10)]
    assert [c.metric for c in series_changes(base + ttft_only, "groq", "free", "llama")] == ["output_speed"]


def test_an_outage_is_a_success_rate_change() -> None:
    points = [point(i) for i in range(30)] + [point(30 + i, ok=False, kind="http_error") for i in range(10)]
    (change,) = series_changes(points, "groq", "free", "llama")
    assert (change.metric, change.direction, change.before, change.after) == ("success_rate", "worse", 1.0, 0.0)
    assert describe(change).startswith("success rate 100 -> 0 % since")


def test_a_change_older_than_the_lookback_is_no_longer_current() -> None:
    points = [point(i, 300.0 + i % 3) for i in range(30)] + [point(30 + i, 150.0 + i % 3) for i in range(LOOKBACK)]
    assert len(series_changes(points, "groq", "free", "llama")) == 1  # still in the series' history
    assert current(points, "groq", "free", "llama", "1k") is None


def test_read_current_finds_the_store_s_change_and_only_it(tmp_path: Path) -> None:
    rng = random.Random(3)
    with open_store(str(tmp_path / "t.db")) as store:
        fill(store, GROQ, noisy(rng, 5, 40) + noisy(rng, 10, 10))  # speed halves at sample 40
        fill(store, CALM, noisy(rng, 5, 50))
        assert len(latest(store, provider="groq", plan="free", model="llama", workload="1k", limit=7)) == 7
        found = read_current(store, [("groq", "free", "llama", "1k"), ("calm", "default", "llama", "1k")])
        assert list(found) == [("groq", "free", "llama", "1k")]
        change = found["groq", "free", "llama", "1k"]
        assert (change.metric, change.direction, change.at) == ("output_speed", "slower", at(40))


def test_kept_changes_are_read_again_only_when_a_row_s_last_sample_moves(tmp_path: Path) -> None:
    rng = random.Random(5)
    key = ("groq", "free", "llama", "1k")
    with open_store(str(tmp_path / "t.db")) as store:
        fill(store, GROQ, noisy(rng, 5, 40))
        before = endpoint_rows(store, WINDOWS["24h"], NOW, ())
        kept = Kept(store)
        assert kept.current(before) == {} and kept.recent(before) == {key: []}
        for i, gap in enumerate(noisy(rng, 10, 10)):  # the endpoint halves its speed
            put(store, GROQ, at(40 + i), ttft_ms=100.0, gap_ms=gap)
        store.flush()
        assert key in read_current(store, [key])
        assert kept.current(before) == {}  # its last sample as kept: not read again (the cache at work)
        after = endpoint_rows(store, WINDOWS["24h"], NOW, ())
        assert kept.current(after) == read_current(store, [key])  # its last sample moved: read again
        assert Kept(store, max_keys=0).current(after) == read_current(store, [key])  # a full cache starts over
        assert last_published(store, *key) == at(49) and last_published(store, "nobody", "free", "llama", "1k") is None
        by_key = Kept(store)  # the alert watcher's way in: keys, each one's last sample read from the store
        assert by_key.recent_of([key]) == {key: read_recent(store, [key])}


def test_the_board_page_json_and_csv_carry_the_change(tmp_path: Path) -> None:
    rng = random.Random(4)
    with open_store(str(tmp_path / "t.db")) as store:
        fill(store, GROQ, noisy(rng, 5, 40) + noisy(rng, 10, 10))
        fill(store, CALM, noisy(rng, 5, 50))
        fail(store, CALM, at(50), ErrorKind.HTTP_ERROR)
        store.flush()
        now = at(51)
        board = ranking.read_board(store, Query(window="24h"), now)
        by_name = {e.row.name: e for e in board.entries}
        change = by_name["groq:free/llama"].change
        assert isinstance(change, Change) and by_name["calm/llama"].change is None
        doc = ranking.as_dict(board)
        entry = next(e for e in doc["entries"] if e["name"] == "groq:free/llama")
        assert entry["change"] == change_dict(change) and entry["change"]["direction"] == "slower"
        console = Console(width=200, file=io.StringIO(), color_system=None)
        print_board(console, board)
        table = console.file.getvalue()  # type: ignore[attr-defined]
        assert [line.count("(changed)") for line in table.splitlines() if "llama" in line] in ([1, 0], [0, 1])
        assert "groq:free/llama (changed)" in table
        header, rows = ranking.csv_table(board)
        texts = {row[header.index("name")]: row[header.index("change")] for row in rows}
        assert texts == {"groq:free/llama": describe(change), "calm/llama": ""}

        app = create_app(store, Config(endpoints=(GROQ, CALM)), now=lambda: now)
        with TestClient(app) as client:
            html = client.get("/?window=24h").text
            assert html.count('class="badge changed"') == 1
            assert f'title="{describe(change).replace(">", "&gt;")}"' in html
            page = client.get("/leaderboard.json?window=24h").json()
            assert [e["change"] is not None for e in page["entries"]].count(True) == 1
            lines = list(csv.reader(io.StringIO(client.get("/leaderboard.csv?window=24h").text)))
            assert describe(change) in [row[lines[0].index("change")] for row in lines[1:]]
            endpoint = client.get(endpoint_path("groq", "free", "llama", "json") + "?window=24h").json()
            assert [c["at"] for c in endpoint["changes"]] == [at(40).isoformat()]
            page = client.get(endpoint_path("groq", "free", "llama") + "?window=24h").text
            assert '<ul class="changes"' in page and describe(change).replace(">", "&gt;") in page
            speed = charts(page)["chart-speed"]  # the change marked on its metric's chart, at its new level
            assert legend(speed)[-1] == MARKERS and marks(speed)[-1].startswith(f"1k: {describe(change)}")
            assert MARKERS not in legend(charts(page)["chart-ttft"])
            assert client.get(endpoint_path("calm", "default", "llama", "json") + "?window=24h").json()["changes"] == []


def test_a_change_dict_is_plain_json() -> None:
    c = Change("ttft_ms", "groq", "free", "llama", "1k", datetime(2026, 1, 1, tzinfo=UTC), 100.0, 300.0, "slower")
    assert change_dict(c) == {
        "metric": "ttft_ms", "endpoint": "groq:free/llama", "provider": "groq", "plan": "free", "model": "llama",
        "workload": "1k", "at": "2026-01-01T00:00:00+00:00", "before": 100.0, "after": 300.0, "direction": "slower",
        "text": "TTFT 100 -> 300 ms since 2026-01-01 00:00 UTC (slower)",
    }  # fmt: skip
    assert change_dict(None) is None
