"""The default dataset: a workload's fresh prompts, one request a chain, the same for the same seed."""

from __future__ import annotations

from tokenpace.config.workloads import BUILTIN
from tokenpace.load.chains import Dataset, FreshPrompts, Request
from tokenpace.prompts.prompt import build_prompt


def test_fresh_prompts_are_the_workloads_prompts_one_per_chain() -> None:
    w = BUILTIN["1k"]
    d: Dataset = FreshPrompts(w, 10)
    assert d.name == "1k" and d.size is None
    assert d.chain(3) == (Request(build_prompt(w, 13)),)
    assert d.chain(3) == FreshPrompts(w, 10).chain(3)
    assert d.chain(3)[0].prompt.fingerprint != d.chain(4)[0].prompt.fingerprint
    assert d.chain(0)[0].tag == ""
