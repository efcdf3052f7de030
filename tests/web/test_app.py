"""The web app in-process against a real SQLite store filled by real simulator runs of known, different speeds."""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import html
import io
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from tests.webkit import EVIL, SECRET, Fleet, charts, filled_store, legend, marks
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.settings import Budget, PlanSettings, ScheduleSettings
from tokenpace.errors import StoreError
from tokenpace.measure.catalogue import FIGURES
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.sample import make_sample
from tokenpace.measure.timing import Timeline
from tokenpace.schedule.cadence import jobs
from tokenpace.schedule.sampler import Sampler
from tokenpace.store.database import Store, open_store
from tokenpace.web import create_app
from tokenpace.web.memo import Memo
from tokenpace.web.paths import endpoint_path, model_path

ROW = re.compile(r'<tr class="[^"]*" data-endpoint="([^"]*)">')


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, Fleet]]:
    store, fleet = filled_store(tmp_path_factory.mktemp("web") / "web.db")
    with store:
        yield store, fleet


@pytest.fixture(scope="module")
def client(filled: tuple[Store, Fleet]) -> Iterator[TestClient]:
    store, fleet = filled
    with TestClient(create_app(store, fleet.config)) as c:
        yield c


def rows(page: str) -> list[str]:
    """Endpoint names of the leaderboard's rows, top to bottom."""
    return [html.unescape(name) for name in ROW.findall(page)]


def entries(c: TestClient, query: str = "") -> list[dict[str, Any]]:
    r = c.get(f"/leaderboard.json{query}")
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["entries"]
    return found


def test_leaderboard_ranks_by_speed_and_shows_every_count(client: TestClient, filled: tuple[Store, Fleet]) -> None:
    _, fleet = filled
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    names = rows(r.text)
    ranked = [e.name for e in fleet.ranked]
    assert [n for n in names if n in ranked] == ranked  # fastest first
    # not ranked: last; flaky (50 % ok) fails more than 1 in 10, so it follows the healthy one whatever its speed
    assert names[-2:] == [fleet.few.name, fleet.flaky.name]
    assert "too few samples (n=2 &lt; 3)" in r.text
    assert r.text.count('class="badge sim"') >= len(names)  # every row is a simulator and says so
    assert "n=4" in r.text and "tok/s" in r.text
    # The JSON twin comes from the same view: same rows, same order.
    assert [e["name"] for e in entries(client)] == names
    flaky = next(e for e in entries(client) if e["provider"] == "flakyco")
    assert flaky["samples"] == 4 and 0 < flaky["failures"] < 4
    assert flaky["success_rate"] == pytest.approx((4 - flaky["failures"]) / 4)


def test_sorting_by_url_and_header_links(client: TestClient) -> None:
    page = client.get("/").text
    assert 'href="/?sort=ttft"' in page and 'aria-sort="descending"' in page
    ttft = client.get("/?sort=ttft")
    assert ttft.status_code == 200
    assert 'href="/?sort=ttft&amp;order=desc"' in ttft.text  # clicked again: the other way round
    ranked = [e for e in entries(client, "?sort=ttft") if e["rank"] is not None]
    values = [e["ttft_ms"]["p50"] for e in ranked]
    assert values == sorted(values) and len(values) >= 3
    down = [e["ttft_ms"]["p50"] for e in entries(client, "?sort=ttft&order=desc") if e["rank"] is not None]
    assert down == sorted(values, reverse=True)
    assert [e["name"] for e in entries(client, "?sort=ttft")] == rows(ttft.text)


def test_filters_by_provider_plan_workload_and_window(client: TestClient, filled: tuple[Store, Fleet]) -> None:
    _, fleet = filled
    assert rows(client.get("/?provider=fastco").text) == [fleet.fast.name]
    assert rows(client.get("/?plan=pro").text) == [fleet.slow.name]
    assert rows(client.get("/?workload=tiny").text) == [fleet.fast.name, fleet.slow.name]
    assert set(rows(client.get("/?window=24h&provider=").text)) == {e.name for e in fleet.config.endpoints}
    form = client.get("/").text
    for name in ("window", "workload", "provider", "plan"):
        assert f'<select name="{name}">' in form  # a plain GET form: filters work without JavaScript


def test_bad_parameters_are_400_with_one_line(client: TestClient) -> None:
    for url in ("/?sort=fastest", "/?window=1y", "/?order=sideways"):
        r = client.get(url)
        assert r.status_code == 400, url
        assert re.search(r'<p class="notice">[^\n<]+</p>', r.text), r.text
    r = client.get("/leaderboard.json?sort=fastest")
    assert r.status_code == 400 and "sort" in r.json()["error"] and "\n" not in r.json()["error"]
    r = client.get("/samples.csv?since=yesterday")
    assert r.status_code == 400 and r.text.count("\n") == 1 and "since" in r.text
    assert client.get(endpoint_path("fastco", "default", "sim-fast") + "?window=1y").status_code == 400
    assert client.get("/endpoint/nobody/default/nothing").status_code == 404
    assert client.get("/model/no-such-model.json").status_code == 404


def test_leaderboard_csv_matches_the_table(client: TestClient) -> None:
    r = client.get("/leaderboard.csv?sort=ttft")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    table = list(csv.reader(io.StringIO(r.text)))
    assert len(table) == 1 + len(entries(client, "?sort=ttft"))


def _ttft_ms(mark: str) -> float:
    """The value of a time chart's mark: "SERIES: HH:MM: VALUE"."""
    return float(mark.rsplit(": ", 1)[1].replace(",", ""))


def test_endpoint_page_charts_and_fallback(client: TestClient, filled: tuple[Store, Fleet]) -> None:
    _, fleet = filled
    board = client.get("/").text
    link = endpoint_path(fleet.slow.provider, fleet.slow.plan, fleet.slow.model)
    assert f'href="{link}"' in board
    r = client.get(link)
    assert r.status_code == 200
    assert r.text.count("<script") == 1  # app.js, which only submits menus: the charts are SVG
    assert 'class="stats"' in r.text and 'class="recent"' in r.text  # the same figures as tables
    drawn = charts(r.text)
    assert set(drawn) == {"chart-speed", "chart-ttft", "chart-speed-dist", "chart-ttft-dist"}
    assert legend(drawn["chart-ttft"]) == ["1k", "tiny"]  # workloads in their usual order
    ttfts = [_ttft_ms(m) for m in marks(drawn["chart-ttft"]) if m.startswith("1k: ")]
    assert len(ttfts) == 4 and all(80 < ms < 400 for ms in ttfts)  # 90 ms TTFT
    data = client.get(link + ".json").json()
    assert data["endpoint"]["name"] == fleet.slow.name and data["endpoint"]["simulated"] is True
    assert {row["workload"] for row in data["rows"]} == {"1k", "tiny"}
    assert len(data["series"]["1k"]) == 4
    only = client.get(link + ".json?workload=tiny").json()
    assert set(only["series"]) == {"tiny"}


def test_end_to_end_for_500_tokens_is_shown_beside_the_other_figures(
    client: TestClient, filled: tuple[Store, Fleet]
) -> None:
    """Issue 31, 2a: on the endpoint page and its JSON, in the leaderboard's JSON and CSV, defined on /methodology
    with how it differs from Artificial Analysis's."""
    _, fleet = filled
    link = endpoint_path(fleet.slow.provider, fleet.slow.plan, fleet.slow.model)
    assert "End-to-end for 500 tokens" in client.get(link).text
    (row,) = [r for r in client.get(link + ".json").json()["rows"] if r["workload"] == "1k"]
    assert row["e2e500_ms"]["n"] == row["output_speed"]["n"] > 0
    assert row["e2e500_ms"]["p50"] > row["ttft_ms"]["p50"]  # TTFT + 500 tokens' time, at least
    (entry,) = [e for e in entries(client) if e["name"] == fleet.slow.name]
    assert entry["e2e500_ms"] == row["e2e500_ms"]
    header, *lines = list(csv.reader(io.StringIO(client.get("/leaderboard.csv").text)))
    (line,) = [dict(zip(header, cells, strict=True)) for cells in lines if fleet.slow.name in cells]
    assert float(line["e2e500_ms_p50"]) == pytest.approx(row["e2e500_ms"]["p50"])
    formulas = client.get("/methodology.json").json()["formulas"]
    assert "60 prompts" in formulas["End-to-end for 500 answer tokens"] and "Thinking time" in formulas
    assert "tokenpace measures it per request" in client.get("/methodology").text


def test_model_page_lists_its_endpoints(client: TestClient, filled: tuple[Store, Fleet]) -> None:
    _, fleet = filled
    r = client.get(model_path(fleet.fast.model))
    assert r.status_code == 200 and fleet.fast.name in r.text
    assert legend(charts(r.text)["chart-speed"]) == [fleet.fast.name]
    data = client.get(model_path(fleet.fast.model) + ".json?workload=tiny").json()
    assert data["workload"] == "tiny" and data["summary"]["providers"] == 1
    assert [e["provider"] for e in data["endpoints"]] == ["fastco"]


def test_names_with_script_are_escaped_everywhere(client: TestClient, filled: tuple[Store, Fleet]) -> None:
    _, fleet = filled
    evil = fleet.evil
    pages = [
        "/", "/?sort=ttft", f"/?provider={evil.provider}", "/methodology",
        endpoint_path(evil.provider, evil.plan, evil.model), model_path(evil.model),
    ]  # fmt: skip
    for url in pages:
        r = client.get(url)
        assert r.status_code == 200, (url, r.text[:300])
        assert EVIL not in r.text and "<script>alert" not in r.text, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text, url
    assert legend(charts(client.get(model_path(evil.model)).text)["chart-speed"]) == [evil.name]  # escaped once
    for url in ("/leaderboard.json", endpoint_path(evil.provider, evil.plan, evil.model) + ".json", "/health"):
        assert client.get(url).headers["content-type"] == "application/json"  # never sniffed as HTML
    for url in ("/leaderboard.csv", "/samples.csv"):
        assert client.get(url).headers["content-type"].startswith("text/csv")


def test_methodology_comes_from_the_config(client: TestClient, filled: tuple[Store, Fleet]) -> None:
    _, fleet = filled
    page = client.get("/methodology").text
    assert "o200k_base" in page and "(output tokens - first-chunk tokens) / (time of the last chunk" in page
    assert "72 h median" in page and "What is not measured" in page
    assert "follow Artificial Analysis's published methodology" in page  # credited here, not in every label
    data = client.get("/methodology.json").json()
    assert data["min_samples"] == 3 and data["tokenizer"] == "o200k_base"
    assert all(data["formulas"][m.name] == m.definition for m in FIGURES)  # written from the figure catalogue
    jobs = {(j["endpoint"], j["workload"]): j for j in data["jobs"]}
    assert len(jobs) == len(fleet.config.endpoints) * len(fleet.config.schedule.workloads)
    fast = jobs[fleet.fast.name, "1k"]  # a key: per-token billing, every 4 h
    assert fast["billing"] == "per-token" and fast["every_s"] == 4 * 3600 and fast["every"] == "4 h"
    assert jobs[fleet.slow.name, "100k"]["every"] == "7 d"
    sessions = {t["id"]: t["text"] for t in data["truth"]}["sessions"]  # Go's session header, new per request
    assert "opencode-go's x-opencode-session" in sessions and "new random value" in sessions
    assert "A fresh session per request" in page and "x-opencode-session" in page


def test_methodology_says_which_workload_the_board_opens_on(filled: tuple[Store, Fleet]) -> None:
    """Issue 22: the page names the view the board actually opens on (its JSON's query), and why not AA's 10k."""
    store, fleet = filled
    why = {}
    for scheduled in (fleet.config.schedule.workloads, ("tiny", "10k", "burst")):
        config = dataclasses.replace(fleet.config, schedule=ScheduleSettings(workloads=scheduled))
        with TestClient(create_app(store, config)) as c:
            opens_on = c.get("/leaderboard.json").json()["query"]["workload"]
            page, data = c.get("/methodology").text, c.get("/methodology.json").json()
        assert data["opening"]["workload"] == opens_on == ("1k" if "1k" in scheduled else "tiny")
        said = re.search(r'<p id="opening">The leaderboard opens on <strong>(\w+)</strong>', page)
        assert said and said.group(1) == opens_on
        why[opens_on] = data["opening"]["why"]
    assert "Artificial Analysis opens on 10k" in why["1k"] and "1,500 tokens on 10k" in why["1k"]
    assert "runs no 1k" in why["tiny"]


def test_samples_csv_filters_and_holds_no_secret(client: TestClient, filled: tuple[Store, Fleet]) -> None:
    store, _ = filled
    table = list(csv.DictReader(io.StringIO(client.get("/samples.csv").text)))
    assert len(table) == store.query("SELECT COUNT(*) FROM samples")[0][0]
    assert not {"base_url", "api_key_env", "timeline", "prompt_text"} & set(table[0])
    fast = list(csv.DictReader(io.StringIO(client.get("/samples.csv?provider=fastco&workload=tiny").text)))
    assert len(fast) == 3 and {r["model"] for r in fast} == {"sim-fast"}
    cut = sorted(r["started_at"] for r in table)[-5]
    for since in (quote(cut), cut, str(datetime.fromisoformat(cut).timestamp())):  # "+" unencoded is a space
        assert len(list(csv.DictReader(io.StringIO(client.get(f"/samples.csv?since={since}").text)))) == 5
    for url in ("/", "/samples.csv", "/leaderboard.json", "/methodology.json", "/metrics", "/health"):
        assert SECRET not in client.get(url).text, url


def test_samples_csv_scrubs_a_key_a_provider_echoed(filled: tuple[Store, Fleet], tmp_path: Path) -> None:
    _, fleet = filled
    with open_store(str(tmp_path / "echo.db")) as store:
        failure = Failure(ErrorKind.HTTP_ERROR, f"invalid key {SECRET} for this model", 401)
        timeline = Timeline(t_sent_ns=0, t_headers_ns=None, t_end_ns=1000, events=(), failure=failure)
        store.add_sample(make_sample("run", fleet.fast, "1k", datetime.now(UTC), timeline))
        store.flush()
        with TestClient(create_app(store, fleet.config)) as c:
            text = c.get("/samples.csv").text
    assert "invalid key *** for this model" in text and SECRET not in text


def test_health_and_metrics(client: TestClient, filled: tuple[Store, Fleet]) -> None:
    store, _ = filled
    health = client.get("/health").json()
    count = store.query("SELECT COUNT(*) FROM samples")[0][0]
    assert health["ok"] is True and health["store"] == {
        "reachable": True, "samples": count, "unsaved": 0, "rescued": 0, "busy": False,
        "last_sample_age_s": pytest.approx(health["store"]["last_sample_age_s"]),
    }  # fmt: skip
    assert 0 <= health["store"]["last_sample_age_s"] < 600 and health["scheduler"]["running"] is False
    families = {f.name: f for f in text_string_to_metric_families(client.get("/metrics").text)}
    speed = families["tokenpace_output_speed_tokens_per_second"]
    slow = {s.labels["statistic"]: s.value for s in speed.samples if s.labels["provider"] == "slowco"
            and s.labels["workload"] == "1k"}  # fmt: skip
    row = next(e for e in entries(client, "?window=72h") if e["provider"] == "slowco")
    assert slow["p50"] == pytest.approx(row["output_speed"]["p50"])
    ttft = [s for s in families["tokenpace_ttft_seconds"].samples if s.labels["provider"] == "slowco"
            and s.labels["statistic"] == "p50" and s.labels["workload"] == "1k"]  # fmt: skip
    assert ttft[0].value == pytest.approx(row["ttft_ms"]["p50"] / 1000)
    assert ttft[0].labels["simulated"] == "true"
    assert any(s.labels["provider"] == f"evil{EVIL}" for s in speed.samples)  # label values are escaped by the format


def test_static_files_and_pages_are_served_gzipped_to_who_takes_it(client: TestClient) -> None:
    css = client.get("/static/style.css", headers={"Accept-Encoding": "gzip"})
    assert css.status_code == 200 and css.headers["content-encoding"] == "gzip" and b".charts" in css.content
    assert "content-encoding" not in client.get("/static/style.css", headers={"Accept-Encoding": "identity"}).headers
    assert client.get("/static/app.js").status_code == 200
    for path in ("/", "/leaderboard.json", "/leaderboard.csv"):
        packed = client.get(path, headers={"Accept-Encoding": "gzip"})
        plain = client.get(path, headers={"Accept-Encoding": "identity"})
        assert packed.headers["content-encoding"] == "gzip" and "content-encoding" not in plain.headers, path
        assert packed.content == plain.content and packed.headers["vary"] == "Accept-Encoding", path
    icon = client.get("/favicon.ico", follow_redirects=False)
    assert icon.status_code == 301 and icon.headers["location"] == "/static/favicon.svg"
    svg = client.get("/favicon.ico")
    assert svg.headers["content-type"].startswith("image/svg+xml") and svg.content.startswith(b"<svg")
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in client.get("/").text


def test_stale_rows_and_budget_caps_that_bit(filled: tuple[Store, Fleet]) -> None:
    store, fleet = filled
    # A real sampler whose plan allows two requests a day (one run's worst case: a request and a possible
    # renegotiation; no wake request before it): the store already holds more, so it skips.
    only_1k = dataclasses.replace(fleet.config.schedule, workloads=("1k",))
    plans = {("fastco", "default"): PlanSettings(budget=Budget(requests=2), wake=False)}
    budgeted = dataclasses.replace(fleet.config, plans=plans, schedule=only_1k)
    sampler = Sampler(jobs(budgeted, [fleet.fast]), store, clock=_Jumping(), inline_reads=True)

    async def until_skipped() -> None:
        task = asyncio.create_task(sampler.run())
        for _ in range(100_000):  # loop turns, not time: the jumping clock takes ~1000 to reach the first due
            if any(b.skipped for b in sampler.status().budgets):
                break
            await asyncio.sleep(0)
        sampler.stop()
        await task

    asyncio.run(until_skipped())
    stale = {fleet.slow.provider: 0.0}  # seconds without a sample before a row is stale: slowco is at once
    app = create_app(store, budgeted, status=sampler.status, stale_after=lambda row: stale.get(row.provider))
    with TestClient(app) as c:
        page = c.get("/").text
        assert 'id="budgets"' in page and "run" in page and "skipped" in page
        slow_row = page.split(f'data-endpoint="{fleet.slow.name}"')[1].split("</tr>")[0]
        assert 'class="badge stale"' in slow_row
        assert page.count('class="badge stale"') == 1
        skipped = c.get("/leaderboard.json").json()["budgets_hit"]
        assert skipped[0]["provider"] == "fastco" and skipped[0]["skipped"] >= 1
        metrics = {f.name: f for f in text_string_to_metric_families(c.get("/metrics").text)}
        assert metrics["tokenpace_budget_skipped_runs"].samples[0].value >= 1
        health = c.get("/health").json()
        assert health["scheduler"]["running"] is True and health["scheduler"]["jobs"] == 1
        assert health["scheduler"]["failures"] == 0
        due = c.get("/methodology.json").json()["jobs"]
        assert all(j["next_due"] is not None for j in due)


class _Jumping:
    """A clock whose sleeps take no time: the sampler reaches its first due times at once."""

    def __init__(self) -> None:
        self.t = time.time()

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.t += max(0.0, seconds)
        await asyncio.sleep(0)


def test_staleness_follows_the_configured_cadence(filled: tuple[Store, Fleet]) -> None:
    store, fleet = filled
    # An hour later: slowco (no key: uncapped, every 10 min) is overdue; fastco (a key: every 4 h) is not.
    later = datetime.now(UTC) + timedelta(hours=1)
    with TestClient(create_app(store, fleet.config, now=lambda: later)) as c:
        stale = {e["name"]: e["stale"] for e in c.get("/leaderboard.json").json()["entries"]}
        assert stale[fleet.slow.name] is True and stale[fleet.fast.name] is False
        row = c.get("/?provider=slowco").text.split('data-endpoint="slowco:pro/sim-slow"')[1]
        # beside the name (issue 21 item 7: the last sample's column is off a narrow screen), and in that column
        assert re.search(r'<td class="name">.*?<span class="badge stale"[^>]*>stale · 6[01] min</span>', row, re.S)
        assert re.search(r'<td class="num stale" data-col="last"><time[^>]*>6[01] min ago</time>', row), row


def test_an_empty_store_and_a_closed_one(filled: tuple[Store, Fleet], tmp_path: Path) -> None:
    _, fleet = filled
    store = open_store(str(tmp_path / "empty.db"))
    with TestClient(create_app(store, fleet.config)) as c:
        assert "No samples for workload 1k" in c.get("/").text
        assert "No samples of this endpoint" in c.get(endpoint_path("fastco", "default", "sim-fast")).text
        assert c.get("/methodology").status_code == 200 and c.get("/metrics").status_code == 200
        assert c.get("/health").json()["store"] == {
            "reachable": True, "samples": 0, "last_sample_age_s": None, "unsaved": 0, "rescued": 0, "busy": False
        }  # fmt: skip
        store.close()
        r = c.get("/health")
        assert r.status_code == 503 and r.json()["ok"] is False and "closed" in r.json()["store"]["error"]
        r = c.get("/?workload=10k")  # not computed before the store closed, so not in the memo
        assert r.status_code == 503 and "the store is closed" in r.text


@pytest.mark.parametrize("in_worker", [False, True], ids=["threads", "worker"])
def test_pages_show_a_sample_as_soon_as_it_is_stored(
    filled: tuple[Store, Fleet], tmp_path: Path, in_worker: bool, request: pytest.FixtureRequest
) -> None:
    """With no refresh floor (serve's pages stand 5 s, so that a flood of readers costs one render a page). A
    worker process's own connection has nothing to count: the serving store's write count comes with each call."""
    _, fleet = filled
    store = open_store(str(tmp_path / "memo.db"))
    app = create_app(store, fleet.config, page_refresh_s=0, render_store=store.url if in_worker else None)
    if app.state.site.renderer is not None:
        request.addfinalizer(app.state.site.renderer.close)
    with store, TestClient(app) as c:
        assert c.get("/leaderboard.json").json()["entries"] == []
        assert c.get("/leaderboard.json").json()["entries"] == []  # the memo's answer, still right
        failure = Failure(ErrorKind.HTTP_ERROR, "overloaded", 503)
        timeline = Timeline(t_sent_ns=0, t_headers_ns=None, t_end_ns=1000, events=(), failure=failure)
        store.add_sample(make_sample("run", fleet.slow, "1k", datetime.now(UTC), timeline))
        store.flush()
        (entry,) = c.get("/leaderboard.json").json()["entries"]
        assert (entry["samples"], entry["failures"]) == (1, 1)


def test_a_page_past_its_refresh_is_answered_while_the_next_is_rendered(
    filled: tuple[Store, Fleet], tmp_path: Path
) -> None:
    """Under a flood no request waits for a render: the one that starts it gets the last page too."""
    _, fleet = filled
    app = create_app(store := open_store(str(tmp_path / "swr.db")), fleet.config, page_refresh_s=1)
    with store, TestClient(app) as c:
        assert c.get("/leaderboard.json").json()["entries"] == []
        store.add_sample(make_sample("run", fleet.slow, "1k", datetime.now(UTC), Timeline(0, None, 1000, ())))
        store.flush()
        time.sleep(1.1)  # past its refresh, within twice that
        assert c.get("/leaderboard.json").json()["entries"] == []  # the last page, while the next is rendered
        deadline = time.monotonic() + 10
        while not c.get("/leaderboard.json").json()["entries"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(c.get("/leaderboard.json").json()["entries"]) == 1


def test_health_is_not_ok_while_writes_fail(filled: tuple[Store, Fleet], tmp_path: Path) -> None:
    _, fleet = filled
    with open_store(str(tmp_path / "full.db")) as store, TestClient(create_app(store, fleet.config)) as c:
        with sqlite3.connect(tmp_path / "full.db") as other:  # another process takes the table away
            other.execute("DROP TABLE samples")
        failure = Failure(ErrorKind.HTTP_ERROR, "overloaded", 503)
        timeline = Timeline(t_sent_ns=0, t_headers_ns=None, t_end_ns=1000, events=(), failure=failure)
        store.add_sample(make_sample("run", fleet.slow, "1k", datetime.now(UTC), timeline))
        with pytest.raises(StoreError):
            store.flush()
        r = c.get("/health")
        assert r.status_code == 503 and r.json()["ok"] is False
        store.unsaved.clear()  # so that closing the store does not write a rescue file here


def test_every_route_reads_postgresql_as_it_reads_sqlite(client: TestClient, pg_url: str) -> None:
    pg, fleet = filled_store(pg_url)
    with pg, TestClient(create_app(pg, fleet.config)) as c:
        since = "?since=1970-01-01T00:00:00Z"
        pages = ["/", "/?window=24h", "/?workload=tiny", "/leaderboard.csv", "/methodology", "/metrics", "/health"]
        pages += [endpoint_path(*_key(fleet.slow)), model_path(fleet.evil.model) + ".json", "/samples.csv" + since]
        for path in pages:
            assert c.get(path).status_code == 200, path
        assert [e["name"] for e in entries(c)] == [e["name"] for e in entries(client)]
        lines = len(c.get("/samples.csv" + since).text.splitlines())
        assert lines == len(client.get("/samples.csv" + since).text.splitlines()) > 1


def _key(e: Endpoint) -> tuple[str, str, str]:
    return e.provider, e.plan, e.model


def test_the_memo_recomputes_once_at_a_time(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "memo.db")) as store:
        memo, calls, release = Memo(store), [], threading.Event()
        assert memo.get("k", lambda: "first") == "first" and memo.get("k", lambda: "unused") == "first"
        store.writes += 1  # as a committed sample does: the value is out of date

        def slow() -> str:
            calls.append("slow")
            release.wait(10)
            return "second"

        worker = threading.Thread(target=lambda: calls.append(memo.get("k", slow)))
        worker.start()
        while not calls:
            time.sleep(0.01)
        assert memo.get("k", lambda: "never") == "first"  # recomputing elsewhere: the last answer meanwhile
        release.set()
        worker.join(10)
        assert calls == ["slow", "second"] and memo.get("k", lambda: "never") == "second"


def test_a_stale_page_is_answered_only_while_it_is_recent(tmp_path: Path) -> None:
    """So that a flood never waits for a render, and a quiet board's visitor never sees an old page."""
    with open_store(str(tmp_path / "memo.db")) as store:
        memo = Memo(store, stale_s=0.5)
        memo.get("k", lambda: "page")
        store.writes += 1
        assert memo.peek("k") is None and memo.peek("k", stale=True) == "page"
        time.sleep(0.6)
        assert memo.peek("k", stale=True) is None


def test_the_filter_form_keeps_the_sort_and_ranking_minimum(client: TestClient) -> None:
    page = client.get("/?sort=ttft&min_samples=1").text
    assert '<input type="hidden" name="sort" value="ttft">' in page
    assert '<input type="hidden" name="min_samples" value="1">' in page
    assert 'name="min_samples"' not in client.get("/").text  # the default is left out of the form


def test_a_burst_workload_shows_how_each_burst_was_served(client: TestClient, filled: tuple[Store, Fleet]) -> None:
    """Issue 13 part 7: requests released together get burst figures on the board and the endpoint's page."""
    _, fleet = filled
    board = client.get("/leaderboard.json?workload=burst").json()
    (fast,) = [e for e in board["entries"] if e["name"] == fleet.fast.name]
    assert fast["bursts"]["count"] == 2  # six requests, three at a time
    speed = fast["bursts"]["aggregate_output_speed"]
    assert speed["count"] == 2 and speed["p5"] <= speed["p50"] <= speed["p95"] and speed["p50"] > 0
    assert fast["bursts"]["ttft_spread_ms"]["p50"] >= 0
    assert 'class="num wide burst-speed"' in client.get("/?workload=burst").text
    assert "Burst throughput" not in client.get("/?workload=1k").text  # a workload of single requests has none
    link = endpoint_path(fleet.fast.provider, fleet.fast.plan, fleet.fast.model)
    page = client.get(link + ".json?workload=burst").json()
    assert page["bursts"]["burst"] == fast["bursts"]  # the page and the board read the same bursts
    assert 'id="bursts"' in client.get(link + "?workload=burst").text


def test_an_endpoint_page_has_its_speed_by_hour_of_the_week(client: TestClient, filled: tuple[Store, Fleet]) -> None:
    _, fleet = filled
    link = endpoint_path(fleet.fast.provider, fleet.fast.plan, fleet.fast.model)
    heat = client.get(link + ".json").json()["hour_of_week"]
    assert heat["workload"] == "1k" and heat["days"][0] == "Mon" and len(heat["rows"]) == 7
    filled_cells = [c for day in heat["rows"] for c in day if c["n"]]
    assert sum(c["n"] for c in filled_cells) == heat["samples"] == 4  # the four 1k samples, all this hour or last
    assert all(heat["lowest"] <= c["median"] <= heat["highest"] for c in filled_cells)
    page = client.get(link).text
    assert 'id="heatmap"' in page and page.count('class="filled"') == len(filled_cells)


def test_every_template_compiles_in_the_one_environment() -> None:
    # The page worker compiles every template at start; one needing a filter of its own would stop it.
    from tokenpace.web.render import environment

    env = environment()
    names = env.list_templates(filter_func=lambda name: name.endswith(".html"))
    assert "report.html" in names and "leaderboard.html" in names
    for name in names:
        env.get_template(name)


def test_a_failed_samples_end_to_end_is_a_dash_not_zero(client: TestClient, filled: tuple[Store, Fleet]) -> None:
    """Issue 21 item 10: a failure has no end-to-end time; its row says "—", never "0.00"."""
    _, fleet = filled
    page = client.get(endpoint_path(fleet.flaky.provider, fleet.flaky.plan, fleet.flaky.model)).text
    recent = page[page.index('<table class="recent">') :]
    recent = recent[: recent.index("</table>")]
    failed = [row for row in recent.split("<tr")[2:] if "error-kind" in row]
    succeeded = [row for row in recent.split("<tr")[2:] if "<td>ok" in row]
    assert failed and succeeded  # every other request failed
    last = [re.findall(r'<td class="num e2e">(.*?)</td>', row, re.S)[0] for row in failed + succeeded]
    assert all(re.sub(r"<[^>]+>", "", cell) == "—" for cell in last[: len(failed)]), last
    assert all(re.fullmatch(r"\d+\.\d\d", cell) for cell in last[len(failed) :]), last


def test_an_endpoint_page_lists_its_workloads_in_the_schedules_order(filled: tuple[Store, Fleet]) -> None:
    """Issue 21 item 9: the table, the menu and the charts' legend follow the configured order, not A to Z."""
    store, fleet = filled
    config = dataclasses.replace(fleet.config, schedule=ScheduleSettings(workloads=("tiny", "burst", "1k")))
    with TestClient(create_app(store, config)) as c:
        page = c.get(endpoint_path(fleet.fast.provider, fleet.fast.plan, fleet.fast.model)).text
        data = c.get(endpoint_path(fleet.fast.provider, fleet.fast.plan, fleet.fast.model, "json")).json()
        board = c.get("/leaderboard.json").json()
    assert board["workloads"] == ["tiny", "burst", "1k"]  # the board's list too: one order everywhere
    stats = page[page.index('<table class="stats">') :]
    assert re.findall(r'<td rowspan="4">(\w+)<', stats) == ["tiny", "burst", "1k"]
    menu = page[page.index('name="workload"') :]
    assert re.findall(r'<option value="(\w*)"', menu[: menu.index("</select>")]) == ["", "tiny", "burst", "1k"]
    assert legend(charts(page)["chart-ttft"]) == ["tiny", "burst", "1k"]
    assert [row["workload"] for row in data["rows"]] == ["tiny", "burst", "1k"]


def test_a_failing_endpoint_says_so_beside_its_name(client: TestClient, filled: tuple[Store, Fleet]) -> None:
    """Issue 21 item 7: the success rate is a column a narrow screen scrolls to; under 90 % it is also a badge
    beside the name, where the eye is."""
    _, fleet = filled
    page = client.get("/").text
    cells = dict(re.findall(r'data-endpoint="([^"]*)">.*?<td class="name">(.*?)</td>', page, re.S))
    flaky = next(e for e in entries(client) if e["provider"] == "flakyco")
    found = re.search(r'<span class="badge failing"[^>]*>failing · ([\d.]+)% ok</span>', cells[fleet.flaky.name])
    assert found and float(found.group(1)) == pytest.approx(100 * flaky["success_rate"], abs=0.05)
    assert "badge failing" not in cells[fleet.fast.name] and "badge stale" not in cells[fleet.fast.name]


def test_the_boards_charts_give_an_endpoint_one_colour(client: TestClient) -> None:
    """Issue 21 item 9: the speed boxes and the TTFT dots paint an endpoint alike (tests/web/test_colours.py: on
    every page)."""
    page = client.get("/").text

    def painted(chart_id: str) -> set[str]:
        return set(re.findall(rf"#chart-{chart_id} \.color-\d+[^{{]*\{{stroke:(#\w+);fill", page))

    assert painted("chart-board-speed") == painted("chart-board-ttft-speed") and painted("chart-board-speed")


def test_a_board_without_any_price_has_no_price_columns(client: TestClient) -> None:
    """Issue 21 item 7: two columns of dashes pushed the last sample off a 1280 px screen; they show once a row
    has a price (tests/web/test_prices.py)."""
    page = client.get("/").text
    assert "Price, $/1M" not in page and "$ per request" not in page and 'class="num wide price"' not in page
    assert 'data-sort="last"' in page
