"""Which region a board shows: the parameter's spellings, its checks, its default, and rows per region that go
stale on their own, over a real store."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from tests.store.test_windows import GROQ, NOW, stream
from tokenpace.board import regions
from tokenpace.board.query import Query
from tokenpace.board.ranking import read_board
from tokenpace.config.endpoints import Config
from tokenpace.config.regions import Region
from tokenpace.config.windows import EACH
from tokenpace.errors import BadRequest
from tokenpace.measure.sample import LOCAL, Origin, make_sample
from tokenpace.store.database import open_store
from tokenpace.store.windows import EndpointRow

DECLARED = Config(regions=(Region("eu-west", "Frankfurt"), Region("us-east")))


def test_the_spellings_read_as_the_windows_read() -> None:
    assert [regions.store_filter(v) for v in ("all", "local", "*", "eu-west")] == [None, LOCAL, EACH, "eu-west"]
    assert [regions.token(r) for r in (None, LOCAL, "eu-west")] == ["all", "local", "eu-west"]


def test_the_default_is_the_first_declared_region_else_every_region_pooled() -> None:
    assert regions.default(DECLARED) == "eu-west" and regions.default(Config()) == "all"
    q = Query.from_params({}, region=regions.default(DECLARED))
    assert q.region == "eu-west" and q.params() == "" and q.params(region="us-east") == "region=us-east"


@pytest.mark.parametrize("value", ["EU", "a b", "x" * 41, "%00", "-eu"])
def test_a_malformed_value_is_one_line(value: str) -> None:
    with pytest.raises(BadRequest, match=r"region .*: use a region's name, all") as caught:
        Query(region=value)
    assert "\n" not in str(caught.value)


def test_a_well_formed_name_must_be_in_the_data_or_the_config() -> None:
    assert regions.check_known("us-east", {LOCAL}, DECLARED) == "us-east"
    assert regions.check_known("ap-south", {"ap-south"}, Config()) == "ap-south"
    with pytest.raises(BadRequest, match=r"region 'nope': use one of eu-west, us-east, ap-south, all, local, \*"):
        regions.check_known("nope", {"ap-south", LOCAL}, DECLARED)


def test_the_menu_and_caption_name_regions_by_their_labels() -> None:
    menu = regions.menu("eu-west", ["", "eu-west", "ap-south"], DECLARED)
    assert menu["options"] == [
        ("eu-west", "eu-west (Frankfurt)"), ("us-east", "us-east"), ("ap-south", "ap-south"),
        ("local", "this server (no agent)"), ("all", "all regions pooled"), ("*", "each region apart"),
    ]  # fmt: skip
    assert regions.caption("eu-west", DECLARED) == "Measured from eu-west (Frankfurt)"
    assert regions.caption("all", DECLARED) == "All regions pooled"
    assert not regions.wanted({LOCAL}, Config()) and regions.wanted({LOCAL, "x"}, Config())


def test_a_regions_row_goes_stale_on_its_own(tmp_path: Path) -> None:
    """An agent down in eu-west: its row stops taking samples and goes stale; us-east's and the pooled row stay
    fresh, the pooled one taking its last sample from the region still measuring."""
    with open_store(str(tmp_path / "s.db")) as store:
        for region, ago in (("eu-west", timedelta(hours=2)), ("us-east", timedelta(minutes=1))):
            origin = Origin(region, f"{region}-1")
            store.add_sample(make_sample("run", GROQ, "1k", NOW - ago, stream(100, 10), origin=origin))
        store.flush()

        def hour(row: EndpointRow) -> float:
            return 3600.0

        each = read_board(store, Query(region="*"), NOW, stale_after=hour, config=DECLARED)
        assert {(e.row.region, e.stale) for e in each.entries} == {("eu-west", True), ("us-east", False)}
        pooled = read_board(store, Query(region="all"), NOW, stale_after=hour, config=DECLARED)
        assert [(e.row.region, e.stale) for e in pooled.entries] == [(None, False)]
        with pytest.raises(BadRequest, match="region 'nope'"):
            read_board(store, Query(region="nope"), NOW, config=DECLARED)
