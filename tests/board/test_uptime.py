"""The uptime strip: an endpoint's published samples, whatever their outcome, hour by hour."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from starlette.testclient import TestClient

from tests.store.test_windows import GROQ, NOW, fail, put, put_as
from tokenpace.board.uptime import hour_by_hour
from tokenpace.config.endpoints import Config
from tokenpace.measure.failures import ErrorKind
from tokenpace.store.database import open_store
from tokenpace.store.series import SamplePoint
from tokenpace.web import create_app
from tokenpace.web.paths import endpoint_path

T = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)


def point(at: datetime, ok: bool = True, kind: str | None = None, published: bool = True) -> SamplePoint:
    return SamplePoint(at, "1k", ok, kind, 50.0 if ok else None, 100.0 if ok else None, 1000.0 if ok else None,
                 published=published)  # fmt: skip


def test_every_hour_of_the_span_in_order_with_its_outcomes() -> None:
    points = [
        point(T - timedelta(hours=2)),  # 10:30, in the first hour of a 2.5 h span
        point(T - timedelta(minutes=20)), point(T - timedelta(minutes=10), False, "http_error"),
        point(T, False, "http_error"), point(T, False, "cancelled"), point(T, False, "rate_limited"),
        point(T, published=False),  # a one-shot run nobody published: not the board's, not the strip's
        point(T - timedelta(hours=5)),  # before the span
    ]  # fmt: skip
    hours = hour_by_hour(points, T, span_s=2.5 * 3600)
    assert [h.start.hour for h in hours] == [10, 11, 12]  # 10:00 holds now - span, 12:00 holds now
    ten, eleven, noon = hours
    assert (ten.samples, ten.ok, ten.success_rate, ten.state) == (1, 1, 1.0, "up")
    assert (eleven.samples, eleven.ok, eleven.errors) == (0, 0, ()) and eleven.state == "empty"
    assert (noon.samples, noon.ok) == (5, 1)
    assert noon.errors == (("http_error", 2), ("cancelled", 1), ("rate_limited", 1))  # commonest first
    assert noon.success_rate == 1 / 4 and noon.state == "down"  # the cancelled one is no verdict


def test_the_endpoint_page_shows_the_strip_and_its_twin_the_hours(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "uptime.db")) as store:
        for i in range(3):  # four samples in one hour, one of them failed
            put(store, GROQ, NOW - timedelta(minutes=90 - i))
        fail(store, GROQ, NOW - timedelta(minutes=90), ErrorKind.HTTP_ERROR)
        put_as(store, GROQ, NOW - timedelta(hours=2), source="one-shot", published=False)
        store.flush()
        path = endpoint_path(GROQ.provider, GROQ.plan, GROQ.model)
        with TestClient(create_app(store, Config(endpoints=(GROQ,)), now=lambda: NOW)) as c:
            page = c.get(path).text
            hours = c.get(path + ".json?window=24h").json()["uptime"]
    assert page.count('<span class="hour ') == 73  # 72 h and the hour now is in
    assert "3/4 ok (75%), 1 http_error" in page and 'class="hour degraded"' in page
    assert len(hours) == 25 and sum(h["samples"] for h in hours) == 4  # the unpublished one is left out
    assert next(h for h in hours if h["samples"])["errors"] == [["http_error", 1]]
