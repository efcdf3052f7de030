"""The routing feed's core (issue 33): one model's endpoints ranked for a goal, each in or out and why, read
from a real store as of any time, its figures from now-windows where the cadence fills them."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.store.test_windows import NOW, fail, put
from tokenpace.board.route import NOW_WINDOWS, Candidate, Goal, rank
from tokenpace.board.route_read import goal_from_params, read_route, route_dict
from tokenpace.board.rules import UNMEASURED_LIMIT
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.config.prices import Price
from tokenpace.config.windows import WINDOWS
from tokenpace.errors import BadRequest
from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.metrics import percentile
from tokenpace.store.database import Store, open_store
from tokenpace.store.windows import EndpointRow, endpoint_rows

FAST = Endpoint("fastco", "llama", "http://fast.invalid/v1", api_key_env="FAST_KEY")  # uncapped: every 5 min
STEADY = Endpoint("steadyco", "llama", "http://steady.invalid/v1")  # per-token: every 4 h
FLAKY = Endpoint("flakyco", "llama", "http://flaky.invalid/v1")
GONE = Endpoint("goneco", "llama", "http://gone.invalid/v1")  # its samples stopped 40 h ago
FEW = Endpoint("fewco", "llama", "http://few.invalid/v1")  # one sample
OTHER = Endpoint("otherco", "mistral", "http://other.invalid/v1")  # another model: never on llama's route
H72 = WINDOWS["72h"]
PRICES = {
    ("fastco", "default", "llama"): Price(1.0, 2.0),  # blended (3 + 2) / 4 = 1.25
    ("steadyco", "default", "llama"): Price(0.2, 0.2),
}
CONFIG = Config(endpoints=(FAST, STEADY, FLAKY, GONE, FEW, OTHER), prices=PRICES)


@pytest.fixture(params=["sqlite", "postgres"])
def filled(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    url = str(tmp_path / "route.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    with open_store(url) as store:
        for i in range(12):  # every 5 min over the last hour: 6 in the last 30 min
            put(store, FAST, NOW - timedelta(minutes=5 * i + 1), ttft_ms=300, gap_ms=2)
        for i in range(8):  # every 4 h: none in the last hour
            put(store, STEADY, NOW - timedelta(hours=4 * i + 2), ttft_ms=50, gap_ms=10)
        for i in range(6):
            at = NOW - timedelta(hours=i + 1)
            put(store, FLAKY, at, ttft_ms=40, gap_ms=1)
            fail(store, FLAKY, at, ErrorKind.HTTP_ERROR)  # half fail
            put(store, GONE, at - timedelta(hours=40), ttft_ms=30, gap_ms=1)
            put(store, OTHER, at, gap_ms=1)
        put(store, FEW, NOW - timedelta(minutes=3), gap_ms=1)
        store.flush()
        yield store


def stale_after(row: EndpointRow) -> float | None:
    """Two of each endpoint's intervals, as cadence.stale_after gives them; nothing measures goneco any more."""
    return {"fastco": 600.0, "steadyco": 8 * 3600.0, "goneco": UNMEASURED_LIMIT}.get(row.provider, 3600.0)


def by_name(route_json: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in route_json["entries"]}


def test_endpoints_ranked_for_speed_each_in_or_out_with_its_reason(filled: Store) -> None:
    route = read_route(filled, CONFIG, Goal("llama"), NOW, stale_after=stale_after)
    data = route_dict(route)
    assert [(e["name"], e["rank"], e["in"]) for e in data["entries"]] == [
        ("fastco/llama", 1, True),  # 2 ms a token: ~500 tok/s
        ("steadyco/llama", 2, True),  # ~100 tok/s
        ("fewco/llama", None, False),
        ("flakyco/llama", None, False),
        ("goneco/llama", None, False),
    ]
    got = by_name(data)
    assert [o["code"] for o in got["fewco/llama"]["out"]] == ["too_few"]
    assert got["fewco/llama"]["reason"] == "out: too few: n=1 < 3 in the 72 h median"
    assert [o["code"] for o in got["flakyco/llama"]["out"]] == ["min_success"]
    assert "50.0% < 90.0%" in got["flakyco/llama"]["reason"]
    assert [o["code"] for o in got["goneco/llama"]["out"]] == ["unmeasured"] and got["goneco/llama"]["stale"]
    assert got["fastco/llama"]["reason"].startswith("in: P50 Output speed ")


def test_a_now_window_where_the_cadence_fills_it_labelled_with_its_n(filled: Store) -> None:
    got = by_name(route_dict(read_route(filled, CONFIG, Goal("llama"), NOW, stale_after=stale_after)))
    fast, steady = got["fastco/llama"], got["steadyco/llama"]
    assert fast["window"]["name"] == "30m" and fast["now_window"] and fast["n"] == 6
    assert fast["windows"] == [{"name": "30m", "n": 6}, {"name": "1h", "n": 12}, {"name": "72h", "n": 12}]
    # every 4 h: no now-window holds three samples, so the board's window, and the feed says so
    assert steady["window"]["name"] == "72h" and not steady["now_window"]
    assert steady["windows"] == [{"name": "30m", "n": 0}, {"name": "1h", "n": 0}, {"name": "72h", "n": 8}]
    assert "no now-window held enough samples" in steady["reason"]
    assert [w.name for w in NOW_WINDOWS] == ["30m", "1h"]


def test_ttft_ranks_the_quickest_first_and_a_stale_one_out(filled: Store) -> None:
    later = NOW + timedelta(minutes=20)  # fastco's last sample is now 21 min old, over its 10 min limit
    route = read_route(filled, CONFIG, Goal("llama", by="ttft"), later, stale_after=stale_after)
    got = by_name(route_dict(route))
    assert [p.row.name for p in route.chosen] == ["steadyco/llama"]
    assert [o["code"] for o in got["fastco/llama"]["out"]] == ["stale"] and got["fastco/llama"]["age_s"] > 600
    assert got["fastco/llama"]["out"][0]["why"] == "stale: last sample 21 min ago, over its limit of 10 min"


def test_a_route_as_of_an_earlier_hour_reads_only_the_samples_before_it(filled: Store) -> None:
    """What the regret replay needs: the route at t is computable from the samples up to t."""
    earlier = NOW - timedelta(hours=3)
    route = read_route(filled, CONFIG, Goal("llama", min_samples=1), earlier, stale_after=stale_after)
    got = by_name(route_dict(route))
    assert "fastco/llama" not in got and "fewco/llama" not in got  # their samples all came later
    assert got["steadyco/llama"]["windows"][-1]["n"] == 7  # the one 2 h before NOW is after `earlier`
    rows = endpoint_rows(filled, H72, earlier, workload="1k", model=["llama"])
    assert max(r.last_at for r in rows if r.last_at) <= earlier


def test_an_endpoint_failing_every_request_now_is_out_though_its_older_window_looks_fine(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "down.db")) as store:
        for i in range(60):
            put(store, FAST, NOW - timedelta(hours=2 + i), gap_ms=2)  # healthy for 60 h
        for i in range(4):
            fail(store, FAST, NOW - timedelta(minutes=5 * i + 1), ErrorKind.HTTP_ERROR)  # down since 20 min
        store.flush()
        (p,) = read_route(store, CONFIG, Goal("llama"), NOW).picks
    assert p.window.name == "72h" and p.success == 60 / 64  # over 72 h: above the 90 % bound
    assert p.reasons == (("min_success", "succeeds 0.0% < 90.0% in the last 30 min"),)


def test_price_ranks_the_cheapest_first_and_max_price_and_unpriced_are_out(filled: Store) -> None:
    cheap = route_dict(read_route(filled, CONFIG, Goal("llama", by="price"), NOW, stale_after=stale_after))
    assert [(e["name"], e["rank"], e["figure"]) for e in cheap["entries"] if e["in"]] == [
        ("steadyco/llama", 1, 0.2),
        ("fastco/llama", 2, 1.25),
    ]
    assert cheap["goal"]["p"] is None
    capped = by_name(route_dict(read_route(filled, CONFIG, Goal("llama", max_price=1.0), NOW, stale_after=stale_after)))
    assert [o["code"] for o in capped["fastco/llama"]["out"]] == ["max_price"]
    assert capped["steadyco/llama"]["in"]
    assert "unpriced" in [o["code"] for o in capped["fewco/llama"]["out"]]


def test_p90_is_the_tail_nine_requests_in_ten_reach_and_needs_its_samples(tmp_path: Path) -> None:
    rng = random.Random(7)
    ttfts: dict[str, list[float]] = {"fastco": [], "steadyco": []}
    with open_store(str(tmp_path / "p90.db")) as store:
        for i in range(60):
            for e, base in ((FAST, 100.0), (STEADY, 80.0)):
                t = rng.lognormvariate(0, 0.6) * base
                ttfts[e.provider].append(t)
                put(store, e, NOW - timedelta(minutes=40 * i + 1), ttft_ms=t, gap_ms=rng.uniform(1, 10))
        store.flush()
        route = read_route(store, CONFIG, Goal("llama", by="ttft", p=90), NOW)
        few = read_route(store, CONFIG, Goal("llama", by="ttft", p=90), NOW - timedelta(hours=30))
        speed = read_route(store, CONFIG, Goal("llama", by="speed", p=90), NOW)
    got = {p.row.provider: p for p in route.picks}
    for provider, values in ttfts.items():  # the TTFT as stored: whole microseconds of a stream's timeline
        assert got[provider].figure == pytest.approx(percentile(values, 90), abs=0.01)
        assert got[provider].window.name == "72h" and got[provider].n == 60
        lo, hi = got[provider].interval or (0.0, 0.0)
        assert lo <= (got[provider].figure or 0.0) <= hi
    assert all(p.chosen for p in route.picks)
    # 30 h before: 15 samples each, fewer than the 44 a P90 needs at 99 %
    assert {p.reasons[0][0] for p in few.picks} == {"too_few"}
    assert all(p.reasons[0][1].startswith("too few: n=15 < 44") for p in few.picks)
    assert few.picks[0].reasons[0][1].startswith("too few: n=15 < 44")
    speeds = {p.row.provider: p for p in speed.picks}
    fast = speeds["fastco"]
    assert (fast.figure or 0.0) < (fast.row.output_speed.p50 or 0.0)  # the slow tail, P10 of speeds


def test_overlapping_intervals_tie_as_the_board_states_them() -> None:
    """The core is pure: candidates in, a route out, no clock read; the board's tie rule."""
    from tokenpace.measure.stats import figure

    def row(provider: str, speeds: Sequence[float]) -> EndpointRow:
        return EndpointRow(
            provider, "default", "llama", "1k", "openai-chat", False, len(speeds), 0, 1.0, figure(speeds),
            figure([]), figure([]), NOW - timedelta(minutes=1), NOW - timedelta(minutes=1), 1800, (),
        )  # fmt: skip

    candidates = [
        Candidate(((NOW_WINDOWS[0], row(p, speeds)),))
        for p, speeds in (("a", [100, 101, 102, 103, 104]), ("b", [102, 103, 104, 105, 106]), ("c", [1, 2, 3, 4, 5]))
    ]
    route = rank(candidates, Goal("llama"), NOW)
    assert [(p.row.provider, p.rank, p.tied) for p in route.picks] == [("b", 1, True), ("a", 1, True), ("c", 3, False)]
    assert dataclasses.replace(route.picks[0], rank=None).chosen  # in is about reasons, not a rank


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "model '': give a model's name"),
        ({"model": "x" * 201}, "model 'xxxxxxxxxx"),
        ({"model": "llama", "by": "vibes"}, "by 'vibes': use one of speed, ttft, e2e, price"),
        ({"model": "llama", "p": "99"}, "p '99': use one of 50, 90"),
        ({"model": "llama", "max_price": "nan"}, "max_price 'nan': use a number from 0 to 1e+06"),
        ({"model": "llama", "max_price": "1" * 30}, "max_price '111111111111111111111111111111': use a number"),
        ({"model": "llama", "min_success": "2"}, "min_success '2': use a number from 0 to 1"),
        ({"model": "llama", "min_samples": "-1"}, "min_samples '-1': use a whole number"),
        ({"model": "llama", "region": "*"}, "region '*': a route is of one region"),
        ({"model": "llama", "window": "1y"}, "window '1y': use one of 24h, 72h, 7d"),
        ({"model": "llama", "window": "y" * 5000}, f"window '{'y' * 40}...': use one of 24h, 72h, 7d"),
    ],
)
def test_bad_goal_values_say_what_to_fix(params: dict[str, str], message: str) -> None:
    with pytest.raises(BadRequest) as exc:
        goal_from_params(params)
    assert str(exc.value).startswith(message) and "\n" not in str(exc.value) and len(str(exc.value)) < 300


def test_goal_from_params_defaults() -> None:
    goal, window = goal_from_params({"model": "llama", "by": "e2e", "p": "90", "max_price": "0.5"}, 5, "10k")
    assert (goal.by, goal.p, goal.max_price, goal.min_samples, goal.workload, window.name) == (
        "e2e", 90, 0.5, 5, "10k", "72h",
    )  # fmt: skip
    assert goal.needed == 44
