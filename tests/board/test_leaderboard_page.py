"""The leaderboard page's model (board/leaderboard_page.py): one ranked board and what the page says beside it,
the very data its JSON twin serves."""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.board.conftest import as_json
from tokenpace.board.leaderboard_page import ranked, read_leaderboard_page
from tokenpace.web.site import Site


def test_the_model_is_the_json_twin_and_says_what_the_page_shows_beside_the_board(
    site: tuple[Site, TestClient],
) -> None:
    s, client = site
    m = read_leaderboard_page(s, {"sort": "ttft"})
    assert [e.row.name for e in m.board.entries if e.rank] == ["cerebras/llama", "groq:free/llama"]
    assert m.canary and not m.net and not m.priced  # verdicts, no probe agent, no price for these names
    assert m.budgets == [] and m.bursts == {} and not m.any_agent and m.caption == ""
    assert as_json(m.data()) == client.get("/leaderboard.json?sort=ttft").json()


def test_an_empty_select_is_no_filter_and_a_provider_is_one(site: tuple[Site, TestClient]) -> None:
    s, _ = site
    assert [e.row.name for e in ranked(s, {"provider": ""}).entries] == [e.row.name for e in ranked(s, {}).entries]
    assert [e.row.name for e in ranked(s, {"provider": "groq"}).entries] == ["groq:free/llama"]
