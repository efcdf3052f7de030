"""Text from outside shown safely: control characters and bidi controls made visible, once, for every output.

Names and messages come from config files, stores and servers; a raw ESC among them would be obeyed by a
reader's terminal (OSC 52 writes the clipboard, OSC 0 retitles the window, CSI rewrites the screen), is an
invalid character in a page, and a bidi override (U+202E) reorders what follows it, so that a name reads as
another. The terminal, the pages, `/metrics` and the CSV exports all show such text through :func:`printable`;
a name that must stay on its line (a table cell, a line of `tokenpace run`) through :func:`printable_line`.

Every CSV tokenpace writes (``run --output``, ``/samples.csv`` and ``/leaderboard.csv``) goes through
:func:`csv_row`: a name or an error message is a server's or a config's text, and a spreadsheet runs a cell that
begins with ``=``, ``+``, ``-`` or ``@`` as a formula (``=cmd|' /C calc'!A0`` starts a program). Such a text
cell gets a leading single quote, OWASP's rule for CSV injection; numbers stay numbers. Control characters are
shown as the pages show them (:func:`printable`): a raw ESC reaches whoever cats the file.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Bidi controls: embeddings and overrides (U+202A-U+202E), isolates (U+2066-U+2069), and the marks U+200E/F.
BIDI_CONTROLS = (0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))

# C0 controls but tab and newline, and DEL, as their Unicode control pictures (ESC reads "␛"); C1 controls
# (U+0080-U+009F, of which U+009B is a one-character CSI) as U+FFFD; bidi controls as their code point in
# braces ("{U+202E}": not markup to HTML, whose Markup is cleaned too, nor to rich, whose tags are brackets).
# Tab and newline stay: they move the cursor no further than the text's own layout, and error messages and
# SVG hold them.
_PICTURES: dict[int, int | str] = {c: 0x2400 + c for c in range(0x20) if chr(c) not in "\t\n"}
_PICTURES |= {0x7F: 0x2421} | dict.fromkeys(range(0x80, 0xA0), 0xFFFD)
_PICTURES |= {c: f"{{U+{c:04X}}}" for c in BIDI_CONTROLS}
_LINE_PICTURES = _PICTURES | {ord("\t"): 0x2409, ord("\n"): 0x2424}  # tab "␉", newline "␤"


def printable(text: str) -> str:
    """``text`` with every control character that could drive a terminal (or break a page) made visible."""
    return text.translate(_PICTURES)


def printable_line(text: str) -> str:
    """``text`` as :func:`printable` shows it, and on one line: its tabs and newlines shown as "␉" and "␤"."""
    return text.translate(_LINE_PICTURES)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # OWASP: what a spreadsheet reads as the start of a formula


def csv_row(values: Iterable[Any]) -> list[Any]:
    """A row as a spreadsheet may open it: text cells cleaned of control characters, and a formula's start quoted."""
    return [_spreadsheet_text(v) if isinstance(v, str) else v for v in values]


def _spreadsheet_text(text: str) -> str:
    text = printable(text)  # CR becomes "␍" here; a leading tab stays, and is quoted below
    return "'" + text if text.startswith(FORMULA_STARTS) else text
