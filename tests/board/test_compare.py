"""Comparing two load-test results: pairing by load, each figure's direction, threshold and noise floor."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.loadkit import done, point, result, steady
from tokenpace.board import compare as compare_module
from tokenpace.board.compare import SPECS, LevelChange, compare, comparison_dict, describe_change, judge, relative
from tokenpace.config.traffic import Load, Slo
from tokenpace.load.results import BenchPoint, Row

C1, C4, R2 = Load(concurrency=1), Load(concurrency=4), Load(concurrency=None, rate=2.0)
SPEC = {s.name: s for s in SPECS}


def at(load: Load, ttft_ms: float = 100, gap_ms: float = 20, failed: int = 0, slo: Slo | None = None) -> BenchPoint:
    return point(load, steady(10, ttft_ms, gap_ms, failed=failed), slo)


def verdicts(a: BenchPoint, b: BenchPoint, threshold: float = 0.1) -> dict[str, str]:
    c = compare(result(a), result(b), threshold)
    return {ch.figure: ch.verdict for ch in c.points[0].changes}


def test_the_same_run_is_the_same() -> None:
    c = compare(result(at(C1)), result(at(C1)), 0.1)
    assert c.verdict == "same" and c.regressions == () and c.only_a == c.only_b == ()
    # goodput and SLO: n/a without an SLO; the server-token figures without usage (these requests report none)
    assert {ch.verdict for ch in c.points[0].changes} == {"same", "n/a"}
    assert [ch.figure for ch in c.points[0].changes if ch.verdict == "n/a"] == [
        "Goodput", "SLO attainment", "TPOT in server tokens P50", "Output throughput in server tokens"
    ]  # fmt: skip


def test_figures_in_the_servers_tokens_are_compared_beside_o200k_but_never_decide_the_verdict() -> None:
    # 10 o200k tokens a request, 19 by the server's count; B's gaps twice A's: TPOT 10 -> 20 ms in server tokens.
    a, b = point(C1, steady(10, 100, 20, server_tokens=19)), point(C1, steady(10, 100, 40, server_tokens=19))
    c = compare(result(a), result(b), 0.1)
    by = {ch.figure: ch for ch in c.points[0].changes}
    tpot, tok_s = by["TPOT in server tokens P50"], by["Output throughput in server tokens"]
    assert (tpot.a, tpot.b, tpot.verdict, tpot.headline) == (10.0, 20.0, "worse", False)
    assert tok_s.verdict == "worse" and not tok_s.headline and tok_s.b < tok_s.a  # type: ignore[operator]
    assert by["TPOT P50"].verdict == "worse" and c.verdict == "regressed"  # o200k's TPOT decides
    assert not any("server" in r for r in c.regressions)


def test_a_slower_first_token_regresses_and_says_which_figure() -> None:
    c = compare(result(at(C1)), result(at(C1, ttft_ms=200)), 0.1)
    ttft = next(ch for ch in c.points[0].changes if ch.figure == "TTFT P50")
    assert (ttft.a, ttft.b, ttft.change, ttft.verdict) == (100.0, 200.0, 1.0, "worse")
    assert c.verdict == "regressed" and "concurrency 1: TTFT P50 +100.0%" in c.regressions
    assert verdicts(at(C1), at(C1, ttft_ms=200))["TPOT P50"] == "same"  # the stream after it did not change


def test_direction_of_each_figure() -> None:
    faster = verdicts(at(C1, ttft_ms=200, gap_ms=40), at(C1, ttft_ms=100, gap_ms=20))
    assert {k: faster[k] for k in ("Request rate", "Output throughput", "Output speed P50")} == dict.fromkeys(
        ("Request rate", "Output throughput", "Output speed P50"), "better"
    )
    assert {
        faster[k] for k in ("TTFT P50", "TTFT P99", "TPOT P50", "TPOT P99", "End-to-end P50", "End-to-end P99")
    } == {"better"}
    assert compare(result(at(C1, ttft_ms=200, gap_ms=40)), result(at(C1)), 0.1).verdict == "improved"


def test_within_the_threshold_is_the_same() -> None:
    assert verdicts(at(C1), at(C1, ttft_ms=105))["TTFT P50"] == "same"
    assert verdicts(at(C1), at(C1, ttft_ms=105), threshold=0.01)["TTFT P50"] == "worse"


def test_the_noise_floor_keeps_tiny_absolute_moves_the_same() -> None:
    v = verdicts(at(C1, ttft_ms=2), at(C1, ttft_ms=2.5), threshold=0.1)  # +25 %, but half a millisecond
    assert v["TTFT P50"] == "same"
    assert judge(SPEC["TTFT P50"], 2.0, 3.01, 0.1) == "worse"  # past 1 ms
    assert judge(SPEC["Request rate"], 0.05, 0.045, 0.05) == "same"  # -10 % but 0.005 req/s
    assert judge(SPEC["SLO attainment"], 0.999, 0.995, 0.0) == "same"  # under half a point
    assert judge(SPEC["SLO attainment"], 0.999, 0.99, 0.0) == "worse"


def test_errors_from_none_is_worse_in_percentage_points() -> None:
    c = compare(result(point(C1, steady(100, 100, 20))), result(point(C1, steady(100, 100, 20, failed=20))), 0.1)
    errors = next(ch for ch in c.points[0].changes if ch.figure == "Errors")
    assert (errors.a, errors.b, errors.change, errors.verdict) == (0.0, 0.2, None, "worse")
    assert describe_change(errors) == "+20.0 pt" and "concurrency 1: Errors +20.0 pt" in c.regressions
    assert errors.a_interval is not None and errors.b_interval is not None  # Wilson: [0, 3.7 %], [13 %, 29 %]
    assert errors.a_interval[1] < errors.b_interval[0]


def test_two_failures_in_ten_are_within_the_noise() -> None:
    # 0 of 10 and 2 of 10 failed: +20 points, but their Wilson intervals ([0, 28 %], [6 %, 51 %]) overlap.
    c = compare(result(at(C1)), result(at(C1, failed=2)), 0.1)
    errors = next(ch for ch in c.points[0].changes if ch.figure == "Errors")
    assert (errors.b, errors.verdict, c.verdict) == (0.2, "same", "same")


def test_goodput_and_attainment_compare_when_both_runs_had_an_slo() -> None:
    slo = Slo(ttft_ms=150)
    a = point(C1, steady(10, 100, 20), slo)
    b = point(C1, steady(5, 100, 20) + steady(5, 200, 20), slo)  # half the requests now miss the TTFT bound
    c = compare(result(a, slo=slo), result(b, slo=slo), 0.1)
    got = {ch.figure: (ch.a, ch.b, ch.verdict) for ch in c.points[0].changes}
    assert got["SLO attainment"] == (1.0, 0.5, "worse") and got["Goodput"][2] == "worse"
    assert c.notes == ()


def test_itl_and_output_speed_are_shown_but_never_decide() -> None:
    a = at(C1)
    slow_gap = dataclasses.replace(a.figures, itl=dataclasses.replace(a.figures.itl, p99=500.0))
    slow_speed = dataclasses.replace(slow_gap, output_speed=dataclasses.replace(a.figures.output_speed, p50=1.0))
    c = compare(result(a), result(dataclasses.replace(a, figures=slow_speed)), 0.1)
    got = {ch.figure: ch.verdict for ch in c.points[0].changes}
    assert got["ITL P99"] == got["Output speed P50"] == "worse"
    assert c.verdict == "same" and c.regressions == ()


def test_points_pair_by_load_and_the_rest_are_listed() -> None:
    c = compare(result(at(C1), at(C4)), result(at(C4), at(R2)), 0.1)
    assert [p.load for p in c.points] == ["concurrency 4"]
    assert (c.only_a, c.only_b) == (("concurrency 1",), ("rate 2/s (poisson)",))
    gamma = Load(concurrency=None, rate=2.0, arrival="gamma", burstiness=0.5)
    assert [p.load for p in compare(result(at(R2)), result(at(gamma)), 0.1).points] == ["rate 2/s (poisson)"]


def test_nothing_in_common_is_incomparable() -> None:
    c = compare(result(at(C1)), result(at(C4)), 0.1)
    assert c.verdict == "incomparable" and c.points == ()


def test_notes_say_how_the_runs_differ() -> None:
    a = result(at(C1), slo=Slo(ttft_ms=500))
    b = result(dataclasses.replace(at(C1), client_bound=True), endpoint="other/m")
    c = compare(a, b, 0.1)
    assert c.notes == (
        "the runs differ in endpoint: A sim/m, B other/m",
        "the runs differ in SLO: A ttft<=500ms, B none",
    )
    assert c.points[0].notes == ("run B was client-bound here",)


def test_as_dict_is_json() -> None:
    c = compare(result(at(C1)), result(at(C1, ttft_ms=200)), 0.1)
    data = json.loads(json.dumps(comparison_dict(c)))
    assert data["verdict"] == "regressed" and data["points"][0]["changes"][5]["figure"] == "TTFT P50"
    ns = {ch["figure"]: (ch["a_n"], ch["b_n"]) for ch in data["points"][0]["changes"]}
    assert ns["TTFT P99"] == ([10], [10]) and ns["ITL P99"] == ([90], [90]) and ns["Request rate"] == ([], [])


@pytest.mark.parametrize(("a", "b", "text"), [(100.0, 135.0, "+35.0%"), (0.0, 12.0, "+12 ms"), (None, 1.0, "n/a")])
def test_describe_change(a: float | None, b: float | None, text: str) -> None:
    change = None if a is None or b is None else relative(a, b)
    assert describe_change(LevelChange("TTFT P50", "ms", a, b, change, "same", True)) == text


def ttfts(load: Load, values: list[float], repeat: int = 0, invalid: str = "") -> BenchPoint:
    """A point whose requests, one after another, took these TTFTs, then one 20 ms chunk each."""
    out, t = [], 0.0
    for v in values:
        out.append(done(t, t + v + 20, ((t + v, 1), (t + v + 20, 1))))
        t += v + 20
    return dataclasses.replace(point(load, out), repeat=repeat, invalid=invalid)


def test_a_tail_that_moved_within_its_interval_is_the_same() -> None:
    # 100 requests at 100 ms but for their slowest three; B's slowest are 40 % slower than A's. P99 moved
    # +35 %, but from 3 requests of 100: the P99's order-statistic intervals (x97 to x100) overlap.
    a = ttfts(C1, [100.0] * 97 + [200.0, 250.0, 300.0])
    b = ttfts(C1, [100.0] * 97 + [150.0, 350.0, 420.0])
    p99 = next(ch for ch in compare(result(a), result(b), 0.1).points[0].changes if ch.figure == "TTFT P99")
    assert p99.change is not None and p99.change > 0.1
    assert p99.a_interval == (100.0, 300.0) and p99.b_interval == (100.0, 420.0) and p99.verdict == "same"
    # Without the intervals (a figure past the threshold alone) it would have failed the gate.
    assert judge(SPEC["TTFT P99"], p99.a, p99.b, 0.1) == "worse"


def test_repeats_of_a_level_compare_as_one_by_their_medians_and_range() -> None:
    a = [ttfts(C1, [100.0 + k] * 20, repeat=k + 1) for k in range(3)]
    noisy = [ttfts(C1, [v] * 20, repeat=k + 1) for k, v in enumerate((95.0, 100.0, 125.0))]  # one slow repeat
    c = compare(result(*a), result(*noisy), 0.1)
    (pc,) = c.points
    ttft = next(ch for ch in pc.changes if ch.figure == "TTFT P50")
    assert pc.repeats == (3, 3) and (ttft.a, ttft.b) == (101.0, 100.0) and ttft.b_interval == (95.0, 125.0)
    assert (ttft.a_n, ttft.b_n) == ((20, 20, 20), (20, 20, 20))  # the n of each repeat's percentile
    assert c.verdict == "same"
    slower = [ttfts(C1, [130.0 + k] * 20, repeat=k + 1) for k in range(3)]
    c = compare(result(*a), result(*slower), 0.1)
    assert c.verdict == "regressed" and "concurrency 1: TTFT P50 +29.7%" in c.regressions


def test_invalid_repeats_are_left_out_with_a_note_and_none_left_is_not_compared() -> None:
    bad = "dispatch delay P99 900 ms > 50 ms: the client sent late, the load was not the one asked"
    a = result(ttfts(C1, [100.0] * 20, repeat=1), ttfts(C1, [100.0] * 20, repeat=2))
    b = result(ttfts(C1, [100.0] * 20, repeat=1), ttfts(C1, [900.0] * 20, repeat=2, invalid=bad))
    c = compare(a, b, 0.1)
    assert c.verdict == "same" and c.points[0].repeats == (2, 1)
    assert c.notes == (f"run B, concurrency 1 (repeat 2) left out: {bad}",)
    only_invalid = compare(a, result(ttfts(C1, [100.0] * 20, invalid=bad)), 0.1)
    assert only_invalid.verdict == "incomparable" and only_invalid.only_a == ("concurrency 1",)


def test_each_runs_request_values_are_read_and_sorted_once_for_all_their_figures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read: list[Row] = []

    def ttft(r: Row) -> float | None:
        read.append(r)
        return r.ttft_ms

    specs = tuple(dataclasses.replace(SPEC[name], per_request=ttft) for name in ("TTFT P50", "TTFT P99"))
    monkeypatch.setattr(compare_module, "SPECS", specs)
    a, b = ttfts(C1, [100.0] * 30), ttfts(C1, [100.0] * 29 + [400.0])
    (pc,) = compare(result(a), result(b), 0.1).points
    assert len(read) == 60  # each run's 30 rows once, not once per figure
    assert [(c.figure, c.a_interval, c.b_interval) for c in pc.changes] == [
        ("TTFT P50", (100.0, 100.0), (100.0, 100.0)),
        ("TTFT P99", (100.0, 100.0), (100.0, 400.0)),
    ]
