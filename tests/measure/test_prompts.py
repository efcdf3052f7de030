"""Workloads: prompt sizes hit their targets, every prompt is fresh, images and corpora are what they claim."""

from __future__ import annotations

import base64
import io
import itertools
import json
import re
from pathlib import Path

import pytest
from PIL import Image

from tokenpace.config.endpoints import Endpoint
from tokenpace.config.workloads import BUILTIN, DEFAULT, TEXT_TASKS, Workload, workload_from_config
from tokenpace.errors import ConfigError
from tokenpace.measure.clients.openai_chat import OpenAIChat
from tokenpace.measure.corpus import Document, default_corpus, html_text, load_corpus
from tokenpace.measure.image import bar_chart
from tokenpace.measure.prompts import LANGUAGES, Prompt, build_prompt
from tokenpace.measure.tokens import count_tokens

ENDPOINT = Endpoint(provider="p", model="m", base_url="http://127.0.0.1:9/v1")


def text_of(prompt: Prompt) -> str:
    (message,) = prompt.messages
    return message.text


@pytest.mark.parametrize("target", [1_000, 10_000, 100_000])
@pytest.mark.parametrize("task", TEXT_TASKS)
def test_prompt_size_is_within_2_percent_of_the_target(task: str, target: int) -> None:
    workload = Workload("w", 500, input_tokens=target, tasks=(task,))
    for seed in (1, 2):
        prompt = build_prompt(workload, seed)
        assert prompt.task == task
        assert prompt.input_tokens == count_tokens(text_of(prompt))  # the recorded size is the exact count
        assert abs(prompt.input_tokens - target) <= 0.02 * target, (seed, prompt.input_tokens)


@pytest.mark.parametrize("target", [300, 457, 2_345])
def test_odd_sizes_hit_their_targets_too(target: int) -> None:
    workload = Workload("w", 500, input_tokens=target)
    sizes = [build_prompt(workload, seed).input_tokens for seed in range(40)]
    assert all(abs(n - target) <= 0.02 * target for n in sizes), sizes


def test_builtin_workloads() -> None:
    assert set(BUILTIN) == {"1k", "10k", "100k", "vision", "parallel"}
    assert DEFAULT is BUILTIN["1k"]
    assert [BUILTIN[n].input_tokens for n in ("1k", "10k", "100k")] == [1_000, 10_000, 100_000]
    assert BUILTIN["parallel"].concurrency == 10 and BUILTIN["parallel"].input_tokens == 1_000
    assert all(w.max_tokens == 500 for w in BUILTIN.values())
    tasks = {build_prompt(DEFAULT, seed).task for seed in range(40)}  # the seed picks a task from the mix
    assert tasks == set(TEXT_TASKS)


@pytest.mark.parametrize("name", ["1k", "vision", "parallel"])
def test_same_seed_same_prompt(name: str) -> None:
    workload = BUILTIN[name]
    assert build_prompt(workload, 7) == build_prompt(workload, 7)
    assert build_prompt(workload, 7).fingerprint != build_prompt(workload, 8).fingerprint


@pytest.mark.parametrize("name", ["1k", "10k", "vision"])
def test_consecutive_prompts_share_no_prefix(name: str) -> None:
    """Bound: at most 3 characters in common, so not even one 4-hex-digit token of the nonce is shared."""
    workload = BUILTIN[name]
    texts = [text_of(build_prompt(workload, seed)) for seed in range(100, 160)]
    for a, b in itertools.pairwise(texts):
        assert a[:4] != b[:4], (a[:40], b[:40])
    first_documents = {t.split("### Document 1: ", 1)[1].split("\n", 1)[0] for t in texts}
    assert len(first_documents) > 20  # the documents, not only the nonce, change with the seed


def test_workloads_with_the_same_seed_differ() -> None:
    assert text_of(build_prompt(BUILTIN["1k"], 5))[:16] != text_of(build_prompt(BUILTIN["parallel"], 5))[:16]


def test_compare_has_at_least_two_documents() -> None:
    for target in (300, 1_000, 10_000):
        for seed in range(30):
            text = text_of(build_prompt(Workload("c", 500, input_tokens=target, tasks=("compare",)), seed))
            assert "### Document 2: " in text
            second = text.split("### Document 2: ", 1)[1]
            assert len(second.split("\n\n", 1)[1]) > 40  # the second document has text, not just a heading


def test_compare_needs_two_documents_in_the_corpus() -> None:
    with pytest.raises(ConfigError, match="at least 2 documents"):
        build_prompt(Workload("c", 500, tasks=("compare",)), 1, (Document("only", "text " * 500),))


def test_translate_names_a_language() -> None:
    workload = Workload("t", 500, tasks=("translate",))
    named = {
        next(lang for lang in LANGUAGES if f"into {lang}," in text_of(build_prompt(workload, s))) for s in range(40)
    }
    assert len(named) > 5


def test_tasks_ask_for_long_answers() -> None:
    for task in TEXT_TASKS:
        assert "at least " in text_of(build_prompt(Workload("t", 500, tasks=(task,)), 3)).rsplit("\n\n", 1)[1]


def test_small_corpus_is_cycled_in_new_orders() -> None:
    corpus = tuple(Document(f"doc{i}", f"Sentence {i} is here. " * 60) for i in range(4))
    prompt = build_prompt(Workload("w", 500, input_tokens=10_000, tasks=("summarize",)), 1, corpus)
    assert abs(prompt.input_tokens - 10_000) <= 200
    titles = [line.split(": ")[1] for line in text_of(prompt).splitlines() if line.startswith("### Document")]
    rounds = [titles[i : i + 4] for i in range(0, len(titles) - 4, 4)]
    assert all(sorted(r) == ["doc0", "doc1", "doc2", "doc3"] for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1


def test_default_corpus() -> None:
    corpus = default_corpus()
    assert len(corpus) >= 70
    assert sum(count_tokens(d.text) for d in corpus) > 90_000
    titles = {d.title for d in corpus}
    assert 'The "if" statement' in titles and not any(re.match(r"\*+\n", d.text) for d in corpus)  # heading gone


def test_vision_prompt_carries_a_1mp_png_chart() -> None:
    prompt = build_prompt(BUILTIN["vision"], 11)
    (message,) = prompt.messages
    (png,) = message.images
    with Image.open(io.BytesIO(png)) as img:
        assert img.format == "PNG" and img.size == (1200, 840)
    assert prompt.image_pixels == 1200 * 840 and prompt.image_bytes == len(png)
    assert abs(prompt.input_tokens - 1_000) <= 20 and prompt.task == "describe"
    assert "attached image is a chart" in message.text
    assert build_prompt(BUILTIN["vision"], 12).messages[0].images[0] != png  # its values follow the seed

    body = json.loads(OpenAIChat().request(ENDPOINT, prompt).body)
    text_part, image_part = body["messages"][0]["content"]
    assert text_part == {"type": "text", "text": message.text}
    url = image_part["image_url"]["url"]
    assert image_part["type"] == "image_url" and url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == png


def test_chart_values_follow_the_seed() -> None:
    a, b = bar_chart(1, (640, 480)), bar_chart(2, (640, 480))
    assert a.bars != b.bars and 6 <= len(a.bars) <= 10
    assert bar_chart(1, (640, 480)) == a
    with Image.open(io.BytesIO(a.png)) as img:
        assert img.size == (640, 480)


def test_text_prompt_is_sent_as_a_plain_string() -> None:
    prompt = build_prompt(DEFAULT, 1)
    body = json.loads(OpenAIChat().request(ENDPOINT, prompt).body)
    assert body["messages"] == [{"role": "user", "content": text_of(prompt)}]
    assert body["max_tokens"] == 500


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


def test_custom_workload_from_config() -> None:
    w = workload_from_config("long", {"input_tokens": 20_000, "tasks": ["compare", "translate"], "max_tokens": 800})
    assert (w.name, w.input_tokens, w.tasks, w.max_tokens, w.concurrency, w.image) == (
        "long",
        20_000,
        ("compare", "translate"),
        800,
        None,
        None,
    )
    burst = workload_from_config("burst", {"concurrency": 20})
    assert burst.concurrency == 20 and burst.tasks == TEXT_TASKS and burst.input_tokens == 1_000
    pic = workload_from_config("pic", {"image": [640, 480]})
    assert pic.image == (640, 480) and pic.tasks == ("describe",)
    assert build_prompt(pic, 1).image_pixels == 640 * 480


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ({"input_tokens": 10}, "workloads.bad.input_tokens: must be at least 300, got 10"),
        ({"input_tokens": "1k"}, 'workloads.bad.input_tokens: expected a whole number, not "1k"'),
        ({"input_tokens": True}, "workloads.bad.input_tokens: expected a whole number, not true"),
        ({"max_tokens": 0}, "workloads.bad.max_tokens: must be at least 1, got 0"),
        ({"concurrency": 0}, "workloads.bad.concurrency: must be at least 1, got 0"),
        ({"tasks": ["poetry"]}, "workloads.bad.tasks: give one or more of summarize, questions"),
        ({"tasks": []}, "workloads.bad.tasks: give one or more of"),
        ({"tasks": "summarize"}, 'workloads.bad.tasks: expected a list such as ["a", "b"], not "summarize"'),
        ({"image": [640]}, "workloads.bad.image: give 2 items"),
        ({"image": [640, 4]}, "workloads.bad.image: width and height must be 16 to 8192 pixels"),
        ({"image": [640, 480], "tasks": ["summarize"]}, "workloads.bad.tasks: a workload with an image"),
        ({"tasks": ["describe"]}, "workloads.bad.tasks: a workload with an image"),
        ({"input_token": 1000}, 'workloads.bad.input_token: unknown key; did you mean "input_tokens"?'),
    ],
)
def test_bad_workload_config_is_one_line(table: dict[str, object], expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        workload_from_config("bad", table)
    assert str(info.value).startswith(expected) and "\n" not in str(info.value)
