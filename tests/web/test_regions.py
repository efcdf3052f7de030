"""The board per region through the app (issue 11): a real SQLite store holding samples from two regions' agents
and from the serving process itself, the region menu, its caption, its 400s and every twin saying the region."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.store.test_windows import stream
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.config.regions import Region
from tokenpace.measure.sample import LOCAL, Network, Origin, make_sample
from tokenpace.store.database import Store, open_store
from tokenpace.web import create_app
from tokenpace.web.paths import endpoint_path

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
FAST = Endpoint("fastco", "llama", "http://127.0.0.1:1/v1", simulated=True)
SLOW = Endpoint("slowco", "llama", "http://127.0.0.1:2/v1", simulated=True)
# (region, endpoint) -> the TTFTs its samples took and the round trip its agent measured (None: no agent)
TTFT = {("eu-west", FAST): (100, 20), ("us-east", FAST): (300, 90), ("eu-west", SLOW): (400, 30),
        ("us-east", SLOW): (200, 10), (LOCAL, FAST): (1000, None)}  # fmt: skip
CONFIG = Config(endpoints=(FAST, SLOW), regions=(Region("eu-west", "Frankfurt"), Region("us-east")))


def fill(store: Store) -> None:
    for (region, endpoint), (ttft, rtt) in TTFT.items():
        for i in range(4):
            network = None if rtt is None else Network(rtt_ms=rtt)
            origin = Origin(region, f"{region}-1" if region else None, network=network)
            at = NOW - timedelta(hours=2 * i, minutes=5)
            store.add_sample(make_sample("run", endpoint, "1k", at, stream(ttft + i, 10), origin=origin))
    store.flush()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    with open_store(str(tmp_path_factory.mktemp("regions") / "r.db")) as s:
        fill(s)
        yield s


@pytest.fixture(scope="module")
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store, CONFIG, now=lambda: NOW)) as c:
        yield c


def board(c: TestClient, query: str = "") -> dict[str, Any]:
    r = c.get(f"/leaderboard.json{query}")
    assert r.status_code == 200, r.text
    found: dict[str, Any] = r.json()
    return found


def ttfts(data: dict[str, Any]) -> dict[tuple[str, str], float]:
    return {(e["provider"], e["region"]): e["ttft_ms"]["p50"] for e in data["entries"]}


def test_the_default_is_the_first_declared_region_and_the_page_says_so(client: TestClient) -> None:
    data = board(client)
    assert (data["region"], data["region_caption"]) == ("eu-west", "Measured from eu-west (Frankfurt)")
    assert ttfts(data) == {("fastco", "eu-west"): 101.5, ("slowco", "eu-west"): 401.5}
    assert [e["provider"] for e in data["entries"]] == ["fastco", "slowco"]  # equal speeds: by name
    assert data["regions"] == ["local", "eu-west", "us-east"]
    page = client.get("/").text
    assert "Measured from eu-west (Frankfurt)" in page
    assert '<select name="region">' in page and '<option value="us-east">us-east</option>' in page


def test_the_region_menu_switches_the_board(client: TestClient) -> None:
    east = board(client, "?region=us-east&sort=ttft")
    assert ttfts(east) == {("slowco", "us-east"): 201.5, ("fastco", "us-east"): 301.5}
    assert [e["provider"] for e in east["entries"]] == ["slowco", "fastco"]  # another region, another winner
    assert "Measured from us-east" in client.get("/?region=us-east").text
    local = board(client, "?region=local")
    assert ttfts(local) == {("fastco", "local"): 1001.5}
    pooled = board(client, "?region=all")
    assert pooled["region_caption"] == "All regions pooled"
    assert {(e["provider"], e["region"], e["samples"]) for e in pooled["entries"]} == {
        ("fastco", "all", 12), ("slowco", "all", 8)
    }  # fmt: skip


def test_each_region_apart_lists_a_row_per_endpoint_and_region(client: TestClient) -> None:
    data = board(client, "?region=*")
    assert ttfts(data) == {
        ("fastco", "eu-west"): 101.5, ("fastco", "us-east"): 301.5, ("fastco", "local"): 1001.5,
        ("slowco", "eu-west"): 401.5, ("slowco", "us-east"): 201.5,
    }  # fmt: skip
    assert {(m["region"], m["providers"]) for m in data["models"]} == {("eu-west", 2), ("us-east", 2), ("local", 1)}
    page = client.get("/?region=*").text
    assert 'data-endpoint="fastco/llama" data-region="us-east"' in page and "<th>Region</th>" in page
    assert "fastco/llama @us-east" in page and "fastco/llama @eu-west" in page  # the charts tell the rows apart


@pytest.mark.parametrize("value", ["nope", "EU!", "x" * 300])
@pytest.mark.parametrize("path", ["/", "/leaderboard.json", "/leaderboard.csv"])
def test_an_unknown_region_is_a_400_of_one_line(client: TestClient, value: str, path: str) -> None:
    r = client.get(path, params={"region": value})
    assert r.status_code == 400
    message = r.json()["error"] if path.endswith(".json") else r.text
    assert "region" in message
    if path != "/":
        assert "\n" not in message.strip()


def test_ttft_less_the_round_trip_is_shown_beside_ttft_where_agents_measured_it(client: TestClient) -> None:
    data = board(client, "?region=*")
    net = {(e["provider"], e["region"]): e["ttft_net_ms"]["p50"] for e in data["entries"]}
    assert net == {
        ("fastco", "eu-west"): 81.5, ("fastco", "us-east"): 211.5, ("fastco", "local"): None,
        ("slowco", "eu-west"): 371.5, ("slowco", "us-east"): 191.5,
    }  # fmt: skip
    page = client.get("/").text
    assert "TTFT \u2212 RTT" in page and "queueing" in page and 'data-col="ttft_net"' in page
    assert "TTFT \u2212 RTT" not in client.get("/?region=local").text  # no agent: no round trip measured


def test_the_csv_says_each_rows_region_and_its_corrected_ttft(client: TestClient) -> None:
    text = client.get("/leaderboard.csv?region=*").text
    table = list(csv.DictReader(io.StringIO(text)))
    assert {(r["provider"], r["region"]) for r in table} == {
        ("fastco", "eu-west"), ("fastco", "us-east"), ("fastco", "local"), ("slowco", "eu-west"), ("slowco", "us-east")
    }  # fmt: skip
    west = next(r for r in table if r["region"] == "eu-west" and r["provider"] == "fastco")
    assert float(west["ttft_net_ms_p50"]) == 81.5


def test_the_model_page_has_a_region_by_provider_grid(client: TestClient) -> None:
    r = client.get("/model/llama.json")
    assert r.status_code == 200, r.text
    grid = r.json()["region_grid"]
    assert grid["regions"] == ["eu-west", "us-east", "local"]
    cells = {row["provider"]: row["cells"] for row in grid["rows"]}
    assert cells["slowco"]["us-east"]["ttft_ms"] == 201.5 and cells["slowco"]["local"] is None
    assert cells["fastco"]["local"]["counted"] == 4
    assert 'id="region-grid"' in client.get("/model/llama").text


def test_a_store_without_agents_shows_no_region_at_all(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "plain.db")) as s:
        s.add_sample(make_sample("run", FAST, "1k", NOW - timedelta(minutes=1), stream(100, 10)))
        s.flush()
        with TestClient(create_app(s, Config(endpoints=(FAST,)), now=lambda: NOW)) as c:
            page = c.get("/").text
            assert 'name="region"' not in page and "Measured from" not in page and "RTT" not in page
            data = c.get("/leaderboard.json").json()
            assert (data["region"], data["region_caption"], data["entries"][0]["region"]) == ("all", None, "all")
            assert c.get("/model/llama.json").json()["region_grid"] is None
            assert c.get("/?region=nope").status_code == 400


def test_the_methodology_says_what_the_correction_removes_and_what_it_cannot(client: TestClient) -> None:
    page = client.get("/methodology").text
    assert "Network-corrected TTFT" in page
    text = client.get("/methodology.json").json()["network"]
    assert "round trip" in text and "cannot take off the provider's queueing" in text


def test_an_endpoint_page_shows_one_region_or_all_pooled(client: TestClient) -> None:
    """Issue 21 item 8: the endpoint page reads the region asked (its charts, percentiles, recent samples and
    JSON), pools every region without one, and the board's rows of a region link to that region's page."""
    link = endpoint_path(FAST.provider, FAST.plan, FAST.model)

    def figures(query: str) -> tuple[str, list[tuple[str, int, float]], list[float]]:
        r = client.get(f"{link}.json{query}")
        assert r.status_code == 200, r.text
        data = r.json()
        rows = [(row["region"], row["samples"], row["ttft_ms"]["p50"]) for row in data["rows"]]
        return data["region"], rows, sorted(p["ttft_ms"] for p in data["series"]["1k"])

    east = figures("?region=us-east")
    assert east[:2] == ("us-east", [("us-east", 4, 301.5)]) and len(east[2]) == 4 and 290 < east[2][0] < 320
    local = figures("?region=local")
    assert local[:2] == ("local", [("local", 4, 1001.5)]) and min(local[2]) > 990
    pooled = figures("")
    assert pooled[0] == "all" and pooled[1][0][:2] == ("all", 12) and len(pooled[2]) == 12
    page = client.get(f"{link}?region=us-east").text
    assert '<option value="us-east" selected>' in page and "Measured from us-east" in page
    assert '<option value="*"' not in page  # each region apart is the board's
    assert f'href="{link}?region=eu-west"' in client.get("/").text  # the board's default region
    assert f'href="{link}?region=us-east"' in client.get("/?region=*").text
    for bad in ("*", "mars"):
        r = client.get(f"{link}?region={bad}")
        assert r.status_code == 400 and "region" in r.text


def test_a_model_page_shows_one_region_or_all_pooled(client: TestClient) -> None:
    """Issue 21 item 8: the model page too, its JSON twin saying the region; its grid still shows every one."""
    east = client.get("/model/llama.json?region=us-east").json()
    assert east["region"] == "us-east"
    assert {e["provider"]: e["ttft_ms"]["p50"] for e in east["endpoints"]} == {"slowco": 201.5, "fastco": 301.5}
    assert {name: len(points) for name, points in east["series"].items()} == {"fastco/llama": 4, "slowco/llama": 4}
    assert east["region_grid"]["regions"] == ["eu-west", "us-east", "local"]
    pooled = client.get("/model/llama.json").json()
    assert pooled["region"] == "all" and {e["samples"] for e in pooled["endpoints"]} == {12, 8}
    page = client.get("/model/llama?region=us-east").text
    assert (
        "Measured from us-east" in page
        and f'href="{endpoint_path("slowco", "default", "llama")}?region=us-east"' in page
    )
    assert client.get("/model/llama?region=mars").status_code == 400
