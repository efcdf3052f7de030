"""The one duration parser: what people write is read, and anything else is one short line naming the units."""

from __future__ import annotations

import pytest

from tokenpace.config.durations import LONGEST_S, SHOWN, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("10m", 600),
        ("3h", 10800),
        ("1d", 86400),
        ("1.5h", 5400),
        (" 2 m ", 120),
        ("250ms", 0.25),
        ("366d", LONGEST_S),
    ],
)
def test_a_number_and_a_unit_is_seconds(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_a_bare_number_is_in_the_unit_the_caller_names() -> None:
    assert parse_duration("90", bare="s") == 90
    assert parse_duration("500", bare="ms") == 0.5
    assert parse_duration("2m", bare="ms") == 120  # a unit given wins
    with pytest.raises(ValueError, match="unit ms, s, m, h or d"):
        parse_duration("90")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "m",
        "10x",
        "ten minutes",
        "-5m",
        "+5m",
        "1e3s",
        "nan",
        "nans",
        "infs",
        "inf",
        "0x10s",
        "1_000s",
        "5 m s",
        "٣m",  # an Arabic-Indic three: a digit to Python's float, not to a person writing a config
        "10m; rm -rf /",
        600,
        60.0,
        None,
        True,
        ["10m"],
    ],
)
def test_what_is_not_a_duration_is_refused_naming_the_units(text: object) -> None:
    with pytest.raises(
        ValueError, match=r'is not a duration: give a number above 0 and a unit ms, s, m, h or d, e\.g\. "10m"'
    ) as caught:
        parse_duration(text)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("text", ["0s", "0m", "0.0h", "0ms", "367d", "9" * 400 + "d", "1" + "0" * 310 + "s"])
def test_zero_and_too_long_are_refused_with_the_range(text: str) -> None:
    """400 digits make float() inf, which would be a cadence of never."""
    with pytest.raises(ValueError, match=r"is not a duration from above 0 to 366 days$") as caught:
        parse_duration(text)
    assert len(str(caught.value)) < 2 * SHOWN + 60


def test_the_caller_sets_the_longest() -> None:
    assert parse_duration("7d", longest_s=7 * 86_400) == 7 * 86_400
    with pytest.raises(ValueError, match="from above 0 to 7 days"):
        parse_duration("8d", longest_s=7 * 86_400)
    with pytest.raises(ValueError, match="from above 0 to 60 s"):
        parse_duration("2m", longest_s=60)


def test_a_huge_text_is_quoted_short() -> None:
    text = "1" * 1_000_000 + "x"
    with pytest.raises(ValueError) as caught:
        parse_duration(text)
    assert len(str(caught.value)) < 200 and "…" in str(caught.value)
