"""One serializer for an endpoint row: plain JSON data, ISO times, errors commonest first, each figure's headline."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

from tokenpace.board.rows import row_dict
from tokenpace.measure.stats import figure
from tokenpace.store.windows import METRICS, EndpointRow

T = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def row() -> EndpointRow:
    speed, ttft = figure([100.0, 200.0, 300.0, 400.0]), figure([50.0, 70.0, 90.0, 110.0])
    return EndpointRow(
        "groq", "free", "m", "1k", "openai-chat", False, samples=6, failures=2, success_rate=0.8,
        output_speed=speed, ttft_ms=ttft, e2e_ms=figure([]), first_at=T, last_at=T, window_s=259200,
        errors=(("http_error", 1), ("cancelled", 1)), cancelled=1, usable=4,
    )  # fmt: skip


def test_a_row_is_json_data_with_each_figures_headline() -> None:
    d = row_dict(row(), "median")
    assert json.loads(json.dumps(d)) == d  # plain data, nothing a JSON encoder would have to guess
    assert (d["name"], d["ok"], d["counted"], d["first_at"]) == ("groq:free/m", 4, 4, "2026-01-02T03:04:05+00:00")
    assert d["output_speed"]["headline"] == 250.0 and d["ttft_ms"]["headline"] == 80.0
    assert d["e2e_ms"]["headline"] is None and d["e2e_ms"]["n"] == 0
    assert list(d["errors"].items()) == [("http_error", 1), ("cancelled", 1)]
    assert all(m in d for m in METRICS)


def test_the_headline_follows_the_windows_statistic() -> None:
    d = row_dict(row(), "mean")
    assert d["output_speed"]["headline"] == 250.0 and d["output_speed"]["p50"] == 250.0
    skewed = row_dict(dataclasses.replace(row(), output_speed=figure([1.0, 2.0, 9.0])), "mean")
    assert skewed["output_speed"]["headline"] == 4.0  # the mean, where the median would say 2


def test_every_exported_percentile_carries_its_n_the_values_it_was_computed_over() -> None:
    """A row's figures (leaderboard JSON and CSV, the pages' twins) and a run's summary (``run --json``) write a
    figure by one rule, stats.with_n: "n" beside its percentiles; ``run --json`` keeps its "count" as well."""
    from tokenpace.board.summary import Summary
    from tokenpace.measure.stats import with_n

    d = row_dict(row(), "median")
    assert d["ttft_ms"]["n"] == 4 and d["ttft_ms"]["p50"] == 80.0
    ttft = figure([50.0, 70.0, 90.0])
    summary = Summary("groq/m", 5, 3, {"http_error": 2}, {"ttft_ms": ttft}).as_dict()
    assert summary["figures"]["ttft_ms"] == {"count": 3, "n": 3, "p5": ttft.p5, "p50": 70.0, "p95": ttft.p95,
                                             "mean": 70.0}  # fmt: skip
    assert with_n(ttft, ("p50",)) == {"n": 3, "p50": 70.0} and next(iter(with_n(ttft))) == "n"


def test_a_runs_cold_and_warm_ttft_medians_are_said_with_their_n() -> None:
    import io

    from rich.console import Console

    from tokenpace.board.summary import SUMMARY_KEYS, Cold, Summary
    from tokenpace.board.terminal import print_summary

    cold = Cold(1, 0.3, figure([900.0]), figure([100.0, 120.0]))
    out, figures = io.StringIO(), {name: figure([1.0]) for name in SUMMARY_KEYS}
    print_summary(Console(file=out, width=200, color_system=None), Summary("s/m", 3, 3, {}, figures, cold=cold))
    assert "1 of 3 cold (idle >= 0.3 s): TTFT p50 cold 900 ms (n=1) vs warm 110 ms (n=2)" in out.getvalue()
