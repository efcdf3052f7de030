"""The terminal's load-test table and comparison: every figure the brief lists, in plain text."""

from __future__ import annotations

import dataclasses
import io

from rich.console import Console

from tests.loadkit import point, result, steady
from tokenpace.board.compare import compare
from tokenpace.board.loadtable import (
    fitting_table,
    print_comparison,
    print_result,
    saturation_line,
    tail_line,
    verdict_line,
)
from tokenpace.board.numbers import rate
from tokenpace.config.traffic import Load, Slo
from tokenpace.load.results import Bracket

C1, R2 = Load(concurrency=1), Load(concurrency=None, rate=2.0)


def shown(draw: object, *args: object) -> str:
    out = io.StringIO()
    draw(Console(file=out, width=250, color_system=None), *args)  # type: ignore[operator]
    return out.getvalue()


def test_a_row_per_load_level_with_its_figures() -> None:
    r = result(point(C1, steady(10, 100, 20, failed=2)), point(R2, steady(4, 300, 40)))
    text = shown(print_result, r)
    header = ("load", "ok/", "all", "Rate", "req/s", "Throughput", "tok/s", "TTFT", "TPOT", "ITL", "E2E", "P50", "P99")
    assert all(h in text for h in (*header, "In", "flight", "Dispatch", "in ms"))
    assert "TPOT: ms per o200k token  ·  Throughput: over the whole run, o200k tok/s" in text  # what they leave out
    assert "Goodput" not in text and "SLO" not in text and "client" not in text  # columns only when they say something
    line = next(t for t in text.splitlines() if "concurrency 1" in t and "8/10" in t)
    assert " 100 " in line and " 20 " in line and " 280 " in line  # TTFT, TPOT and E2E in ms
    assert "rate 2/s (poisson)" in text
    assert "concurrency 1: errors rate_limited 2" in text


def test_token_counts_are_named_and_the_servers_own_get_columns_when_its_usage_reports_them() -> None:
    plain = shown(print_result, result(point(C1, steady(10, 100, 20))))
    assert "o200k" in plain and "server" not in plain  # no usage: no server columns
    # 10 o200k tokens a request, 19 by the server's count: TPOT 180 ms over 9 (20 ms) and over 18 (10 ms);
    # 100 and 190 tokens in 2.8 s.
    text = shown(print_result, result(point(C1, steady(10, 100, 20, server_tokens=19))))
    header = text.split("concurrency 1")[0]
    assert header.count("server") == 2  # under output throughput's and TPOT P50's
    assert "TPOT server: ms per server token  ·  Throughput server: over the whole run, server tok/s" in text
    line = next(t for t in text.splitlines() if "concurrency 1" in t)
    assert line.split()[4:11] == ["35.7", "67.9", "100", "100", "20", "20", "10"]
    out = io.StringIO()
    console = Console(file=out, width=80, color_system=None)
    console.print(fitting_table(console, result(point(C1, steady(10, 100, 20, server_tokens=19)))))
    assert "…" not in out.getvalue() and max(map(len, out.getvalue().splitlines())) <= 80


def test_slo_columns_tags_client_bound_and_saturation() -> None:
    slo = Slo(ttft_ms=150)
    tagged = steady(3, 100, 20, tag="prefix-hit") + steady(3, 200, 20, tag="prefix-miss")
    p = dataclasses.replace(point(C1, tagged, slo), client_bound=True)
    text = shown(print_result, dataclasses.replace(result(p, slo=slo), saturation=3.5))
    assert "SLO ttft<=150ms" in text and "Goodput" in text and "50%" in text
    assert "prefix-hit: 3/3 ok  TTFT P50 100 ms" in text and "prefix-miss: 3/3 ok  TTFT P50 200 ms" in text
    assert "bound" in text and "client bound:" in text
    assert "saturation: 3.50 req/s offered" in text


def test_rates_keep_two_decimals_where_sweeps_start() -> None:
    assert (rate(0.25), rate(12.345), rate(None)) == ("0.25", "12.3", "—")


def test_the_comparison_table_and_its_verdict_line() -> None:
    a = result(point(C1, steady(10, 100, 20)), point(Load(concurrency=4), steady(10, 100, 20)))
    b = result(point(C1, steady(10, 200, 20)), point(R2, steady(10, 100, 20)))
    c = compare(a, b, 0.1)
    text = shown(print_comparison, c)
    assert all(h in text for h in ("figure", "A", "B", "change", "verdict"))
    ttft = next(t for t in text.splitlines() if "TTFT P50" in t)
    assert "100 ms" in ttft and "200 ms" in ttft and "+100.0%" in ttft and "worse" in ttft
    assert "ITL P99 (not in the verdict)" in text and "20 ms/token" in text  # TPOT: per token
    assert "only in run A (not compared): concurrency 4" in text and "only in run B (not compared): rate 2/s" in text
    last = text.rstrip().splitlines()[-1]
    assert last.startswith("regressed beyond 10%: concurrency 1: Request rate -26.3%, Output throughput -26.3%, TTFT")


def test_verdict_lines() -> None:
    same = compare(result(point(C1, steady(5, 100, 20))), result(point(C1, steady(5, 100, 20))), 0.125)
    assert verdict_line(same) == "same: no headline figure moved beyond 12.5% and outside its run-to-run noise"
    better = compare(result(point(C1, steady(5, 200, 20))), result(point(C1, steady(5, 100, 20))), 0.1)
    assert "improved" in verdict_line(better)
    none = compare(result(point(C1, steady(5, 100, 20))), result(point(R2, steady(5, 100, 20))), 0.1)
    assert "the runs share no load level" in verdict_line(none)


def test_an_80_column_terminal_drops_the_tails_rather_than_cut_numbers() -> None:
    slo = Slo(ttft_ms=150)
    r = result(point(Load(concurrency=None, rate=5.73), steady(100, 100, 20), slo), slo=slo)
    out = io.StringIO()
    print_result(Console(file=out, width=80, color_system=None), r)
    table = out.getvalue().split("\n")
    assert "…" not in "".join(table) and max(map(len, table)) <= 80
    assert "100/100" in out.getvalue() and "flight" not in out.getvalue() and "Goodput" in out.getvalue()


def test_at_80_columns_every_header_and_number_is_whole_with_an_slo_the_client_column_and_long_levels() -> None:
    # The table: an SLO's two columns, the client's, a repeat's label and a four-digit TTFT (the level
    # past saturation) made it 85 columns wide, and rich cut the last header to "clie…" and the TTFT to "1,0…".
    slo = Slo(ttft_ms=150)
    bound = dataclasses.replace(point(C1, steady(100, 100, 20), slo), client_bound=True)
    gamma = Load(concurrency=None, rate=22.8, arrival="gamma", burstiness=0.5)
    late = dataclasses.replace(point(gamma, steady(100, 1000, 20), slo), repeat=2, invalid="sent late")
    out = io.StringIO()
    console = Console(file=out, width=80, color_system=None)
    console.print(fitting_table(console, result(bound, late, slo=slo)))  # the lines under it wrap as prose
    text = out.getvalue()
    assert "…" not in text and max(map(len, text.splitlines())) <= 80, text
    for header in ("load", "all", "req/s", "TTFT", "P50", "Goodput", "SLO", "met", "client"):
        assert header in text, (header, text)
    assert "1,000" in text and "invalid" in text and "rate 22.8/s (gamma 0.5) #2" in text


def test_the_saturation_line_names_the_bracket_and_why_the_sweep_stopped() -> None:
    auto = dataclasses.replace(result(point(C1, steady(5, 100, 20))), sweep="auto")
    found = Bracket(21.8, 22.8, "the bracket is within 5%")
    text = shown(print_result, dataclasses.replace(auto, saturation=21.8, bracket=found))
    said = "saturation between 21.8 and 22.8 req/s offered: kept up with 21.8, not with 22.8"
    assert said + " (stopped: the bracket is within 5%)" in text
    never = dataclasses.replace(auto, bracket=Bracket(640.0, None, "the limit of 16 levels"))
    assert saturation_line(never) == (
        "no saturation found: kept up with every rate up to 640 req/s (stopped: the limit of 16 levels)"
    )
    assert saturation_line(dataclasses.replace(auto, bracket=Bracket(None, None, "nothing succeeded"))) == (
        "no saturation rate: nothing succeeded"
    )
    assert saturation_line(dataclasses.replace(auto, saturation=16.1)) == "saturation: 16.1 req/s offered"  # older
    assert saturation_line(result(point(C1, steady(5, 100, 20)))) is None


def test_each_levels_p99s_carry_their_n_and_mlperfs_early_stopping_estimate() -> None:
    few, many = point(C1, steady(10, 100, 20, failed=2)), point(Load(concurrency=2), steady(700, 100, 20))
    text = " ".join(shown(print_result, result(few, many)).split())  # the line wraps to the terminal
    assert "concurrency 1 P99: TTFT 100 ms (n=8; early stopping at 99%: too few, P99 needs 662)" in text
    assert "concurrency 2 P99: TTFT 100 ms (n=700; early stopping at 99%: P99 ≤ 100 ms)" in text
    assert "E2E 280 ms (n=700; early stopping at 99%: P99 ≤ 280 ms)" in text
    below = point(C1, [d for i, d in enumerate(steady(300, 100, 20)) if i < 300])
    assert "TTFT 100 ms (n=300; early stopping at 99%: P97.8 ≤ 100 ms, P99 needs 662)" in tail_line(below)


def test_a_comparison_says_each_percentiles_n_in_each_run() -> None:
    a = result(point(C1, steady(10, 100, 20)))
    b = result(point(C1, steady(14, 100, 20, failed=2)))
    lines = shown(print_comparison, compare(a, b, 0.1)).splitlines()
    below = {name: lines[next(i for i, line in enumerate(lines) if name in line) + 1] for name in
             ("TTFT P99", "ITL P99", "Request rate")}  # fmt: skip
    assert "100-100, n=10" in below["TTFT P99"] and "100-100, n=12" in below["TTFT P99"]  # A's and B's ok requests
    assert "n=90" in below["ITL P99"] and "n=108" in below["ITL P99"]  # ITL's: their gaps
    assert "n=" not in below["Request rate"]  # no percentile, no n
