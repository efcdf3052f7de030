"""The default dataset: a workload's fresh prompts, one request a chain, the same for the same seed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tokenpace.config.workloads import BUILTIN
from tokenpace.prompts import prompt
from tokenpace.prompts.chains import Dataset, FreshPrompts, Request
from tokenpace.prompts.corpus import Document
from tokenpace.prompts.prompt import build_prompt, build_turns


def test_fresh_prompts_are_the_workloads_prompts_one_per_chain() -> None:
    w = BUILTIN["1k"]
    d: Dataset = FreshPrompts(w, 10)
    assert d.name == "1k" and d.size is None
    assert d.chain(3) == (Request(build_prompt(w, 13)),)
    assert d.chain(3) == FreshPrompts(w, 10).chain(3)
    assert d.chain(3)[0].prompt.fingerprint != d.chain(4)[0].prompt.fingerprint
    assert d.chain(0)[0].tag == ""


def test_a_pairs_shared_prefix_is_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cached-10k pair's ~10k prefix costs real CPU: its sections are chosen once for both turns."""
    built: list[int] = []
    sections = prompt._sections

    def counted(docs: Iterator[Document], budget: int, cap: int, slack: int) -> list[str]:
        built.append(budget)
        return sections(docs, budget, cap, slack)

    monkeypatch.setattr(prompt, "_sections", counted)
    one, two = FreshPrompts(BUILTIN["cached-10k"], 10).chain(3)
    assert built and len(built) == len(set(built))  # a second pass has its own budget; no pass is made twice
    assert (one.prefix_turn, two.prefix_turn) == (1, 2) and one.prompt.task != two.prompt.task
    assert (one.prompt, two.prompt) == build_turns(BUILTIN["cached-10k"], 13)
