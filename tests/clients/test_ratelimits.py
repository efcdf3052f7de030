"""A 429's Retry-After and rate-limit headers: read as RFC 9110 says, each bound held against a hostile server,
and stored with the sample through the real client and database."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path

import pytest
from aiohttp import web

from tests.clients.test_hostile_wire import FAST, KEY, SHORT, app_server
from tokenpace import sim
from tokenpace.clients.ratelimits import (
    MAX_HEADER_NAME,
    MAX_HEADERS,
    MAX_RETRY_AFTER_S,
    MAX_VALUE,
    ratelimit_headers,
    retry_after_s,
)
from tokenpace.config.endpoints import Endpoint
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.sample import Sample
from tokenpace.store.columns import sample_values
from tokenpace.store.database import open_store

NOW = 1_750_000_000.0


def http_date(t: float) -> str:
    return format_datetime(datetime.fromtimestamp(t, UTC), usegmt=True)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (" 120 ", 120.0),  # optional whitespace around a field value
        ("0", 0.0),
        (http_date(NOW + 90), 90.0),
        ("Sun Nov  6 08:49:37 1994", 0.0),  # asctime's form, GMT as every HTTP-date
    ],
)
def test_retry_after_is_seconds_or_an_http_date(value: str, seconds: float) -> None:
    assert retry_after_s(value, NOW) == seconds


def test_an_http_date_in_the_past_means_now() -> None:
    assert retry_after_s(http_date(NOW - 3600), NOW) == 0.0


@pytest.mark.parametrize("value", ["86401", "99999999999", "9" * 5000, http_date(NOW + 30 * 86400)])
def test_a_huge_retry_after_is_capped_at_a_day(value: str) -> None:
    assert retry_after_s(value, NOW) == MAX_RETRY_AFTER_S  # 5,000 digits: no int() over Python's digit limit


@pytest.mark.parametrize(
    "value", ["-5", "1.5", "+3", "soon", "", "١٢٠", "120 s", "Wed, 21 Oct 2015 07:28:00 GMT" + " x" * 5000]
)
def test_a_negative_fractional_or_garbage_retry_after_is_no_value(value: str) -> None:
    assert retry_after_s(value, NOW) is None


def test_at_most_max_headers_rate_limit_headers_are_kept() -> None:
    many = [(f"X-RateLimit-Extra-{i}", str(i)) for i in range(500)]
    kept = ratelimit_headers(many)
    assert len(kept) == MAX_HEADERS
    assert kept[0] == ("x-ratelimit-extra-0", "0")  # names in lower case, the first ones sent


def test_a_long_value_is_cut_and_a_long_name_dropped() -> None:
    kept = dict(
        ratelimit_headers([("x-ratelimit-reset", "9" * 100_000), ("x-ratelimit-" + "n" * MAX_HEADER_NAME, "1")])
    )
    assert kept == {"x-ratelimit-reset": "9" * MAX_VALUE}


def test_only_rate_limit_names_are_kept_and_values_are_scrubbed() -> None:
    headers = [
        ("Authorization", f"Bearer {KEY}"),
        ("Set-Cookie", "session=abc"),
        ("x-api-key", KEY),
        ("x-request-id", "req_1"),
        ("x-ratelimit-limit-requests", "60"),
        ("x-ratelimit-limit-requests", "61"),  # a second of one name: the first is kept
        ("RateLimit-Policy", '"default";q=100;w=10'),
        ("RateLimit", '"default";r=0;t=30'),
        ("anthropic-ratelimit-tokens-reset", "2026-01-01T00:00:00Z"),
        ("x-ratelimit-remaining-tokens", f"0 for {KEY}\r\n\x00é"),
        ("x-ratelimits-are-not-this", "1"),
    ]
    assert dict(ratelimit_headers(headers, (KEY,))) == {
        "x-ratelimit-limit-requests": "60",
        "ratelimit-policy": '"default";q=100;w=10',
        "ratelimit": '"default";r=0;t=30',
        "anthropic-ratelimit-tokens-reset": "2026-01-01T00:00:00Z",
        "x-ratelimit-remaining-tokens": "0 for ***????",  # the key replaced, then what is not printable ASCII
    }


async def _one(endpoint: Endpoint) -> Sample:
    async with asyncio.timeout(30):
        result = await run_workload([endpoint], SHORT, RunOptions(1, 1, FAST, warm_connections=False))
    assert len(result.samples) == 1
    return result.samples[0]


async def test_the_simulators_429_is_stored_with_its_retry_after_and_headers(tmp_path: Path) -> None:
    async with sim.serve(sim.Simulator(sim.Scenario(error="429", retry_after="120"))) as url:
        s = await _one(Endpoint("sim", "m", url, simulated=True))
    assert s.error_kind is ErrorKind.RATE_LIMITED and s.http_status == 429
    assert s.retry_after_s == 120.0
    assert dict(s.ratelimits) == {
        "x-ratelimit-limit-requests": "60",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "120s",
    }
    with open_store(str(tmp_path / "s.db")) as store:
        store.add_sample(s)
        store.flush()
        (back,) = store.samples()
        (row,) = store.query("SELECT retry_after_s, ratelimits FROM samples")
    assert back.retry_after_s == 120.0 and back.ratelimits == s.ratelimits
    assert row[0] == 120.0 and json.loads(row[1])["x-ratelimit-reset-requests"] == "120s"


async def test_a_hostile_429_is_stored_within_every_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RATELIMIT_TEST_KEY", KEY)

    async def handler(request: web.Request) -> web.Response:
        # 100: aiohttp refuses a response of more than 128 headers (bad_response); 500 are the pure test's
        headers = {f"x-ratelimit-h{i}": f"{request.headers['Authorization']} " + "v" * 5000 for i in range(100)}
        return web.json_response({"error": "slow down"}, status=429, headers={"Retry-After": "9" * 5000, **headers})

    async with app_server([web.post("/v1/chat/completions", handler)]) as root:
        s = await _one(Endpoint("p", "m", f"{root}/v1", api_key_env="RATELIMIT_TEST_KEY"))
    assert s.error_kind is ErrorKind.RATE_LIMITED and s.retry_after_s == MAX_RETRY_AFTER_S
    assert len(s.ratelimits) == MAX_HEADERS and all(len(v) == MAX_VALUE for _, v in s.ratelimits)
    stored = json.dumps(sample_values(s), default=str)
    assert KEY not in stored and "Bearer ***" in stored
    assert len(sample_values(s)["ratelimits"]) < MAX_HEADERS * (MAX_HEADER_NAME + MAX_VALUE + 8)


async def test_no_retry_after_is_none_and_other_statuses_keep_nothing() -> None:
    async with sim.serve(sim.Simulator(sim.Scenario(error="429", retry_after=""))) as url:
        limited = await _one(Endpoint("sim", "m", url, simulated=True))
    async with sim.serve(sim.Simulator(sim.Scenario(error="500"))) as url:
        failed = await _one(Endpoint("sim", "m", url, simulated=True))
    assert limited.error_kind is ErrorKind.RATE_LIMITED and limited.retry_after_s is None and limited.ratelimits
    assert failed.error_kind is ErrorKind.HTTP_ERROR and failed.retry_after_s is None and failed.ratelimits == ()
    assert sample_values(failed)["ratelimits"] is None
