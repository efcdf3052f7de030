"""Figures are written one way (board/numbers.py), in the web's templates and the terminal alike."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tokenpace.board.numbers import DASH, ago, dollars, duration, figure_text, interval, percent, when


@pytest.mark.parametrize(
    ("value", "kind", "text"),
    [(None, "num", DASH), (12.345, "num", "12.3"), (1234.5, "num", "1,234"), (99.96, "num", "100.0"),
     (153.4, "ms", "153"), (2500.0, "s", "2.50"), (200000, "int", "200,000")],
)  # fmt: skip
def test_figure(value: float | None, kind: str, text: str) -> None:
    assert figure_text(value, kind) == text  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("share", "text"), [(None, DASH), (1.0, "100%"), (0.0, "0%"), (0.1, "10%"), (0.995, "99.5%"), (0.9996, "100.0%")]
)
def test_percent_keeps_a_decimal_unless_the_share_is_whole(share: float | None, text: str) -> None:
    assert percent(share) == text


def test_times_and_intervals() -> None:
    now = datetime(2025, 1, 31, 12, 0, 5, tzinfo=UTC)
    assert (when(now), when(now, seconds=False), when(None)) == ("2025-01-31 12:00:05", "2025-01-31 12:00", DASH)
    assert ago(now, now.replace(hour=9)) == "3 h ago" and ago(now, now) == "0 s ago"
    assert (interval(600), interval(14400), interval(604800), interval(90)) == ("10 min", "4 h", "7 d", "90 s")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "—"),
        (0, "$0"),
        (0.0575, "$0.0575"),
        (0.000123456, "$0.000123"),
        (0.1, "$0.10"),
        (0.05, "$0.05"),
        (0.0000512, "$0.0000512"),
        (1.5, "$1.50"),
        (1234.5, "$1,234.50"),
    ],
)
def test_dollars_have_cents_or_three_significant_digits(value: float | None, text: str) -> None:
    assert dollars(value) == text


def test_printable_shows_every_control_character_but_tab_and_newline() -> None:
    from tokenpace.board.numbers import printable

    assert printable("a\x1b]52;c;aGk=\x07b") == "a␛]52;c;aGk=␇b"
    assert printable("\x00\r\x7f\x85\x9b\x9f") == "␀␍␡\ufffd\ufffd\ufffd"  # C1 (CSI is U+009B) as U+FFFD
    assert printable("tab\tnew\nline é ␛ 中") == "tab\tnew\nline é ␛ 中"  # the rest unchanged


def test_a_duration_is_whole_in_the_unit_a_reader_expects() -> None:
    assert [duration(s) for s in (45, 480, 5 * 3600, 72 * 3600, 7 * 86400, 14 * 86400)] == [
        "45 s", "8 min", "5 h", "72 h", "7 d", "14 d"
    ]  # fmt: skip
