"""/routing and its JSON twin over a real store: the worked example of tests/board/test_regret.py written as samples,
scored the same through SQLite (PostgreSQL too), the formula above the table, names escaped, rows and workload
names bounded, and /methodology stating the same formula."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.board.test_regret import PRICES, SPEEDS, T0
from tests.store.test_windows import stream
from tests.webkit import EVIL
from tokenpace.board import routing
from tokenpace.board.policies import policies
from tokenpace.board.regret import score
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.config.prices import Price
from tokenpace.measure.sample import make_sample
from tokenpace.store.database import Store, open_store
from tokenpace.store.series import placed_series
from tokenpace.web import create_app
from tokenpace.web.routing import MAX_WORKLOADS

NOW = T0 + timedelta(hours=3)
ENDPOINTS = {p: Endpoint(p, "m", f"http://{p}.invalid/v1", plan="free") for p in "abc"}
HOSTILE = Endpoint("evil", f'{EVIL}&"x"', "http://evil.invalid/v1")
CONFIG = Config(
    endpoints=(*ENDPOINTS.values(), HOSTILE),
    prices={(p, "free", "m"): Price(v, v) for p, v in (("a", 1.0), ("b", 2.0), ("c", 3.0))},
)
assert {f"{p}:free/m": v for p, v in (("a", 1.0), ("b", 2.0), ("c", 3.0))} == PRICES  # blended 3:1 of (v, v) is v


def write_example(store: Store) -> None:
    """The worked example's samples: 5 tokens, so a speed of 4 tokens over 4 gaps is 1000 / gap tok/s."""
    for provider, minutes, speed in SPEEDS:
        at = T0 + timedelta(minutes=minutes)
        store.add_sample(make_sample("run", ENDPOINTS[provider], "1k", at, stream(100, 1000 / speed)))
    store.add_sample(make_sample("run", HOSTILE, "1k", T0 + timedelta(minutes=30), stream(100, 10)))
    store.flush()


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with open_store(str(tmp_path / "routing.db")) as store:
        write_example(store)
        with TestClient(create_app(store, CONFIG, now=lambda: NOW)) as c:
            yield c


def test_the_worked_example_through_the_store(any_store: Store) -> None:
    """The page's week holds the two hours before T0 too. At T0 - 12 h nobody but cheapest first has a sample to
    pick by (a: 110/100 = 1.1 against c). In the hour before T0 only b has a sample: cheapest first picks a, the
    others c (the best over the day before it, and over the feed's 72 h): no choice measured. The three hours
    after T0 are the example's (tests/board/test_regret.py)."""
    write_example(any_store)  # SQLite and PostgreSQL
    found, workloads = routing.read_scores(any_store, CONFIG, NOW, "1k", min_samples=1)
    assert workloads == ["1k"]
    rows = {(s.model, s.policy): s for s in found if s.key == "output_speed"}
    expected = {  # mean, hours, no pick, unmeasured
        "cheapest first": ((1.1 + 2.0 + 1.2 + 2.0) / 4, 4, 0, 1),
        "fastest over the last 24 h": (28 / 15, 2, 1, 2),
        "the feed at P50": (13 / 9, 3, 1, 1),
        "the feed at P90": (None, 0, 5, 0),
    }
    for name, (mean, hours, no_pick, unmeasured) in expected.items():
        s = rows[("m", name)]
        assert s.mean == pytest.approx(mean, abs=1e-6), name  # speeds stored as whole-ns timings
        assert (s.hours, s.no_pick, s.unmeasured) == (hours, no_pick, unmeasured), name
    # The same as the pure scoring of the samples as read back.
    placed = [s for s in placed_series(any_store, since=T0 - timedelta(days=2)) if s.model == "m"]
    assert [s for s in found if s.model == "m"] == score(placed, policies(PRICES, 1), NOW - timedelta(days=7), NOW)


def test_the_page_and_its_twin_state_the_formula_and_escape_names(client: TestClient) -> None:
    doc = client.get("/routing.json").json()
    assert doc["formula"].startswith("Regret = best / chosen where a higher figure is better")
    assert [p["name"] for p in doc["policies"]] == [
        "cheapest first", "fastest over the last 24 h", "the feed at P50", "the feed at P90"
    ]  # fmt: skip
    assert (doc["workload"], doc["count"], doc["listed"], doc["span_days"]) == ("1k", 16, 16, 7)
    speed = {r["policy"]: r for r in doc["rows"] if r["model"] == "m" and r["figure"] == "output_speed"}
    day = speed["fastest over the last 24 h"]
    assert day["mean_regret"] == pytest.approx(28 / 15, abs=1e-6) and (day["hours"], day["unmeasured"]) == (2, 2)
    assert day["figure_label"] == "Output speed" and day["region"] == "local" and day["regret_lo"] == 1.0
    assert {r["model"] for r in doc["rows"]} == {"m", f'{EVIL}&"x"'}
    page = client.get("/routing")
    assert page.status_code == 200 and 'id="routing"' in page.text and 'id="formula"' in page.text
    assert "Regret = best / chosen where a higher figure is better" in page.text
    assert EVIL not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;&amp;&#34;x&#34;" in page.text
    assert '<a href="/routing">Routing</a>' in page.text
    assert ">1.87<" in page.text and "1.00\u20132.91" in page.text  # fastest over 24 h: its interval cut at 1
    method = client.get("/methodology")
    assert 'id="routing"' in method.text and "Regret = best / chosen" in method.text
    assert client.get("/methodology.json").json()["routing"]["formula"] == doc["formula"]


def test_an_unknown_or_hostile_workload_is_refused_in_one_line(client: TestClient) -> None:
    for name in ("nope", EVIL, "x" * 5000):
        r = client.get("/routing.json", params={"workload": name})
        assert r.status_code == 400 and r.json()["error"].startswith("workload "), name
        assert len(r.json()["error"]) < 200 and "use one of 1k" in r.json()["error"]
    html = client.get("/routing", params={"workload": EVIL})
    assert html.status_code == 400 and EVIL not in html.text
    assert client.get("/routing?workload=a%00b").status_code == 400


def test_many_models_list_at_most_max_rows(tmp_path: Path) -> None:
    models = routing.MAX_ROUTING_ROWS // 8 + 1  # 4 policies and 2 figures each: 8 rows a model
    with open_store(str(tmp_path / "many.db")) as store:
        for i in range(models):
            e = Endpoint("p", f"model-{i:03}", "http://p.invalid/v1")
            store.add_sample(make_sample("run", e, "1k", T0 + timedelta(minutes=30), stream(100, 10)))
        store.flush()
        with TestClient(create_app(store, Config(), now=lambda: NOW)) as c:
            doc = c.get("/routing.json").json()
            text = c.get("/routing").text
    assert (doc["count"], doc["listed"], len(doc["rows"])) == (
        8 * models,
        routing.MAX_ROUTING_ROWS,
        routing.MAX_ROUTING_ROWS,
    )
    assert f"The first {routing.MAX_ROUTING_ROWS} rows of {8 * models} are listed." in text


def test_many_workloads_list_at_most_max_workloads(tmp_path: Path) -> None:
    e = Endpoint("p", "m", "http://p.invalid/v1")
    with open_store(str(tmp_path / "workloads.db")) as store:
        for i in range(MAX_WORKLOADS + 10):
            store.add_sample(make_sample("run", e, f"w{i:03}", T0 + timedelta(minutes=30), stream(100, 10)))
        store.flush()
        with TestClient(create_app(store, Config(), now=lambda: NOW)) as c:
            doc = c.get("/routing.json", params={"workload": "w059"}).json()
            refused = c.get("/routing.json", params={"workload": "nope"}).json()["error"]
    assert doc["workload"] == "w059" and len(doc["workloads"]) == MAX_WORKLOADS
    assert refused.endswith(", ...") and refused.count(", ") == MAX_WORKLOADS
