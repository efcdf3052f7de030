"""The text prompts are made of: a corpus of documents, built in or read from a folder.

The built-in corpus is the long-form reference topics that CPython ships in ``pydoc_data.topics`` (the text
``help("if")`` shows): 79 documents and about 106,000 o200k_base tokens on Python 3.11 (the set varies a
little between Python versions), from 51 to 14,600 tokens each. It is part of CPython's documentation, under
the Python Software Foundation License, and it is in every Python install, so prompts need no download and
work offline. Real prose with code, like much of what APIs are sent.

A user corpus is a folder of ``.txt``, ``.md`` and ``.html`` files (``load_corpus``); HTML is reduced to its
text with the standard library's ``html.parser``.
"""

from __future__ import annotations

import array
import bisect
import functools
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from tokenpace.errors import ConfigError
from tokenpace.prompts import tokens

SUFFIXES = (".txt", ".md", ".html", ".htm")

_HEADING = re.compile(r"\A([^\n]+)\n\*+\n+")  # a pydoc topic starts with its title underlined by asterisks
_BLOCK_TAG = re.compile(  # elements that start a new paragraph
    r"address|article|aside|blockquote|br|d[dlt]|div|fig(caption|ure)|footer|form|h[1-6r]|header|li|main|nav|ol|p|pre"
    r"|section|t[dhr]|table|ul"
)
_SKIPPED_TAGS = frozenset({"script", "style", "template", "noscript"})
_BOUNDARIES = ("\n\n", ". ", ".\n", "? ", "! ")  # paragraph first, then sentence
MAX_CORPUS_BYTES = 16 << 20
MAX_CORPUS_FILES = 10_000
TOKENIZE_CHARS = 1 << 16


@dataclass(frozen=True, slots=True)
class Document:
    title: str
    text: str


Corpus = tuple[Document, ...]


@functools.cache
def default_corpus() -> Corpus:
    """CPython's reference topics, title from each topic's heading (the topic's key where it has none)."""
    from pydoc_data.topics import topics

    docs = []
    for key, raw in sorted(topics.items()):
        match = _HEADING.match(raw)
        title, text = (match.group(1), raw[match.end() :]) if match else (key, raw)
        docs.append(Document(title.strip(), text.strip("\n").rstrip()))  # keep a first line's indent
    return tuple(docs)


class _TextOf(HTMLParser):
    """Collects an HTML page's visible text and ``<title>``; block elements become paragraph breaks."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.title = ""
        self._skipping = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED_TAGS:
            self._skipping += 1
        elif tag == "title":
            self._in_title = True
        elif _BLOCK_TAG.fullmatch(tag):
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED_TAGS:
            self._skipping = max(0, self._skipping - 1)
        elif tag == "title":
            self._in_title = False
        elif _BLOCK_TAG.fullmatch(tag):
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        if self._in_title:
            self.title += data
        else:
            self.parts.append(re.sub(r"\s+", " ", data))


def html_text(html: str) -> tuple[str, str]:
    """(title, text) of an HTML page: script and style dropped, one blank line between blocks."""
    parser = _TextOf()
    parser.feed(html)
    parser.close()
    text = re.sub(r" *\n[\n ]*", "\n\n", "".join(parser.parts))
    return " ".join(parser.title.split()), text.strip()


def load_corpus(path: str | Path) -> Corpus:
    """Every .txt, .md and .html file under ``path`` (sorted by path, empty files skipped) as a document.

    At most MAX_CORPUS_FILES files and MAX_CORPUS_BYTES in all: a corpus is tokenized whole, held for the
    run, and a few MB of text already make prompts that never repeat.
    """
    root = Path(path)
    if not root.is_dir():
        raise ConfigError(f"{root}: corpus folder not found; give a folder of .txt, .md or .html files")
    found = []
    for p in root.rglob("*"):
        if p.suffix.lower() in SUFFIXES and p.is_file():
            found.append(p)
            if len(found) > MAX_CORPUS_FILES:
                raise ConfigError(f"{root}: more than {MAX_CORPUS_FILES} text files; keep fewer in the corpus")
    docs, left = [], MAX_CORPUS_BYTES
    for file in sorted(found):
        with file.open("rb") as f:  # read no more than what is left: a file may be huge, or still growing
            data = f.read(left + 1)
        left -= len(data)
        if left < 0:
            raise ConfigError(f"{root}: over the {MAX_CORPUS_BYTES}-byte limit of a corpus (at {file})")
        raw = data.decode("utf-8", errors="replace")
        title, text = html_text(raw) if file.suffix.lower() in (".html", ".htm") else ("", raw.strip())
        if text:
            docs.append(Document(title or file.stem, text))
    if not docs:
        raise ConfigError(f"{root}: no text in .txt, .md or .html files there; add some or use the built-in corpus")
    return tuple(docs)


def token_starts(text: str) -> array.array[int]:
    """Character offset of the start of each o200k_base token of ``text``, then ``len(text)`` (4 bytes each).

    Encoded a piece of about TOKENIZE_CHARS at a time, cut before whitespace: a whole 16 MB text encoded at
    once holds its tokens as Python ints (~150 MB), and cannot be interrupted.
    """
    enc = tokens.encoding()
    out = array.array("I")
    start = 0
    while start < len(text):
        end = min(len(text), start + TOKENIZE_CHARS)
        if end < len(text):
            cut = max(text.rfind("\n\n", start, end), text.rfind(" ", start, end))
            end = cut if cut > start else end  # the whitespace starts the next piece, as it starts a token
        _, starts = enc.decode_with_offsets(enc.encode(text[start:end], disallowed_special=()))
        out.extend(start + s for s in starts)
        start = end
    out.append(len(text))
    return out


@functools.cache
def _offsets(text: str) -> array.array[int]:
    """:func:`token_starts`, once per text for the process."""
    return token_starts(text)


def tokenize(corpus: Corpus) -> None:
    """Tokenize every document now (cached for the process), so that no prompt built later pays for it."""
    for doc in corpus:
        _offsets(doc.text)


def token_length(text: str) -> int:
    """o200k_base tokens in ``text`` (cached: a corpus is tokenized once per process)."""
    return len(_offsets(text)) - 1


def head(text: str, max_tokens: int, slack: int) -> tuple[str, int]:
    """The start of ``text`` with at most ``max_tokens`` tokens, and its token count.

    Cut at the last paragraph end, else sentence end, that loses at most ``slack`` tokens; else exactly at
    ``max_tokens`` tokens. Counts are of ``text``'s own tokenization, so a cut piece counts within a token.
    """
    offsets = _offsets(text)
    n = len(offsets) - 1
    if max_tokens >= n:
        return text, n
    if max_tokens <= 0:
        return "", 0
    end = offsets[max_tokens]
    floor = offsets[max(0, max_tokens - slack)]
    for mark in _BOUNDARIES:
        cut = text.rfind(mark, floor, end)
        if cut > 0:
            end = cut + len(mark.rstrip())
            break
    return text[:end].rstrip(), bisect.bisect_left(offsets, end)
