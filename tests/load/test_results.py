"""The result document: written and read back unchanged; a hostile file is refused in one line naming the field."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.loadkit import T0, done, point, result, steady
from tokenpace.config.traffic import Load, Slo
from tokenpace.errors import ConfigError
from tokenpace.load import results
from tokenpace.load.results import MAX_BYTES, MAX_ROWS, from_json, read_result, rows_of, to_json


def sweep_result() -> results.BenchResult:
    tagged = steady(4, 100, 20, tag="turn-1") + steady(3, 150, 25, failed=1, tag="turn-2")
    return result(
        point(Load(concurrency=1), steady(5, 100, 20), Slo(ttft_ms=120)),
        point(Load(concurrency=None, rate=2.5, arrival="gamma", burstiness=0.5), tagged, Slo(ttft_ms=120)),
        slo=Slo(ttft_ms=120),
        sweep="rate",
    )


def test_round_trip_is_exact() -> None:
    r = sweep_result()
    text = to_json(r)
    assert from_json(text) == r and from_json(text.encode()) == r
    assert json.loads(text)["format"] == 1
    assert r.points[1].figures.by_tag and r.points[1].figures.errors == {"rate_limited": 1}


def test_a_document_written_before_repeats_and_dispatch_checks_still_reads() -> None:
    doc = json.loads(to_json(sweep_result()))
    del doc["max_dispatch_p99_ms"], doc["repeat"]
    for p in doc["points"]:
        del p["repeat"], p["invalid"], p["figures"]["ttft_from_schedule"], p["figures"]["e2e_from_schedule"]
    old = from_json(json.dumps(doc))
    assert old.repeat == 1 and old.max_dispatch_p99_ms is None
    assert [(p.repeat, p.invalid, p.figures.ttft_from_schedule.n) for p in old.points] == [(0, "", 0), (0, "", 0)]
    assert old.points[0].figures.ttft == sweep_result().points[0].figures.ttft


def test_figures_in_the_servers_tokens_round_trip_and_a_document_from_before_them_still_reads() -> None:
    r = result(point(Load(concurrency=2), steady(5, 100, 20, server_tokens=19)))
    f = r.points[0].figures
    assert f.tpot_server.n == 5 and f.tpot_server.p50 == pytest.approx(10.0) and f.output_tokens_per_s_server
    text = to_json(r)
    assert from_json(text) == r
    doc = json.loads(text)
    del doc["points"][0]["figures"]["tpot_server"], doc["points"][0]["figures"]["output_tokens_per_s_server"]
    old = from_json(json.dumps(doc)).points[0].figures
    assert (old.tpot_server.n, old.output_tokens_per_s_server, old.tpot) == (0, None, f.tpot)
    doc["points"][0]["figures"]["output_tokens_per_s_server"] = -1.0
    with pytest.raises(ConfigError, match=r"figures\.output_tokens_per_s_server: -1\.0 is not a figure"):
        from_json(json.dumps(doc))


def test_an_auto_sweeps_bracket_round_trips_and_a_document_from_before_brackets_still_reads() -> None:
    bracket = results.Bracket(21.8, 22.8, "the bracket is within 5%")
    r = dataclasses.replace(sweep_result(), sweep="auto", saturation=21.8, bracket=bracket)
    text = to_json(r)
    assert from_json(text) == r and json.loads(text)["bracket"] == {
        "low": 21.8,
        "high": 22.8,
        "stopped": bracket.stopped,
    }
    doc = json.loads(text)
    del doc["bracket"]  # as tokenpace wrote it before: its one rate
    old = from_json(json.dumps(doc))
    assert old.bracket is None and old.saturation == 21.8
    doc["bracket"] = {"low": -1.0, "high": None, "stopped": ""}
    with pytest.raises(ConfigError, match=r"bracket\.low: -1\.0 is not a figure"):
        from_json(json.dumps(doc))


def test_a_document_written_when_latencies_had_their_own_type_still_reads() -> None:
    """Load tests' latencies were a Latency of n, mean, p50, p90, p95, p99 and max: a stats.Figure now, whose
    board fields (P5 to P75, the intervals) such a document lacks."""
    doc = json.loads(to_json(sweep_result()))
    board_only = ("p5", "p25", "p75", "mean_lo", "mean_hi", "p50_lo", "p50_hi")
    for p in doc["points"]:
        for figure in (v for v in p["figures"].values() if isinstance(v, dict) and "p99" in v):
            assert set(board_only) <= set(figure)
            for name in board_only:
                del figure[name]
    old = from_json(json.dumps(doc))
    assert old == sweep_result()


def test_read_a_file(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(to_json(sweep_result()))
    assert read_result(path) == sweep_result()
    with pytest.raises(ConfigError, match=r"missing\.json: cannot read it"):
        read_result(tmp_path / "missing.json")


def edit(key_path: str, value: object) -> str:
    doc = json.loads(to_json(sweep_result()))
    *parents, last = key_path.split(".")
    node = doc
    for k in parents:
        node = node[int(k)] if isinstance(node, list) else node[k]
    node[last] = value
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        ("[1, 2]", "not a tokenpace result"),
        (edit("format", 2), "format 2: this tokenpace reads format 1"),
        (edit("format", "1"), "format: Input should be a valid integer"),
        (edit("points.0.figures.ok", "5"), r"points\.0\.figures\.ok: Input should be a valid integer"),
        (edit("points.0.figures.ttft.p50", "fast"), r"points\.0\.figures\.ttft\.p50: Input should be a valid number"),
        (edit("points.1.load.arrival", "bursty"), r"points\.1\.load\.arrival: Input should be 'poisson'"),
        (edit("points.0.figures.request_rate", -1.0), r"points\.0\.figures\.request_rate: -1\.0 is not a figure"),
        (edit("points.0.figures.ok", 10**13), r"points\.0\.figures\.ok: 10000000000000 is not a figure"),
        (edit("points.0.load.concurrency", None), r"points\.0\.load: set concurrency or rate"),
        (edit("endpoint", "x" * (results.MAX_TEXT + 1)), "endpoint: over 65536 characters"),
        (edit("points.0.figures.errors", {"rate_limited": "x"}), r"errors\.rate_limited: Input should be"),
        ("[" * 100_000, "not JSON"),
        (edit("points.0.repeat", -1), r"points\.0\.repeat: -1 is not a figure"),
        (edit("points.0.invalid", "x" * (results.MAX_TEXT + 1)), r"points\.0\.invalid: over 65536 characters"),
        (edit("points.0.figures.wait.p99", "late"), r"points\.0\.figures\.wait\.p99: Input should be a valid number"),
        (edit("points.0.figures.ttft_from_schedule.p99", -5.0), r"ttft_from_schedule\.p99: -5\.0 is not a figure"),
        (edit("max_dispatch_p99_ms", float("inf")), r"max_dispatch_p99_ms"),
    ],
)
def test_hostile_documents_are_refused_in_one_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        from_json(text)
    assert "\n" not in str(caught.value)


def test_non_finite_numbers_are_refused() -> None:
    text = to_json(sweep_result()).replace('"duration_s":', '"duration_s":NaN,"x":', 1)
    with pytest.raises(ConfigError, match=r"points\.0\.load\.duration_s: nan is not a figure"):
        from_json(text)
    text = to_json(sweep_result()).replace('"request_rate":', '"request_rate":Infinity,"x":', 1)
    with pytest.raises(ConfigError, match=r"points\.0\.figures\.request_rate: inf is not a figure"):
        from_json(text)


def test_size_is_capped_before_parsing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="over 64 MiB"):
        from_json(b" " * (MAX_BYTES + 1))
    path = tmp_path / "big.json"
    path.write_bytes(b" " * (MAX_BYTES + 10))
    with pytest.raises(ConfigError, match=r"big\.json: result document: over 64 MiB"):
        read_result(path)


def test_point_and_row_counts_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    r = sweep_result()
    text = to_json(r)
    monkeypatch.setattr(results, "MAX_BENCH_POINTS", 1)
    with pytest.raises(ConfigError, match="points: 2 points, at most 1"):
        from_json(text)
    monkeypatch.setattr(results, "MAX_BENCH_POINTS", 256)
    monkeypatch.setattr(results, "MAX_ROWS", 4)
    with pytest.raises(ConfigError, match=r"points\.0\.rows: 5 items, at most 4"):
        from_json(text)


def test_rows_are_the_measured_requests_in_send_order() -> None:
    reqs = [done(50, 80, ((60, 2),), tag="b"), done(0, 30, ((10, 1), (20, 1))), done(-10, 0, warmup=True)]
    rows = rows_of(reqs, T0 - 1_000_000_000)
    assert [(r.t_s, r.ttft_ms, r.e2e_ms, r.output_tokens, r.ok, r.tag) for r in rows] == [
        (1.0, 10.0, 30.0, 2, True, ""),
        (1.05, 10.0, 30.0, 2, True, "b"),
    ]


def test_rows_are_thinned_evenly_above_the_limit() -> None:
    reqs = [done(i, i + 1, ((i + 0.5, 1),)) for i in range(10)]
    assert [r.t_s * 1000 for r in rows_of(reqs, T0, limit=4)] == pytest.approx([0, 2, 5, 7])
    assert len(rows_of(reqs, T0, limit=10)) == 10 and MAX_ROWS == 20_000


def test_a_document_too_large_to_read_is_written_with_fewer_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    r = sweep_result()
    full = to_json(r)
    monkeypatch.setattr(results, "MAX_BYTES", len(full) - 300)  # a few rows too many
    text = to_json(r)
    back = from_json(text)
    assert len(text) <= results.MAX_BYTES
    assert [p.figures for p in back.points] == [p.figures for p in r.points]  # figures never thin_evenly
    assert all(len(p.rows) < len(q.rows) for p, q in zip(back.points, r.points, strict=True))


def test_thin_spreads_what_it_keeps() -> None:
    assert results.thin_evenly(range(10), 4) == (0, 2, 5, 7)
    assert results.thin_evenly([1, 2], 5) == (1, 2) and results.thin_evenly([1, 2], 0) == ()


def test_a_row_out_of_range_is_named() -> None:
    with pytest.raises(ConfigError, match=r"points\.0\.rows\.2\.e2e_ms: -5\.0 is not a figure"):
        from_json(edit("points.0.rows.2.e2e_ms", -5))
    with pytest.raises(ConfigError, match=r"points\.1\.rows\.0\.ttft_ms: nan is not a figure"):
        from_json(edit("points.1.rows.0.ttft_ms", float("nan")))
    with pytest.raises(ConfigError, match=r"points\.1\.rows\.3\.tag: over 65536 characters"):
        from_json(edit("points.1.rows.3.tag", "t" * 70_000))


def test_early_stopping_estimates_round_trip_and_a_document_from_before_them_still_reads() -> None:
    r = sweep_result()
    doc = json.loads(to_json(r))
    ttft = doc["points"][0]["figures"]["early_stopping"]["ttft"]
    assert ttft["n"] == doc["points"][0]["figures"]["ttft"]["n"] and ttft["needed"] == 662 and ttft["q"] == 0.99
    for p in doc["points"]:
        del p["figures"]["early_stopping"]
    assert [p.figures.early_stopping for p in from_json(json.dumps(doc)).points] == [{}, {}]
