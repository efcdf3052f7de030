"""Incidents from a real SQLite store: the store-backed derivation, /incidents and its JSON twin and Atom feed, a
provider's status page, /metrics and /methodology's rules, a hostile name escaped everywhere, sizes bounded."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.store.test_windows import stream
from tests.webkit import EVIL
from tokenpace.board import outages
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.config.incidents import Thresholds
from tokenpace.config.regions import Region
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.sample import Origin, make_sample
from tokenpace.store.database import Store, open_store
from tokenpace.store.series import placed_series
from tokenpace.web import create_app
from tokenpace.web.paths import endpoint_path

T0 = datetime(2026, 11, 20, tzinfo=UTC)
STEP = timedelta(minutes=10)
GROQ = Endpoint("groq", "llama", "http://groq.invalid/v1", plan="free")
HOSTILE = Endpoint("evil", f'{EVIL}&"x"', "http://evil.invalid/v1")
OUTAGE = [True] * 10 + [False] * 8 + [True] * 5  # critical: opens at the 5th failure, closes at the 3rd success
ATOM = "{http://www.w3.org/2005/Atom}"


def write(store: Store, endpoint: Endpoint, oks: Sequence[bool], start: int = 0, region: str = "") -> None:
    for i, ok in enumerate(oks):
        failure = None if ok else Failure(ErrorKind.HTTP_ERROR, "down", 503)
        origin = Origin(region, f"{region}-1" if region else None)
        timeline = stream(100, 10, failure=failure)
        store.add_sample(make_sample("run", endpoint, "1k", T0 + (start + i) * STEP, timeline, origin=origin))


NOW = T0 + 40 * STEP


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with open_store(str(tmp_path / "incidents.db")) as store:
        write(store, GROQ, OUTAGE)
        write(store, GROQ, OUTAGE, start=5, region="eu-west")  # the same outage, 50 minutes later from there
        write(store, HOSTILE, [True] * 10 + [False] * 30)  # still failing: open
        store.flush()
        config = Config(endpoints=(GROQ, HOSTILE), regions=(Region("eu-west", "Frankfurt"),), source="i.toml")
        with TestClient(create_app(store, config, now=lambda: NOW)) as c:
            yield c


def test_an_outage_in_the_store_opens_and_closes_at_its_named_samples(any_store: Store) -> None:
    store = any_store  # SQLite and PostgreSQL
    write(store, GROQ, OUTAGE)
    store.flush()
    ids = [s.id for s in placed_series(store, since=T0)]
    derived = outages.read_incidents(store, Thresholds(), NOW)
    assert derived.days == {("groq", "free", "llama", ""): {T0.date(): len(OUTAGE)}}
    (c,) = derived.found
    assert (c.rule, c.severity, c.region, c.endpoint) == ("outage", "critical", "", "groq:free/llama")
    assert c.opened_by == tuple(ids[10:15]) and c.closed_by == ids[20]
    assert (c.opened_at, c.closed_at) == (T0 + 14 * STEP, T0 + 20 * STEP)


def test_incidents_page_twin_and_feed_say_where_each_was_seen_and_escape_names(client: TestClient) -> None:
    doc = client.get("/incidents.json").json()
    assert (doc["count"], doc["open"]) == (3, 1)
    texts = [i["text"] for i in doc["incidents"]]
    assert texts[0].startswith(f'critical outage on evil/{EVIL}&"x", seen by tokenpace from this server, since')
    seen = {(i["provider"], i["region"]): i["seen_from"] for i in doc["incidents"]}
    assert seen[("groq", "eu-west")] == "seen by tokenpace from eu-west (Frankfurt)"
    assert seen[("groq", "local")] == "seen by tokenpace from this server"
    assert not any("status page" in t for t in texts)  # nothing is claimed of the provider's own page
    assert {r["name"] for r in doc["rules"]} == {"outage", "success-drop", "wrong-answers", "slowdown"}
    page = client.get("/incidents")
    assert page.status_code == 200 and 'id="incidents"' in page.text and 'href="/incidents.atom"' in page.text
    assert EVIL not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;&amp;&#34;x&#34;" in page.text
    feed = client.get("/incidents.atom")
    assert feed.headers["content-type"].startswith("application/atom+xml") and EVIL not in feed.text
    root = ET.fromstring(feed.content)  # noqa: S314 (the feed we served: well-formed, every name escaped)
    entries = root.findall(f"{ATOM}entry")
    assert len(entries) == 3
    titles = [e.findtext(f"{ATOM}title") for e in entries]
    assert titles[0] == f'open: critical outage on evil/{EVIL}&"x"'
    assert all(e.findtext(f"{ATOM}id") for e in entries) and len({e.findtext(f"{ATOM}id") for e in entries}) == 3


def test_a_status_page_draws_90_daily_bars_per_endpoint_and_place(client: TestClient) -> None:
    doc = client.get("/status/groq.json").json()
    assert doc["provider"] == "groq" and doc["open"] == []
    strips = {e["seen_from"]: e for e in doc["endpoints"]}
    assert set(strips) == {"seen by tokenpace from this server", "seen by tokenpace from eu-west (Frankfurt)"}
    for strip in strips.values():
        days = strip["days"]
        assert len(days) == outages.SPAN_DAYS and days[-1]["day"] == NOW.date().isoformat()
        assert days[-1]["state"] == "critical" and days[-1]["samples"] == len(OUTAGE)
        assert {d["state"] for d in days[:-1]} == {"empty"}
    evil = client.get("/status/evil")
    assert evil.status_code == 200 and EVIL not in evil.text and 'id="open-incidents"' in evil.text
    assert client.get("/status/nobody").status_code == 404
    assert client.get("/status/nobody.json").json()["error"].startswith("no provider of that name")
    assert client.get("/status/a/b").status_code == 404


def test_a_chronically_failing_endpoint_with_no_incident_has_no_green_day(tmp_path: Path) -> None:
    """Four requests in ten fail all day, never five in a row nor half in 15 minutes, from no clean baseline: no
    rule opens an incident, yet the board marks the endpoint failing, and its day is drawn so (yellow, its ok share
    in the title and the JSON); a day with one failure in twenty stays green, one with most failing is red."""
    flaky = [True, False, True, False, True, True, False, True, False, True] * 6  # 60 % ok
    steady = [True] * 19 + [False]  # 95 % ok
    broken = [False, False, True] * 10  # a third ok
    groq, steady_ep, broken_ep = GROQ, Endpoint("groq", "steady", "http://s.invalid/v1"), Endpoint("groq", "bad", "x")
    with open_store(str(tmp_path / "flaky.db")) as store:
        for endpoint, oks in ((groq, flaky), (steady_ep, steady), (broken_ep, broken)):
            write(store, endpoint, oks)
        store.flush()
        config = Config(endpoints=(groq, steady_ep, broken_ep))
        now = T0 + 70 * STEP
        with TestClient(create_app(store, config, now=lambda: now)) as c:
            doc = c.get("/status/groq.json").json()
            page = c.get("/status/groq").text
    today = {e["model"]: e["days"][-1] for e in doc["endpoints"]}
    assert doc["incidents"] == [] or all(i["endpoint"] == "groq/bad" for i in doc["incidents"])
    assert (today["llama"]["state"], today["llama"]["failed"], today["llama"]["ok_share"]) == ("degraded", 24, 0.6)
    assert (today["steady"]["state"], today["steady"]["ok_share"]) == ("up", 0.95)
    assert today["bad"]["state"] in {"down", "critical"}  # red either way: by its share, or by the outage it opened
    assert "60 samples, 60.0 % ok" in page


def test_metrics_count_open_incidents_and_methodology_lists_the_rules(client: TestClient) -> None:
    metrics = client.get("/metrics").text
    opened = [line for line in metrics.splitlines() if line.startswith("tokenpace_incident_open{")]
    assert len(opened) == 1 and 'provider="evil"' in opened[0] and 'severity="critical"' in opened[0]
    assert opened[0].endswith(" 1.0")
    rules = client.get("/methodology.json").json()["incident_rules"]
    assert [r["name"] for r in rules] == ["outage", "success-drop", "wrong-answers", "slowdown"]
    page = client.get("/methodology").text
    assert 'id="incident-rules"' in page and "Opens at the judged sample that makes the last 5 all failures" in page
    assert "is marked failing on the board (more than 1 request in 10) yet\nopens none" in page  # a level, no change


def test_a_flapping_endpoint_floods_no_page_or_feed(tmp_path: Path) -> None:
    flapping = ([False] * 5 + [True] * 3) * (outages.MAX_FEED + 10)
    with open_store(str(tmp_path / "flap.db")) as store:
        write(store, GROQ, flapping)
        store.flush()
        now = T0 + len(flapping) * STEP
        with TestClient(create_app(store, Config(endpoints=(GROQ,)), now=lambda: now)) as c:
            doc = c.get("/incidents.json").json()
            feed = ET.fromstring(c.get("/incidents.atom").content)  # noqa: S314 (the feed we served)
    assert doc["count"] > outages.MAX_FEED and doc["listed"] == doc["count"] <= outages.MAX_LISTED
    assert len(feed.findall(f"{ATOM}entry")) == outages.MAX_FEED


def test_the_board_and_an_endpoint_page_link_each_provider_s_status_page(client: TestClient) -> None:
    board = client.get("/").text
    assert 'id="status-pages">Incidents per provider, as tokenpace saw them: <a href="/status/groq">groq</a>' in board
    page = client.get(endpoint_path("groq", "free", "llama")).text
    assert '<a id="status-link" href="/status/groq"' in page
    incidents = client.get("/incidents").text  # its twins in the nav: JSON, and the Atom feed (no CSV: see docs)
    assert '<a href="/incidents.json">JSON</a>' in incidents and '<a href="/incidents.atom">Atom</a>' in incidents
