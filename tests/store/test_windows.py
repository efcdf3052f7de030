"""Rolling windows against real SQLite files and a real PostgreSQL server, from samples the store really wrote."""

from __future__ import annotations

import dataclasses
import random
import statistics
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tokenpace.board.medians import model_rows
from tokenpace.board.summary import summarise
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.windows import EACH, WINDOWS
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.metrics import percentile
from tokenpace.measure.sample import LOCAL, Network, Origin, Sample, make_sample
from tokenpace.measure.stats import success_rate
from tokenpace.measure.timing import Event, EventKind, Timeline
from tokenpace.measure.verdict import Bound
from tokenpace.store.database import Store, open_store
from tokenpace.store.rollup import STORED
from tokenpace.store.series import model_series, series
from tokenpace.store.windows import EndpointRow, endpoint_rows, present, present_models

MS = 1_000_000
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
H72, H24 = WINDOWS["72h"], WINDOWS["24h"]
GROQ = Endpoint("groq", "llama", "http://groq.invalid/v1", plan="free")
CEREBRAS = Endpoint("cerebras", "llama", "http://cerebras.invalid/v1")
DEMO = Endpoint("demo", "sim", "http://127.0.0.1:1/v1", simulated=True)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """An empty store: a SQLite file in tmp_path, or a fresh PostgreSQL schema."""
    url = str(tmp_path / "tokenpace.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    with open_store(url) as s:
        yield s


def stream(ttft_ms: float, gap_ms: float, chunks: int = 5, failure: Failure | None = None) -> Timeline:
    """A streamed answer: the first chunk after ttft_ms, then one every gap_ms; no tokens when it failed."""
    times = [round((ttft_ms + i * gap_ms) * MS) for i in range(chunks)]
    events = () if failure else tuple(Event(t, EventKind.CONTENT, " word") for t in times)
    end = times[-1] + MS
    return Timeline(0, MS, end, (*events, Event(end, EventKind.DONE)), failure=failure)


def put(store: Store, endpoint: Endpoint, at: datetime, workload: str = "1k", **timing: float) -> Sample:
    """Write one successful sample taken at ``at``; ``timing`` overrides ttft_ms / gap_ms."""
    sample = make_sample("run", endpoint, workload, at, stream(timing.get("ttft_ms", 100), timing.get("gap_ms", 10)))
    store.add_sample(sample)
    return sample


def fail(store: Store, endpoint: Endpoint, at: datetime, kind: ErrorKind, workload: str = "1k") -> Sample:
    sample = make_sample("run", endpoint, workload, at, stream(9999, 1, failure=Failure(kind, "boom", 500)))
    store.add_sample(sample)
    return sample


def rows(store: Store, window: str = "72h", long: tuple[str, ...] = ()) -> dict[str, EndpointRow]:
    store.flush()
    return {f"{r.name} {r.workload}": r for r in endpoint_rows(store, WINDOWS[window], NOW, long)}


def test_percentiles_match_metrics_percentile_on_random_data(store: Store) -> None:
    rng = random.Random(5)
    written: dict[str, list[Sample]] = {}
    for endpoint, count in ((GROQ, 1), (CEREBRAS, 2), (DEMO, 137)):
        for _ in range(count):
            at = NOW - timedelta(seconds=rng.uniform(1, 71 * 3600))
            s = put(store, endpoint, at, ttft_ms=rng.lognormvariate(5, 0.5), gap_ms=rng.uniform(1, 40))
            written.setdefault(endpoint.name, []).append(s)
        # A tie and a duplicate value: ranks among equal values must not matter.
        if count > 2:
            for _ in range(3):
                written[endpoint.name].append(put(store, endpoint, NOW - timedelta(hours=1), ttft_ms=200, gap_ms=5))
    found = rows(store)
    assert set(found) == {f"{name} 1k" for name in written}
    for name, samples in written.items():
        row = found[f"{name} 1k"]
        assert row.samples == len(samples) and row.failures == 0 and row.success_rate == 1.0
        for metric in ("output_speed", "ttft_ms", "e2e_ms"):
            values = [getattr(s.metrics, metric) for s in samples]
            figure = row.figure(metric)
            assert figure.n == len(values)
            for q in (5, 25, 50, 75, 95):
                assert getattr(figure, f"p{q}") == percentile(values, q), (name, metric, q)  # identical, not close
            assert figure.mean == pytest.approx(statistics.fmean(values), rel=1e-12)
            assert figure.headline("median") == figure.p50 and figure.headline("mean") == figure.mean


def test_window_edges_include_the_last_span_only(store: Store) -> None:
    put(store, GROQ, NOW - timedelta(hours=72))  # exactly one window ago: outside (now - span, now]
    put(store, GROQ, NOW - timedelta(hours=72) + timedelta(seconds=1), ttft_ms=300)
    put(store, GROQ, NOW, ttft_ms=500)
    put(store, GROQ, NOW + timedelta(seconds=1))  # in the future of `now`: not yet
    put(store, CEREBRAS, NOW - timedelta(hours=72, seconds=1))  # nothing inside: no row at all
    row = rows(store)["groq:free/llama 1k"]
    assert row.samples == 2 and row.ttft_ms.n == 2
    assert row.ttft_ms.p50 == pytest.approx(400)
    assert row.first_at == NOW - timedelta(hours=72) + timedelta(seconds=1) and row.last_at == NOW
    assert row.window_s == 72 * 3600
    assert set(rows(store)) == {"groq:free/llama 1k"}
    day = rows(store, "24h")["groq:free/llama 1k"]
    assert day.samples == 1 and day.ttft_ms.mean == pytest.approx(500) and H24.statistic == "mean"


def test_long_workloads_use_the_long_span(store: Store) -> None:
    ten_days = NOW - timedelta(days=10)
    put(store, GROQ, ten_days, workload="100k", ttft_ms=2000)
    put(store, GROQ, NOW - timedelta(hours=1), workload="100k", ttft_ms=1000)
    put(store, GROQ, ten_days, workload="1k")  # a short workload keeps 72 h even in the same query
    put(store, GROQ, NOW - timedelta(days=15), workload="100k")  # beyond 14 days
    long = rows(store, long=("100k",))
    assert long["groq:free/llama 100k"].samples == 2 and long["groq:free/llama 100k"].window_s == 14 * 86400
    assert long["groq:free/llama 100k"].ttft_ms.p50 == pytest.approx(1500)
    assert "groq:free/llama 1k" not in long
    short = rows(store)  # without the rule, 100k is a 72 h workload like any other
    assert short["groq:free/llama 100k"].samples == 1 and short["groq:free/llama 100k"].window_s == 72 * 3600
    assert rows(store, "7d", long=("100k",))["groq:free/llama 100k"].samples == 1  # only 72 h has a long span


def test_failures_count_in_the_success_rate_but_not_in_figures(store: Store) -> None:
    for i in range(6):
        put(store, GROQ, NOW - timedelta(minutes=i), ttft_ms=100)
    for kind in (ErrorKind.RATE_LIMITED, ErrorKind.RATE_LIMITED, ErrorKind.HTTP_ERROR, ErrorKind.CANCELLED):
        fail(store, GROQ, NOW - timedelta(minutes=30), kind)
    row = rows(store)["groq:free/llama 1k"]
    assert (row.samples, row.failures, row.ok, row.cancelled) == (10, 4, 6, 1)
    assert row.success_rate == pytest.approx(6 / 9)  # a sample cancelled at shutdown is no verdict
    assert row.ttft_ms.n == 6 and row.ttft_ms.p95 == pytest.approx(100)  # the 9999 ms failures are not there
    assert row.e2e_ms.n == 6 and row.e2e_ms.p95 is not None and row.e2e_ms.p95 < 200
    assert row.errors == (("rate_limited", 2), ("cancelled", 1), ("http_error", 1))
    fail(store, CEREBRAS, NOW, ErrorKind.CONNECT_ERROR)
    only_failed = rows(store)["cerebras/llama 1k"]
    assert only_failed.success_rate == 0.0 and only_failed.output_speed.n == 0 and only_failed.ttft_ms.p50 is None
    fail(store, DEMO, NOW, ErrorKind.CANCELLED)
    assert rows(store)["demo/sim 1k"].success_rate is None  # nothing judged


def test_a_window_and_a_run_summary_say_the_same_of_the_same_samples(store: Store) -> None:
    """One vocabulary: the window's Figures (SQL) and the summary's (Python) agree, and so do success rates."""
    rng = random.Random(7)
    samples = [put(store, GROQ, NOW - timedelta(minutes=i), ttft_ms=rng.uniform(50, 500)) for i in range(11)]
    samples += [fail(store, GROQ, NOW, kind) for kind in (ErrorKind.RATE_LIMITED, ErrorKind.CANCELLED)]
    row, summary = rows(store)["groq:free/llama 1k"], summarise(GROQ.name, samples)
    for metric in STORED:  # the summary has no network to correct TTFT by
        window, run = dataclasses.astuple(row.figure(metric)), dataclasses.astuple(summary.figures[metric])
        assert window == pytest.approx(run) and row.figure(metric).n == 11
    assert row.success_rate == summary.success_rate == success_rate(11, 13, 1) == 11 / 12


def test_rows_carry_identity_and_simulated(store: Store) -> None:
    put(store, DEMO, NOW, workload="10k")
    (row,) = rows(store).values()
    assert (row.provider, row.plan, row.model, row.workload, row.protocol) == ("demo", "default", "sim", "10k",
                                                                              "openai-chat")  # fmt: skip
    assert row.simulated and row.name == "demo/sim"


def test_filters_select_the_same_rows_as_filtering_everything(store: Store) -> None:
    for endpoint, workload in ((GROQ, "1k"), (GROQ, "10k"), (CEREBRAS, "1k"), (DEMO, "1k")):
        put(store, endpoint, NOW - timedelta(hours=1), workload=workload)
    everything = list(rows(store).values())
    choices: tuple[dict[str, str], ...] = (
        {"model": "llama"},
        {"provider": "groq", "plan": "free"},
        {"workload": "1k", "model": "sim"},
    )
    for filters in choices:
        expected = [r for r in everything if all(getattr(r, k) == v for k, v in filters.items())]
        assert endpoint_rows(store, H72, NOW, **filters) == expected and expected  # type: ignore[arg-type]


def test_series_are_oldest_first_and_filtered(store: Store) -> None:
    old = put(store, GROQ, NOW - timedelta(hours=2), ttft_ms=300)
    new = put(store, GROQ, NOW - timedelta(hours=1), workload="10k")
    failed = fail(store, GROQ, NOW - timedelta(minutes=90), ErrorKind.IDLE_TIMEOUT)
    put(store, GROQ, NOW - timedelta(days=3))  # before `since`
    put(store, CEREBRAS, NOW - timedelta(minutes=30), ttft_ms=50)
    store.flush()
    since = NOW - timedelta(days=1)
    points = series(store, provider="groq", plan="free", model="llama", workload=None, since=since)
    assert [p.started_at for p in points] == [old.started_at, failed.started_at, new.started_at]
    assert points[0].ttft_ms == pytest.approx(300) and points[0].ok and points[0].error_kind is None
    assert not points[1].ok and points[1].error_kind == "idle_timeout"
    assert points[0].output_speed == old.metrics.output_speed and points[0].e2e_ms == old.metrics.e2e_ms
    one = series(store, provider="groq", plan="free", model="llama", workload="10k", since=since)
    assert [(p.workload, p.started_at) for p in one] == [("10k", new.started_at)]
    both = model_series(store, model="llama", workload="1k", since=since)
    assert [name for name, _ in both] == ["groq:free/llama", "groq:free/llama", "cerebras/llama"]
    assert model_series(store, model="nope", workload=None, since=since) == []


def put_as(store: Store, endpoint: Endpoint, at: datetime, ttft_ms: float = 100, **origin: Any) -> Sample:
    """One successful sample with its origin set (source, published, client_bound) and an optional failure."""
    failure = origin.pop("failure", None)
    sample = make_sample("run", endpoint, "1k", at, stream(ttft_ms, 10, failure=failure), **origin)
    store.add_sample(sample)
    return sample


def test_unpublished_samples_stay_off_and_published_one_shot_ones_are_counted(store: Store) -> None:
    """Issue 9 item 2: the board reads published samples only, and says how many of a row's were one-shot."""
    at = NOW - timedelta(hours=1)
    for _ in range(3):
        put_as(store, GROQ, at)
        put_as(store, CEREBRAS, at, source="one-shot", published=False)
    put_as(store, DEMO, at)
    put_as(store, DEMO, at, source="one-shot", published=True)
    put_as(store, DEMO, at, source="one-shot", published=True, failure=Failure(ErrorKind.HTTP_ERROR, "x", 500))
    found = rows(store)
    assert set(found) == {"groq:free/llama 1k", "demo/sim 1k"}  # cerebras ran one-shot, unpublished
    assert found["groq:free/llama 1k"].one_shot == 0
    assert (found["demo/sim 1k"].one_shot, found["demo/sim 1k"].samples) == (2, 3)
    assert ("cerebras", "default", "1k", "") not in present(store, H72, NOW)
    charted = model_series(store, model="llama", workload="1k", since=NOW - timedelta(days=1))
    assert [name for name, _ in charted] == ["groq:free/llama"] * 3  # the model page: published samples only
    everything = series(store, provider="cerebras", plan="default", model="llama", workload=None, since=at)
    assert len(everything) == 3 and all(p.source == "one-shot" and not p.published for p in everything)


def test_client_bound_samples_are_counted_apart_and_left_out_of_figures(store: Store) -> None:
    """Issue 9 item 3: figures and the ranking count leave client-bound samples out; their count is shown."""
    at = NOW - timedelta(hours=1)
    for _ in range(3):
        put_as(store, GROQ, at, ttft_ms=100)
    for _ in range(2):
        put_as(store, GROQ, at, ttft_ms=900, client_bound=True)
    put_as(store, GROQ, at, client_bound=True, failure=Failure(ErrorKind.FIRST_TOKEN_TIMEOUT, "late", None))
    row = rows(store)["groq:free/llama 1k"]
    assert (row.samples, row.failures, row.ok, row.client_bound, row.usable) == (6, 1, 5, 3, 3)
    assert row.success_rate == pytest.approx(5 / 6)  # the endpoint answered them: their outcome counts
    assert row.ttft_ms.n == 3 and row.ttft_ms.p95 == pytest.approx(100) and row.ttft_ms.mean == pytest.approx(100)
    (included,) = endpoint_rows(store, H72, NOW, include_client_bound=True)
    assert (included.usable, included.client_bound, included.ttft_ms.n) == (5, 3, 5)
    assert included.ttft_ms.p95 == pytest.approx(900) and included.ttft_ms.p50 == pytest.approx(100)
    assert model_rows([row], "median", min_samples=4) == []  # 3 usable samples: too few to speak for the model


def test_model_rows_group_providers_ids_of_one_model_and_rows_read_several_ids(store: Store) -> None:
    groq = Endpoint("groq", "llama-3.1-8b-instant", "http://groq.invalid/v1")
    cerebras = Endpoint("cerebras", "llama3.1-8b", "http://cerebras.invalid/v1")
    for endpoint, ttft in ((groq, 100), (cerebras, 300), (DEMO, 50)):
        for _ in range(3):
            put(store, endpoint, NOW - timedelta(hours=1), ttft_ms=ttft)
    store.flush()
    assert present_models(store, H72, NOW) == ["llama-3.1-8b-instant", "llama3.1-8b", "sim"]
    joined = endpoint_rows(store, H72, NOW, model=["llama-3.1-8b-instant", "llama3.1-8b"])
    assert [r.name for r in joined] == ["cerebras/llama3.1-8b", "groq/llama-3.1-8b-instant"]
    assert endpoint_rows(store, H72, NOW, model=[]) == []
    canonical = {"llama-3.1-8b-instant": "llama-3.1-8b", "llama3.1-8b": "llama-3.1-8b"}
    llama, sim = model_rows(endpoint_rows(store, H72, NOW), "median", canonical=lambda m: canonical.get(m, m))
    assert (llama.model, llama.providers, llama.samples) == ("llama-3.1-8b", 2, 6)
    assert llama.ttft_ms == pytest.approx(200) and sim.model == "sim"
    assert len(model_rows(endpoint_rows(store, H72, NOW), "median")) == 3  # by default every id is its own model


def put_from(store: Store, region: str, at: datetime, ttft_ms: float, rtt_ms: float | None = None) -> None:
    """A sample of GROQ measured from a region's agent, with the round trip it measured (if any)."""
    network = None if rtt_ms is None else Network(rtt_ms=rtt_ms)
    origin = Origin(region, f"{region}-1" if region else None, network=network)
    sample = make_sample("run", GROQ, "1k", at, stream(ttft_ms, 10), origin=origin)
    store.add_sample(sample)


def test_two_regions_of_one_endpoint_are_two_rows_with_their_own_medians(store: Store) -> None:
    """Hours from the rollup and the edge hour raw: each region's figures are its own samples' (issue 11)."""
    for i in range(5):
        at = NOW - timedelta(hours=3 * i, minutes=1)
        put_from(store, "eu-west", at, 100 + i, rtt_ms=20)
        put_from(store, "us-east", at, 300 + i, rtt_ms=90)
    put_from(store, LOCAL, NOW, 1000)  # no network measured: a TTFT, no corrected one
    store.flush()
    each = {r.region or "": r for r in endpoint_rows(store, H72, NOW, region=EACH)}
    assert sorted(each) == [LOCAL, "eu-west", "us-east"]
    assert each["eu-west"].ttft_ms.p50 == pytest.approx(102) and each["us-east"].ttft_ms.p50 == pytest.approx(302)
    assert each["eu-west"].ttft_net_ms.p50 == pytest.approx(82)
    assert each["us-east"].ttft_net_ms.p50 == pytest.approx(212)
    assert (each[LOCAL].ttft_ms.n, each[LOCAL].ttft_net_ms.n) == (1, 0)
    (west,) = endpoint_rows(store, H72, NOW, region="eu-west")
    assert west == each["eu-west"]
    (pooled,) = endpoint_rows(store, H72, NOW)
    assert (pooled.region, pooled.samples, pooled.ttft_ms.n, pooled.ttft_net_ms.n) == (None, 11, 11, 10)
    assert endpoint_rows(store, H72, NOW, region="nowhere") == []
    assert {m[3] for m in present(store, H72, NOW)} == {LOCAL, "eu-west", "us-east"}
    assert present(store, H72, NOW, region="us-east") == [("groq", "free", "1k", "us-east")]
    models = model_rows(endpoint_rows(store, H72, NOW, region=EACH), "median")
    assert [(m.region, m.providers) for m in models] == [(LOCAL, 1), ("eu-west", 1), ("us-east", 1)]


def thinking_stream(ttft_ms: float, thinking_ms: float, gap_ms: float = 20) -> Timeline:
    """A reasoning model's answer: two thinking chunks from ttft_ms (none when thinking_ms is 0), the answer's first
    chunk thinking_ms after the first token, then four more every gap_ms."""
    thoughts = [(ttft_ms, " hmm"), (ttft_ms + thinking_ms / 2, " so")] if thinking_ms else []
    events = [Event(round(ms * MS), EventKind.REASONING, text) for ms, text in thoughts]
    answer = [round((ttft_ms + thinking_ms + i * gap_ms) * MS) for i in range(5)]
    events += [Event(t, EventKind.CONTENT, " word") for t in answer]
    return Timeline(0, MS, answer[-1] + MS, (*events, Event(answer[-1] + MS, EventKind.DONE)))


def test_end_to_end_for_500_tokens_round_trips_and_the_board_keeps_it_exact(any_store: Store) -> None:
    """Issue 31, 2a: each sample's thinking time and end-to-end for 500 tokens come back from the store as they were
    computed, and a window's (whole hours from the rollups, the hour holding now raw) is exactly a run summary's of
    the same samples; a sample whose output speed was client-bound is left out of it, its TTFT counted."""
    store, written = any_store, []
    for i, (ttft, thinking) in enumerate(((120, 800), (90, 1300), (200, 0), (150, 2100), (110, 950))):
        at = NOW if i % 2 else NOW - timedelta(hours=5, minutes=i)
        written.append(make_sample("run", GROQ, "1k", at, thinking_stream(ttft, thinking)))
    lagged = make_sample(
        "run", GROQ, "1k", NOW - timedelta(hours=2), thinking_stream(100, 500), client_bound=Bound.SPEED
    )
    for s in (*written, lagged):
        store.add_sample(s)
    store.flush()
    kept = {s.id: s.metrics for s in store.samples()}
    assert [kept[s.id].thinking_ms for s in written] == [800, 1300, 0, 2100, 950]
    for s in written:
        assert kept[s.id].e2e500_ms == s.metrics.e2e500_ms
        assert s.metrics.ttft_ms is not None and s.metrics.thinking_ms is not None and s.metrics.output_speed
        truth = s.metrics.ttft_ms + s.metrics.thinking_ms + 500 / s.metrics.output_speed * 1000
        assert s.metrics.e2e500_ms == pytest.approx(truth, rel=1e-12)
    row = rows(store)["groq:free/llama 1k"]
    assert (row.ttft_ms.n, row.output_speed.n, row.e2e500_ms.n) == (6, 5, 5)
    assert row.e2e500_ms == summarise(GROQ.name, written).figures["e2e500_ms"]
