"""Workloads: prompt sizes hit their targets, every prompt is fresh, images and corpora are what they claim."""

from __future__ import annotations

import base64
import dataclasses
import io
import itertools
import json
import re

import pytest
from PIL import Image

from tokenpace.clients.openai_chat import OpenAIChat
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.workloads import BUILTIN, DEFAULT, TEXT_TASKS, Workload
from tokenpace.errors import ConfigError
from tokenpace.prompts import canary
from tokenpace.prompts.corpus import Document
from tokenpace.prompts.image import bar_chart
from tokenpace.prompts.prompt import LANGUAGES, Prompt, build_prompt
from tokenpace.prompts.tokens import count_tokens

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


def test_no_task_asks_for_the_documents_back() -> None:
    """Issue 31: a faithful answer copies little of its prompt, so a provider drafting tokens from the prompt
    (measure/copying.py) gains nothing here that other prompts would not give it."""
    tasks = {t: text_of(build_prompt(Workload("t", 500, tasks=(t,)), 3)).rsplit("\n\n", 2)[1] for t in TEXT_TASKS}
    assert not any("as they are" in text or "Keep code" in text for text in tasks.values())
    assert "in your own words" in tasks["summarize"].lower() and "do not quote" in tasks["summarize"]
    assert "in your own words, without quoting" in tasks["questions"]
    assert "Leave code blocks and grammar rules out" in tasks["translate"]


def asked_words(prompt: Prompt) -> int:
    """The N of "at least N words" in the prompt's task (its paragraph before the canary's last line)."""
    task = text_of(prompt).rsplit("\n\n", 2)[1]
    (found,) = re.findall(r"at least ([\d,]+) words", task)
    return int(found.replace(",", ""))


@pytest.mark.parametrize("name", list(BUILTIN))
def test_every_task_asks_for_more_than_the_cap_lets_through(name: str) -> None:
    """At ~0.75 English words an o200k token, max_tokens tokens hold ~0.75 x max_tokens words: each task asks for
    at least max_tokens words, so no answer ends before the cap (the old fixed "500 words" did at 1,000+)."""
    workload = BUILTIN[name]
    for task in workload.tasks:
        prompt = build_prompt(dataclasses.replace(workload, input_tokens=1_000, tasks=(task,), paired=False), 3)
        assert asked_words(prompt) >= workload.max_tokens, (task, asked_words(prompt))


def test_the_asked_length_follows_a_workloads_own_cap() -> None:
    for cap in (64, 3_000, 20_000):
        for task in TEXT_TASKS:
            assert asked_words(build_prompt(Workload("t", cap, tasks=(task,)), 3)) >= cap


@pytest.mark.parametrize("name", ["1k", "vision", "parallel"])
def test_every_fresh_prompt_ends_with_the_canary_of_its_own_nonce(name: str) -> None:
    for seed in range(5):
        prompt = build_prompt(BUILTIN[name], seed)
        text = text_of(prompt)
        assert text.rsplit("\n", 1)[1] == canary.INSTRUCTION  # the fixed-format last line
        nonce = text[:16]
        assert (
            prompt.canary
            == canary.asked(text)
            == "CHECK " + "-".join(nonce[i : i + 4].upper() for i in range(0, 16, 4))
        )


def test_small_corpus_is_cycled_in_new_orders() -> None:
    corpus = tuple(Document(f"doc{i}", f"Sentence {i} is here. " * 60) for i in range(4))
    prompt = build_prompt(Workload("w", 500, input_tokens=10_000, tasks=("summarize",)), 1, corpus)
    assert abs(prompt.input_tokens - 10_000) <= 200
    titles = [line.split(": ")[1] for line in text_of(prompt).splitlines() if line.startswith("### Document")]
    rounds = [titles[i : i + 4] for i in range(0, len(titles) - 4, 4)]
    assert all(sorted(r) == ["doc0", "doc1", "doc2", "doc3"] for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1


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
    assert body["max_tokens"] == DEFAULT.max_tokens == 1_000


def test_chat_prompt_counts_each_message_and_fingerprints_as_build_prompt_does() -> None:
    from tokenpace.prompts.prompt import Message, chat_prompt

    messages = [Message("user", "Hello there."), Message("assistant", "Hi!"), Message("user", "Bye.")]
    p = chat_prompt(messages, 30)
    assert p.messages == tuple(messages) and p.max_tokens == 30
    assert p.input_tokens == sum(count_tokens(m.text) for m in messages)
    assert chat_prompt(messages, 30, [1, 2, 3]).input_tokens == 6  # counts given are trusted
    one = build_prompt(BUILTIN["1k"], 3)
    assert chat_prompt(one.messages, 5).fingerprint == one.fingerprint
