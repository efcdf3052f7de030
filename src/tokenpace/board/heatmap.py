"""An endpoint's speed by hour of the week: providers slow down at their peak hours, and a week shows when.

Each cell is the median over the samples whose start fell in that weekday and hour (UTC), across the weeks
read, with its sample count; a cell without samples has no figure. A shade from the lowest to the highest
median lets the eye find the slow hours; the numbers stay in each cell's title and the JSON.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")  # datetime.weekday()'s order
WEEKS = 4  # how far back a heatmap reads: each cell then holds up to four weeks' samples of its hour


@dataclass(frozen=True, slots=True)
class HourCell:
    """One hour of the week: the median of its values, how many there were, and its shade in 0..1."""

    median: float | None
    n: int
    shade: float | None  # (median - lowest) / (highest - lowest) over the week's cells; None: no figure


@dataclass(frozen=True, slots=True)
class Heatmap:
    """Seven rows (Monday first) of 24 cells (hour 0 first), UTC, and the range the shades span."""

    rows: tuple[tuple[HourCell, ...], ...]
    lowest: float | None
    highest: float | None
    samples: int


def shade(value: float, lowest: float, highest: float) -> float:
    """Shade = (value - lowest) / (highest - lowest), 1 when every cell holds the same median."""
    return 1.0 if highest <= lowest else (value - lowest) / (highest - lowest)


def hour_of_week(values: Iterable[tuple[datetime, float]]) -> Heatmap:
    """The median per (weekday, hour) of timestamped values (aware datetimes, read in UTC)."""
    cells: list[list[list[float]]] = [[[] for _ in range(24)] for _ in WEEKDAYS]
    for at, value in values:
        utc = at.utctimetuple()
        cells[utc.tm_wday][utc.tm_hour].append(value)
    medians = [[statistics.median(c) if c else None for c in day] for day in cells]
    known = [m for day in medians for m in day if m is not None]
    lowest, highest = (min(known), max(known)) if known else (None, None)

    def cell(values: Sequence[float], median: float | None) -> HourCell:
        if median is None or lowest is None or highest is None:
            return HourCell(None, 0, None)
        return HourCell(median, len(values), shade(median, lowest, highest))

    rows = tuple(
        tuple(cell(c, m) for c, m in zip(day, ms, strict=True)) for day, ms in zip(cells, medians, strict=True)
    )
    return Heatmap(rows, lowest, highest, sum(len(c) for day in cells for c in day))
