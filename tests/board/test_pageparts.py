"""The parts the pages' models share (board/pageparts.py)."""

from __future__ import annotations

from datetime import timedelta

from starlette.testclient import TestClient

from tests.store.test_windows import GROQ, NOW
from tokenpace.board import pageparts
from tokenpace.config.windows import WINDOWS
from tokenpace.store.series import series
from tokenpace.store.windows import endpoint_rows
from tokenpace.web.site import Site


def test_the_recent_samples_are_the_last_few_newest_first(site: tuple[Site, TestClient]) -> None:
    s, _ = site
    points = series(s.store, provider=GROQ.provider, plan=GROQ.plan, model=GROQ.model, workload=None,
                    since=NOW - timedelta(days=3))  # fmt: skip
    named = [(str(i), p) for i, p in enumerate(points * 5)]
    latest = pageparts.latest_first(named)
    assert len(latest) == pageparts.RECENT and latest[0] == named[-1] and latest[-1] == named[-pageparts.RECENT]


def test_a_page_without_agents_shows_every_region_and_no_menu(site: tuple[Site, TestClient]) -> None:
    s, _ = site
    assert pageparts.choose_region(s, WINDOWS["72h"], NOW, {}) == pageparts.PageRegion("all", None, "")


def test_rows_as_the_leaderboards_json_writes_them_with_their_cost_and_change(site: tuple[Site, TestClient]) -> None:
    s, _ = site
    window = WINDOWS["72h"]
    rows = endpoint_rows(s.store, window, NOW, provider=GROQ.provider)
    (data,) = pageparts.rows_data(s, rows, pageparts.costs(s, rows, window, NOW), window, NOW)
    assert data["name"] == "groq:free/llama" and data["canary_checked"] == 7
    assert {"change", "price", "cost_per_request"} <= set(data)
