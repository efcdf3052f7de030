"""Metric formulas on hand-built timelines, where the right answer is known."""

from __future__ import annotations

import pytest

from tokenpace.measure.metrics import (
    Metrics,
    compute,
    e2e500,
    e2e_n_tokens_ms,
    itl_ms,
    output_speed,
    percentile,
    thinking_time_ms,
    time_to_n_tokens_ms,
    ttft_ms,
)
from tokenpace.measure.timing import Event, EventKind, Timeline, Usage
from tokenpace.prompts.tokens import count_tokens

MS = 1_000_000


def timeline(*events: Event, usage: Usage | None = None, end_ms: int = 1000) -> Timeline:
    return Timeline(t_sent_ns=0, t_headers_ns=5 * MS, t_end_ns=end_ms * MS, events=events, usage=usage)


def test_percentile_interpolates_like_numpy() -> None:
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([10], 95) == 10
    assert percentile([0, 10], 95) == pytest.approx(9.5)
    assert percentile([], 50) is None


def test_formulas() -> None:
    assert ttft_ms(1 * MS, 251 * MS) == 250
    assert output_speed(101, 1, 0, 2_000 * MS) == 50
    assert output_speed(10, 1, 5, 5) is None
    assert time_to_n_tokens_ms(200, 50) == 2200
    assert itl_ms([0, 10 * MS, 30 * MS]) == [10, 20]


def test_end_to_end_for_500_tokens_formulas() -> None:
    assert thinking_time_ms(200, 1_700) == 1_500
    assert e2e_n_tokens_ms(200, 1_500, 50) == 200 + 1_500 + 10_000
    assert e2e_n_tokens_ms(200, 0, 50, n=100) == time_to_n_tokens_ms(200, 50)  # no thinking: AA's time to n
    assert e2e500(200, 1_700, 50) == 11_700
    assert e2e500(200, 200, 100) == 5_200  # the first token was the answer's: no thinking
    # Unknown where the stream cannot give it, and no speed above 0 is none (the rollups' SQL says the same).
    assert e2e500(None, 1_700, 50) is None and e2e500(200, None, 50) is None and e2e500(200, 1_700, None) is None
    assert e2e500(200, 1_700, 0.0) is None


def test_thinking_and_end_to_end_for_500_tokens_of_a_reasoning_stream() -> None:
    t = timeline(
        Event(100 * MS, EventKind.REASONING, " let"),
        Event(300 * MS, EventKind.REASONING, " me think"),
        Event(600 * MS, EventKind.CONTENT, " the answer"),
        Event(1_100 * MS, EventKind.CONTENT, " is here"),
    )
    m = compute(t)
    assert m.output_speed is not None and m.output_speed == (m.output_tokens - 1) / 1.0
    assert m.thinking_ms == 500
    assert m.e2e500_ms == 100 + 500 + 500 / m.output_speed * 1000
    plain = compute(timeline(Event(100 * MS, EventKind.CONTENT, " the"), Event(600 * MS, EventKind.CONTENT, " end")))
    assert plain.thinking_ms == 0 and plain.e2e500_ms == 100 + 500 / 2 * 1000
    only_thought = compute(
        timeline(Event(100 * MS, EventKind.REASONING, " hm"), Event(600 * MS, EventKind.REASONING, " ok"))
    )
    assert only_thought.thinking_ms is None and only_thought.e2e500_ms is None  # no answer token: no figure
    assert Metrics().thinking_ms is None and Metrics().e2e500_ms is None


def test_role_only_first_event_is_not_the_first_token() -> None:
    t = timeline(
        Event(10 * MS, EventKind.OTHER),
        Event(12 * MS, EventKind.CONTENT, ""),
        Event(200 * MS, EventKind.CONTENT, " the"),
        Event(300 * MS, EventKind.CONTENT, " speed"),
    )
    m = compute(t)
    assert m.ttft_ms == 200
    assert m.chunk_count == 2
    assert m.ttfb_ms == 5


def test_output_speed_excludes_first_chunk_tokens_and_counts_whole_text() -> None:
    first, rest = " the quick brown fox", " jumps over the lazy dog" * 10
    t = timeline(Event(100 * MS, EventKind.CONTENT, first), Event(1100 * MS, EventKind.CONTENT, rest))
    m = compute(t)
    total = count_tokens(first) + count_tokens(rest)
    assert m.output_tokens == total
    assert m.first_chunk_tokens == count_tokens(first)
    assert m.output_speed == pytest.approx((total - count_tokens(first)) / 1.0)
    assert m.output_speed is not None
    assert m.t100_ms == pytest.approx(100 + 100 / m.output_speed * 1000)


def test_reasoning_counts_and_time_to_first_answer_token() -> None:
    t = timeline(
        Event(50 * MS, EventKind.REASONING, " let me think"),
        Event(80 * MS, EventKind.REASONING, " about it"),
        Event(400 * MS, EventKind.CONTENT, " answer"),
        Event(500 * MS, EventKind.CONTENT, " here"),
    )
    m = compute(t)
    assert m.ttft_ms == 50
    assert m.ttfat_ms == 400
    assert m.reasoning_tokens == count_tokens(" let me think about it")
    assert m.output_tokens == m.reasoning_tokens + count_tokens(" answer here")


def test_single_token_event_has_no_output_speed() -> None:
    m = compute(timeline(Event(100 * MS, EventKind.CONTENT, " everything at once")))
    assert m.ttft_ms == 100
    assert m.output_speed is None
    assert m.t100_ms is None


def test_no_tokens_leaves_token_figures_missing() -> None:
    m = compute(timeline(Event(10 * MS, EventKind.OTHER)))
    assert m.ttft_ms is None and m.output_speed is None and m.output_tokens == 0
    assert m.e2e_ms == 1000


def test_provider_usage_is_kept_beside_o200k() -> None:
    t = timeline(
        Event(100 * MS, EventKind.CONTENT, " the"),
        Event(200 * MS, EventKind.CONTENT, " the"),
        usage=Usage(input_tokens=12, output_tokens=5),
    )
    m = compute(t)
    assert (m.provider_input_tokens, m.provider_output_tokens, m.token_diff) == (12, 5, 2 - 5)


def test_gaps_between_token_events() -> None:
    t = timeline(*(Event(ms * MS, EventKind.CONTENT, " x") for ms in (100, 110, 120, 200)))
    m = compute(t)
    assert m.gap_max_ms == 80
    assert m.gap_p50_ms == 10
