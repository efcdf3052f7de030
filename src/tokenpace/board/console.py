"""The terminal every command writes to: rich's Console, with no control character of the text let through.

Names and messages come from config files, stores and servers; a raw ESC among them would be obeyed by the
reader's terminal (OSC 52 writes the clipboard, OSC 0 retitles the window, CSI rewrites what is shown). This
Console cleans every string it renders (text.printable) before rich parses its markup. :func:`shown` also
keeps the text on its line (a newline in a model name would forge a line of the output) and escapes markup,
for text that must not style itself: ``[link=...]`` would make rich write an OSC 8 hyperlink of the text's own
choosing.
"""

from __future__ import annotations

import logging
from typing import Any

import rich.console
from rich.markup import escape
from rich.text import Text

from tokenpace.text import printable, printable_line


class Console(rich.console.Console):
    """rich's Console; every string printed, in a table cell, title or caption, is cleaned first, and no
    ``:name:`` becomes an emoji: OpenRouter's free models end in ``:free``, so "llama:free: 3 samples" read
    "llama🆓 3 samples"."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("emoji", False)
        super().__init__(*args, **kwargs)

    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(printable(text), **options)


def shown(text: str) -> str:
    """Untrusted text to interpolate into markup: cleaned, on one line, and its square brackets escaped."""
    return escape(printable_line(text))


class Formatter(logging.Formatter):
    """Log lines as the Console prints text: a server's error message in a log line is cleaned too."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def log_lines() -> None:
    """tokenpace's log on stderr, a line each with its time and cleaned: how serve and agent show their work."""
    handler = logging.StreamHandler()
    handler.setFormatter(Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    logging.getLogger("tokenpace").addHandler(handler)
    logging.getLogger("tokenpace").setLevel(logging.INFO)
