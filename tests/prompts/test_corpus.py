"""The corpus prompts are built from: the built-in topics, a user's folder, HTML made text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.prompts.test_prompt import text_of
from tokenpace.config.workloads import Workload
from tokenpace.errors import ConfigError
from tokenpace.prompts.corpus import Document, default_corpus, html_text, load_corpus
from tokenpace.prompts.prompt import build_prompt
from tokenpace.prompts.tokens import count_tokens


def test_default_corpus() -> None:
    corpus = default_corpus()
    assert len(corpus) >= 70
    assert sum(count_tokens(d.text) for d in corpus) > 90_000
    titles = {d.title for d in corpus}
    assert 'The "if" statement' in titles and not any(re.match(r"\*+\n", d.text) for d in corpus)  # heading gone


def test_user_corpus(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Plain text about tides.\n\nSecond paragraph.", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("# Bridges\n\nHow bridges carry load.", encoding="utf-8")
    (tmp_path / "c.html").write_text(
        "<html><head><title>Chess  origins</title><style>p { color: red }</style>"
        "<script>var x = '<p>hidden</p>';</script></head>"
        "<body><h1>Chess</h1><p>Played in <b>India</b> &amp; Persia.</p><p>Spread west.</p></body></html>",
        encoding="utf-8",
    )
    (tmp_path / "empty.txt").write_text("  \n", encoding="utf-8")
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    corpus = load_corpus(tmp_path)
    assert [d.title for d in corpus] == ["a", "Chess origins", "b"]
    html = corpus[1].text
    assert html == "Chess\n\nPlayed in India & Persia.\n\nSpread west."
    prompt = build_prompt(Workload("w", 500, input_tokens=1_000, tasks=("compare",)), 3, corpus)
    assert "How bridges carry load." in text_of(prompt) and "color" not in text_of(prompt)
    assert abs(prompt.input_tokens - 1_000) <= 20


def test_html_text_drops_scripts_and_styles() -> None:
    title, text = html_text("<div>a<script>b</script><style>c</style><noscript>d</noscript>e</div><p>f</p>")
    assert (title, text) == ("", "ae\n\nf")


@pytest.mark.parametrize("setup", ["missing", "empty", "no-text"])
def test_corpus_folder_without_documents_is_a_config_error(tmp_path: Path, setup: str) -> None:
    folder = tmp_path / "corpus"
    if setup != "missing":
        folder.mkdir()
    if setup == "no-text":
        (folder / "notes.pdf").write_bytes(b"%PDF")
        (folder / "blank.md").write_text("\n\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_corpus(folder)
    message = str(info.value)
    assert message.startswith(f"{folder}: ") and "\n" not in message and ".txt" in message


def test_tokenize_reads_every_document_once_so_prompts_later_tokenize_nothing() -> None:
    from tokenpace.prompts import corpus

    docs = tuple(Document(f"d{i}", f"A document of its own, number {i}. " * 40) for i in range(5))
    before = corpus._offsets.cache_info()
    corpus.tokenize(docs)
    after = corpus._offsets.cache_info()
    assert after.misses - before.misses == 5  # each document tokenized now
    build_prompt(Workload("w", 50, input_tokens=400), 1, docs)
    assert corpus._offsets.cache_info().misses == after.misses  # and never again for a prompt
