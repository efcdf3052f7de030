"""Dataset specs: each kind opens the dataset it names, with its numbers bounded; anything else says the grammar."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.simkit import send
from tokenpace.config.workloads import BUILTIN
from tokenpace.errors import ConfigError
from tokenpace.prompts.chains import FreshPrompts
from tokenpace.prompts.datafiles import FileDataset
from tokenpace.prompts.datasets import GRAMMAR, open_dataset
from tokenpace.prompts.synthetic import Lengths, MultiTurn, SharedPrefix, Synthetic

W = BUILTIN["1k"]
OUT = Lengths(200)


def test_no_spec_is_the_workloads_fresh_prompts() -> None:
    d = open_dataset(None, W, 5)
    assert d == FreshPrompts(W, 5) and d.name == W.name


@pytest.mark.parametrize(
    ("spec", "expected", "name"),
    [
        ("synthetic:input=1000,output=200", Synthetic(Lengths(1000, minimum=32), OUT, 3), "synthetic-1000/200"),
        (
            "synthetic:input=1000,output=200,input_stdev=100,output_stdev=20",
            Synthetic(Lengths(1000, 100, minimum=32), Lengths(200, 20), 3),
            "synthetic-1000~100/200~20",
        ),
        (
            "synthetic:output=100-300,input=800-1200",
            Synthetic(Lengths(1000, low=800, high=1200, minimum=32), Lengths(200, low=100, high=300), 3),
            "synthetic-800-1200/100-300",
        ),
        (
            "prefix:prefix=2000,suffix=200,per_group=5,output=200",
            SharedPrefix(2000, 200, 5, Lengths(200), 3),
            "prefix-2000+200x5/200",
        ),
        (
            "multiturn:turns=4,input=300,output=100",
            MultiTurn(4, Lengths(300, minimum=32), Lengths(100), 3),
            "multiturn-4x300/100",
        ),
    ],
)
def test_generated_specs(spec: str, expected: object, name: str) -> None:
    d = open_dataset(spec, W, 3)
    assert d == expected and d.name == name and d.size is None


def test_file_specs(tmp_path: Path) -> None:
    (tmp_path / "a,b.jsonl").write_text('{"prompt": "hi"}\n')
    d = open_dataset(f"jsonl:{tmp_path}/a,b.jsonl", W, 1)  # a comma in a JSONL path is part of it
    assert isinstance(d, FileDataset) and d.size == 1 and d.chain(0)[0].prompt.max_tokens == W.max_tokens
    (tmp_path / "sg.json").write_text(json.dumps([{"conversations": [{"from": "human", "value": "hi"}]}]))
    d = open_dataset(f"sharegpt:{tmp_path}/sg.json", W, 1)
    assert isinstance(d, FileDataset) and d.turns == 0 and d.name == "sharegpt-sg"
    d = open_dataset(f"sharegpt:{tmp_path}/sg.json,turns=4", W, 1)
    assert isinstance(d, FileDataset) and d.turns == 4 and d.name == "sharegpt-sg-4turns"


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("", "unknown kind ''"),
        ("random:input=1", "unknown kind 'random'"),
        ("synthetic", "unknown kind 'synthetic'"),
        ("jsonl:", "the file's path is missing"),
        ("sharegpt:,turns=2", "the file's path is missing"),
        ("sharegpt:x.json,turns=0", "turns must be a whole number from 1 to 64"),
        ("sharegpt:x.json,turns=65", "turns must be a whole number from 1 to 64"),
        ("sharegpt:x.json,turns=two", "turns must be a whole number"),
        ("synthetic:input=1000", "synthetic needs output"),
        ("synthetic:", "synthetic needs input, output"),
        ("synthetic:input=1000,output=200,turns=3", "synthetic takes input, output, input_stdev, output_stdev, not"),
        ("synthetic:input=1000,output=200,input=5", "input given twice"),
        ("synthetic:input=1000,output", "not 'output'"),
        ("synthetic:input=1e3,output=200", "input must be a whole number or a range A-B"),
        ("synthetic:input=-5,output=200", "input must be a whole number"),
        ("synthetic:input=1000,output=200,input_stdev=5-9", "input_stdev must be a whole number;"),
        ("synthetic:input=31,output=200", "input must be from 32 to 200000, got 31"),
        ("synthetic:input=200001,output=200", "input must be from 32 to 200000, got 200001"),
        ("synthetic:input=1000,output=0", "output must be from 1 to 200000, got 0"),
        ("synthetic:input=1000,output=99999999", "output must be a whole number"),
        ("synthetic:input=1000,output=200,output_stdev=200001", "output_stdev must be from 0 to 200000"),
        ("synthetic:input=900-800,output=200", "runs backwards"),
        ("synthetic:input=800-900,output=200,input_stdev=10", "input is a range: it takes no input_stdev"),
        ("prefix:prefix=2000,suffix=200,per_group=5", "prefix needs output"),
        ("prefix:prefix=2000,suffix=200,per_group=1001,output=5", "per_group must be from 1 to 1000"),
        ("prefix:prefix=2000,suffix=200,per_group=0,output=5", "per_group must be from 1 to 1000"),
        ("prefix:prefix=2000-3000,suffix=200,per_group=5,output=5", "prefix must be a whole number;"),
        ("prefix:prefix=199990,suffix=200,per_group=5,output=5", "prefix \\+ suffix must be at most 200000"),
        ("prefix:prefix=20,suffix=200,per_group=5,output=5", "prefix must be from 32"),
        ("multiturn:turns=65,input=300,output=100", "turns must be from 1 to 64"),
        ("multiturn:turns=64,input=3000,output=1000", "the last turn would send"),
        ("multiturn:turns=4,input=300", "multiturn needs output"),
    ],
)
def test_bad_specs_say_the_grammar_in_one_line(spec: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as info:
        open_dataset(spec, W, 1)
    message = str(info.value)
    assert message.endswith(GRAMMAR) and "\n" not in message


def test_a_huge_spec_is_refused_without_being_echoed() -> None:
    with pytest.raises(ConfigError, match="over 4096 characters") as info:
        open_dataset("synthetic:" + "x" * 10_000, W, 1)
    assert len(str(info.value)) < 1000


async def test_every_generated_kind_reaches_the_simulator_from_its_spec() -> None:
    specs = (
        "synthetic:input=200,output=8",
        "prefix:prefix=300,suffix=40,per_group=2,output=8",
        "multiturn:turns=2,input=60,output=8",
    )
    prompts = [r.prompt for spec in specs for r in open_dataset(spec, W, 1).chain(0)]
    answers = await send(prompts)
    for prompt, (timeline, truth) in zip(prompts, answers, strict=True):
        assert timeline.failure is None
        assert abs(truth.prompt_tokens - prompt.input_tokens) <= len(prompt.messages)
        assert truth.completion_tokens == 8
    assert [len(p.messages) for p in prompts] == [1, 1, 1, 1, 3]
