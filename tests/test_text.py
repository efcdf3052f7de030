"""Text from outside made visible: control characters as pictures, bidi controls as their code points."""

from __future__ import annotations

from tokenpace.text import BIDI_CONTROLS, csv_row, printable, printable_line


def test_printable_shows_bidi_controls_as_code_points() -> None:
    assert printable("abc\u202edef\u2066\u200f") == "abc{U+202E}def{U+2066}{U+200F}"
    assert all(f"{{U+{c:04X}}}" == printable(chr(c)) for c in BIDI_CONTROLS)
    assert printable("عربي עברית") == "عربي עברית"  # right-to-left text itself is left as it is


def test_printable_line_keeps_the_text_on_one_line() -> None:
    assert printable_line("a\nb\tc\r\x1b") == "a␤b␉c␍␛"
    assert printable("a\nb\tc") == "a\nb\tc"  # messages and SVG keep their layout


def test_csv_row_quotes_text_that_opens_a_formula_and_keeps_numbers() -> None:
    row = ["=1+1", "+SUM(1)", "-2", "@A1", "\tx", "\rx", "a=b", -5, -2.5, None, "ok\x1b[2J\x07", "bidi\u202e"]
    assert csv_row(row) == [
        "'=1+1", "'+SUM(1)", "'-2", "'@A1", "'\tx", "␍x", "a=b", -5, -2.5, None, "ok␛[2J␇", "bidi{U+202E}"
    ]  # fmt: skip
