"""Copy ratios on the board (board/copying.py): each endpoint's median per workload on its page, its JSON twin and
/methodology's table, over the window's published successful samples, on SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from starlette.testclient import TestClient

from tests.store.test_windows import CEREBRAS, GROQ, NOW, stream
from tokenpace.board.copying import CopyMedian, medians
from tokenpace.board.endpoint_page import read_endpoint_page
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.config.windows import WINDOWS
from tokenpace.measure.catalogue import metric
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.sample import make_sample
from tokenpace.store.database import Store
from tokenpace.web import create_app
from tokenpace.web.paths import endpoint_path
from tokenpace.web.site import Site


def put(store: Store, endpoint: Endpoint, at: datetime, ratio: float | None, workload: str = "1k", **how: bool) -> None:
    """One sample of ``ratio``; ``failed`` or ``published=False`` as asked."""
    failure = Failure(ErrorKind.HTTP_ERROR, "boom", 500) if how.pop("failed", False) else None
    s = make_sample(
        "run", endpoint, workload, at, stream(200, 10, failure=failure), published=how.get("published", True)
    )
    store.add_sample(dataclasses.replace(s, copy_ratio=ratio))


def write(store: Store) -> None:
    """groq 1k: 0.1, 0.2 and 0.9 counted; a failed, an unpublished and a 4-day-old 0.99 not, nor one without a
    ratio. groq 100k (long-context: 14 days): 0.5 ten days ago. cerebras 1k: 0.0 and 0.05."""
    for hours, ratio in ((1, 0.1), (2, 0.2), (3, 0.9)):
        put(store, GROQ, NOW - timedelta(hours=hours), ratio)
    put(store, GROQ, NOW - timedelta(hours=4), 0.99, failed=True)
    put(store, GROQ, NOW - timedelta(hours=5), 0.99, published=False)
    put(store, GROQ, NOW - timedelta(days=4), 0.99)
    put(store, GROQ, NOW - timedelta(hours=6), None)
    put(store, GROQ, NOW - timedelta(days=10), 0.5, workload="100k")
    put(store, CEREBRAS, NOW - timedelta(hours=1), 0.0)
    put(store, CEREBRAS, NOW - timedelta(hours=2), 0.05)
    store.flush()


@pytest.fixture
def site(any_store: Store) -> Iterator[tuple[Site, TestClient]]:
    write(any_store)
    with TestClient(create_app(any_store, Config(endpoints=(GROQ, CEREBRAS)), now=lambda: NOW)) as client:
        yield client.app.state.site, client  # type: ignore[attr-defined]


def test_medians_per_key_in_the_order_keys_come() -> None:
    assert medians([("a", 0.3), ("b", 0.0), ("a", 0.1), ("a", 0.2)]) == {"a": CopyMedian(0.2, 3), "b": CopyMedian(0, 1)}
    assert medians([("a", 0.1), ("a", 0.4)])["a"].median == pytest.approx(0.25)  # an even count: the midpoint
    assert medians([]) == {}


def test_the_endpoint_page_and_its_json_show_the_median_per_workload(site: tuple[Site, TestClient]) -> None:
    s, client = site
    assert "100k" in s.long_workloads
    m = read_endpoint_page(s, GROQ.provider, GROQ.plan, GROQ.model, WINDOWS["72h"], False, {})
    assert m is not None and m.copying == {"1k": CopyMedian(0.2, 3), "100k": CopyMedian(0.5, 1)}
    served = client.get(endpoint_path(GROQ.provider, GROQ.plan, GROQ.model, "json")).json()
    assert served["copy_ratio"] == {"1k": {"median": 0.2, "n": 3}, "100k": {"median": 0.5, "n": 1}}
    one = client.get(endpoint_path(CEREBRAS.provider, CEREBRAS.plan, CEREBRAS.model, "json")).json()
    assert one["copy_ratio"] == {"1k": {"median": pytest.approx(0.025), "n": 2}}
    html = client.get(endpoint_path(GROQ.provider, GROQ.plan, GROQ.model)).text
    shown = re.search(r'<dd id="endpoint-copy-ratio">(.*?)</dd>', html)
    assert shown is not None and "1k: 20% <small>(n=3)</small>" in shown.group(1)
    assert "100k: 50% <small>(n=1)</small>" in shown.group(1)
    assert f"{metric('copy_ratio').label}, median</dt>" in html


def test_an_endpoint_without_ratios_shows_none(site: tuple[Site, TestClient]) -> None:
    s, client = site
    m = read_endpoint_page(s, GROQ.provider, GROQ.plan, GROQ.model, WINDOWS["72h"], False, {"workload": "10k"})
    assert m is not None and m.copying == {}
    html = client.get(endpoint_path(GROQ.provider, GROQ.plan, GROQ.model) + "?workload=10k").text
    assert 'id="endpoint-copy-ratio"' not in html


def test_methodology_tables_every_endpoints_median_per_workload(site: tuple[Site, TestClient]) -> None:
    _, client = site
    doc = client.get("/methodology.json").json()["copying"]
    assert doc["label"] == metric("copy_ratio").label and doc["definition"] == metric("copy_ratio").definition
    assert doc["window"] == "72h" and doc["workloads"] == ["1k", "100k"]
    assert doc["rows"] == [
        {"endpoint": "cerebras/llama", "medians": {"1k": {"median": pytest.approx(0.025), "n": 2}}},
        {"endpoint": "groq:free/llama", "medians": {"1k": {"median": 0.2, "n": 3}, "100k": {"median": 0.5, "n": 1}}},
    ]
    html = client.get("/methodology").text
    table = re.search(r'<table id="copy-ratios">(.*?)</table>', html, re.DOTALL)
    assert table is not None
    assert re.search(r"<td>groq:free/llama</td><td class=\"num\">20% <small>\(n=3\)</small>", table.group(1))
    assert re.search(
        r"<td>cerebras/llama</td><td class=\"num\">2.5% <small>\(n=2\)</small></td><td class=\"num\">—", table.group(1)
    )
