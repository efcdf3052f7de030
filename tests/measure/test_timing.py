"""The raw timeline: stored as JSON with relative times, and events read together are one chunk."""

from __future__ import annotations

import pytest

from tests.measure.test_metrics import MS, timeline
from tokenpace.measure.metrics import compute
from tokenpace.measure.timing import Event, EventKind, Timeline, Usage


def test_timeline_json_round_trip_keeps_relative_times() -> None:
    t = Timeline(
        t_sent_ns=7_000 * MS,
        t_headers_ns=7_005 * MS,
        t_end_ns=7_900 * MS,
        events=(Event(7_100 * MS, EventKind.CONTENT, "é日本"), Event(7_200 * MS, EventKind.DONE)),
        connect_ns=3 * MS,
        usage=Usage(1, 2, None),
        response_id="abc",
    )
    back = Timeline.from_json(t.to_json())
    assert compute(back) == compute(t)
    assert back.events[0].text == "é日本"
    assert back.response_id == "abc"


def test_events_read_together_are_one_chunk() -> None:
    # 250 events in one read, 250 more a second later: 250 tokens/s, not 499.
    burst = [Event(100 * MS, EventKind.CONTENT, " the") for _ in range(250)]
    later = [Event(1100 * MS, EventKind.CONTENT, " the") for _ in range(250)]
    m = compute(timeline(*burst, *later, end_ms=1200))
    assert m.chunk_count == 2
    assert m.first_chunk_tokens == 250
    assert m.output_speed == pytest.approx(250)
    assert m.gap_p50_ms == 1000
