"""Hour-of-week cells: each value in its UTC weekday and hour, medians and shades by their formulas."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from tokenpace.board.heatmap import WEEKDAYS, hour_of_week, shade

MONDAY = datetime(2026, 11, 30, tzinfo=UTC)  # a Monday, 00:00 UTC


def test_each_value_lands_in_its_weekday_and_hour_in_utc() -> None:
    tokyo = timezone(timedelta(hours=9))
    values = [
        (MONDAY + timedelta(hours=9, minutes=5), 100.0),
        (MONDAY + timedelta(hours=9, minutes=50), 300.0),
        (MONDAY + timedelta(days=7, hours=9), 200.0),  # a week later, the same hour: the same cell
        (datetime(2026, 12, 6, 8, 30, tzinfo=tokyo), 50.0),  # Sunday 08:30 in Tokyo is Saturday 23:30 UTC
    ]
    heat = hour_of_week(values)
    assert len(heat.rows) == len(WEEKDAYS) == 7 and all(len(day) == 24 for day in heat.rows)
    monday_nine = heat.rows[0][9]
    assert (monday_nine.median, monday_nine.n) == (200.0, 3)
    saturday = heat.rows[WEEKDAYS.index("Sat")][23]
    assert (saturday.median, saturday.n) == (50.0, 1)
    assert heat.samples == 4 and (heat.lowest, heat.highest) == (50.0, 200.0)
    assert saturday.shade == 0.0 and monday_nine.shade == 1.0
    empty = heat.rows[2][3]
    assert (empty.median, empty.n, empty.shade) == (None, 0, None)


def test_shade_is_the_place_between_lowest_and_highest() -> None:
    assert shade(150.0, 100.0, 200.0) == pytest.approx(0.5)
    assert shade(7.0, 7.0, 7.0) == 1.0  # one figure all week: nothing slower to shade lighter
    heat = hour_of_week([])
    assert heat.samples == 0 and heat.lowest is None and all(c.n == 0 for day in heat.rows for c in day)
