"""`tokenpace leaderboard`: the board from the store, its options the web page's parameters."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tests.cli.test_input import assert_one_line, invoke
from tests.store.test_windows import GROQ, stream
from tokenpace.cli import main
from tokenpace.measure.sample import Origin, make_sample
from tokenpace.store.database import open_store


def test_leaderboard_client_bound_option_is_the_pages_parameter(tmp_path: Path) -> None:
    """The fastest row here was timed while the client lagged: ranked only with --client-bound include."""
    from datetime import UTC, datetime, timedelta

    from tests.store.test_windows import CEREBRAS, GROQ, put, put_as

    db, now = str(tmp_path / "t.db"), datetime.now(UTC)
    with open_store(db) as store:
        for i in range(3):
            put(store, GROQ, now - timedelta(hours=i + 1), ttft_ms=100)
            put_as(store, CEREBRAS, now - timedelta(hours=i + 1), ttft_ms=5, client_bound=True)
        store.flush()

    def first(*extra: str) -> tuple[str, int | None]:
        result = CliRunner().invoke(main, ["leaderboard", "--db", db, "--sort", "ttft", "--json", *extra])
        assert result.exit_code == 0, result.output
        top = json.loads(result.stdout)["entries"][0]
        return top["name"], top["rank"]

    assert first() == ("groq:free/llama", 1)
    assert first("--client-bound", "include") == ("cerebras/llama", 1)
    assert "client-bound" in CliRunner().invoke(main, ["leaderboard", "--help"]).output


@pytest.mark.parametrize("columns", ["80", "300"])
def test_leaderboard_of_an_empty_store_prints_its_title_once(tmp_path: Path, columns: str) -> None:
    result = CliRunner(env={"COLUMNS": columns}).invoke(main, ["leaderboard", "--db", str(tmp_path / "t.db")])
    assert result.exit_code == 0, result.output
    assert result.stdout.count("1k workload  ·  72 h median") == 1, result.stdout
    assert "no samples of the 1k workload in this window" in result.stdout


def test_leaderboard_choices() -> None:
    from tokenpace.board.query import SORTS
    from tokenpace.config.windows import WINDOWS

    board = main.commands["leaderboard"]
    types = {p.name: p.type for p in board.params}
    assert isinstance(types["sort"], click.Choice) and list(types["sort"].choices) == list(SORTS)
    assert isinstance(types["window"], click.Choice) and sorted(types["window"].choices) == sorted(WINDOWS)
    assert "'fastest' is not one of" in invoke("leaderboard", "--sort", "fastest").output


def test_the_terminal_leaderboard_shows_a_region_or_each(tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")
    with open_store(db) as store:
        for region in ("eu", "us"):
            for k in range(3):
                at = datetime.now(UTC) - timedelta(minutes=5 + k)
                store.add_sample(make_sample("run", GROQ, "1k", at, stream(100, 10), origin=Origin(region, region)))
    each = invoke("leaderboard", "--db", db, "--region", "*", "--json")
    assert each.exit_code == 0, each.output
    assert sorted(e["region"] for e in json.loads(each.stdout)["entries"]) == ["eu", "us"]
    one = json.loads(invoke("leaderboard", "--db", db, "--region", "us", "--json").stdout)
    assert [e["region"] for e in one["entries"]] == ["us"] and one["region"] == "us"
    assert "@eu" in invoke("leaderboard", "--db", db, "--region", "*").stdout
    assert_one_line(invoke("leaderboard", "--db", db, "--region", "nope"), "region 'nope': use one of eu, us")
