"""What each window of a plan's limits allows, what was spent of it and the cadence that follows, as the pages say."""

from __future__ import annotations

import html
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.schedule.test_pacing import GO, config
from tests.schedule.test_sampler import DAY, T0, fake_sample
from tokenpace.board.allowance import allowance_dict, allowances
from tokenpace.config.endpoints import Config
from tokenpace.schedule.cadence import Job, jobs
from tokenpace.schedule.pacing import Demand, window_worst
from tokenpace.store.database import Store, open_store
from tokenpace.web import create_app

NOW = datetime.fromtimestamp(T0, UTC)


@pytest.fixture
def filled(tmp_path: Path) -> Iterator[tuple[Store, Config, list[Job]]]:
    cfg = config(tmp_path, GO + '[schedule]\nworkloads = ["1k", "10k"]\n')
    found = jobs(cfg, cfg.endpoints)
    with open_store(str(tmp_path / "s.db")) as store:
        one_k = next(j for j in found if j.workload.name == "1k")
        # 1M input and 100k output tokens at $0.60 / $2.20 per 1M: 82 cents, each an hour, 2 and 10 days ago
        for ago in (3600, 2 * DAY, 10 * DAY):
            store.add_sample(fake_sample(one_k, T0 - ago, input_tokens=1_000_000, output_tokens=100_000))
        store.add_sample(fake_sample(one_k, T0 - 40 * DAY, input_tokens=1_000_000, output_tokens=100_000))
        store.flush()
        yield store, cfg, found


def test_each_window_says_its_share_its_spend_and_its_worst_case_at_the_pace(
    filled: tuple[Store, Config, list[Job]],
) -> None:
    store, cfg, found = filled
    (go,) = allowances(store, cfg, found, NOW)
    assert (go.name, go.source) == ("go", "limits") and go.every_s == found[0].plan_every_s
    demands = [Demand(j.every_s, j.jitter, j.worst_case()) for j in found]
    assert [c.stated for c in go.caps] == ["$12 per 5h", "$30 per 7d", "$60 per 30d"]
    assert [c.allowed for c in go.caps] == pytest.approx([1.2, 3.0, 6.0])
    assert [c.spent for c in go.caps] == pytest.approx([0.82, 1.64, 2.46])  # 40 days ago: in no window
    for c in go.caps:
        assert c.worst == window_worst(c.window_s, demands, go.every_s).dollars <= c.allowed
    line = allowance_dict(go)["caps"][0]["text"]
    assert line.startswith("$12 per 5h: tokenpace's 10% is $1.20, spent $0.82 in the last 5h, at most $")


def test_the_board_and_the_methodology_say_it_per_plan(filled: tuple[Store, Config, list[Job]]) -> None:
    store, cfg, found = filled
    every = f"every {(found[0].plan_every_s or 0) / 3600:.0f}h (the densest its limits allow)"
    with TestClient(create_app(store, cfg, now=lambda: NOW)) as c:
        board = html.unescape(c.get("/").text)
        assert 'id="limits"' in board and f"go: {every}; $12 per 5h: tokenpace's 10% is $1.20" in board
        assert c.get("/leaderboard.json").json()["allowances"][0]["caps"][2]["stated"] == "$60 per 30d"
        page = c.get("/methodology").text
        assert 'id="budgets"' in page and "$30 per 7d" in page and "floor(window_s / (every_s" in page
        (plan,) = c.get("/methodology.json").json()["budgets"]
        assert plan["every_s"] == found[0].plan_every_s and [c["window"] for c in plan["caps"]] == ["5h", "7d", "30d"]
