"""Workload definitions: the built-ins and a config's own, checked in the file's words."""

from __future__ import annotations

import dataclasses

import pytest

from tokenpace.config.workloads import (
    AA_OUTPUT_TOKENS,
    BUILTIN,
    DEFAULT,
    TEXT_TASKS,
    ordered,
    workload_from_config,
)
from tokenpace.errors import ConfigError
from tokenpace.prompts.prompt import build_prompt


def test_builtin_workloads() -> None:
    assert set(BUILTIN) == {"1k", "10k", "100k", "vision", "parallel", "cached-10k"}
    assert DEFAULT is BUILTIN["1k"]
    assert [BUILTIN[n].input_tokens for n in ("1k", "10k", "100k")] == [1_000, 10_000, 100_000]
    assert BUILTIN["parallel"].concurrency == 10 and BUILTIN["parallel"].input_tokens == 1_000
    assert [BUILTIN[n].max_tokens for n in ("vision", "parallel")] == [1_000, 1_000]  # 1k-sized, as 1k
    tasks = {build_prompt(DEFAULT, seed).task for seed in range(40)}  # the seed picks a task from the mix
    assert tasks == set(TEXT_TASKS)


def test_builtins_ask_for_artificial_analysis_output_lengths() -> None:
    """AA asks for at least 1,000 / 1,500 / 2,000 output tokens on 1k / 10k / 100k: shorter outputs weigh the
    first chunks more, so a speed over them does not compare with AA's."""
    assert dict(AA_OUTPUT_TOKENS) == {"1k": 1_000, "10k": 1_500, "100k": 2_000}
    assert all(BUILTIN[name].max_tokens >= least for name, least in AA_OUTPUT_TOKENS.items())


def test_a_table_named_after_a_builtin_changes_only_its_keys() -> None:
    """``[workloads.10k] max_tokens = 3000`` is 10k with a longer cap, not a 1k-token workload named 10k."""
    longer = workload_from_config("10k", {"max_tokens": 3_000})
    assert longer == dataclasses.replace(BUILTIN["10k"], max_tokens=3_000)
    vision = workload_from_config("vision", {"max_tokens": 800})
    assert (vision.image, vision.tasks, vision.input_tokens) == ((1200, 840), ("describe",), 1_000)
    assert workload_from_config("parallel", {"input_tokens": 2_000}).concurrency == 10
    assert workload_from_config("1k", {"image": [64, 64]}).tasks == ("describe",)
    assert workload_from_config("mine", {}) == dataclasses.replace(DEFAULT, name="mine")


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
    pairs = workload_from_config("cached-30k", {"input_tokens": 30_000, "paired": True})
    assert pairs.paired and BUILTIN["cached-10k"].paired and not BUILTIN["10k"].paired


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ({"input_tokens": 10}, "workloads.bad.input_tokens: must be at least 300, got 10"),
        ({"input_tokens": "1k"}, 'workloads.bad.input_tokens: expected a whole number, not "1k"'),
        ({"input_tokens": True}, "workloads.bad.input_tokens: expected a whole number, not true"),
        ({"max_tokens": 0}, "workloads.bad.max_tokens: must be at least 1, got 0"),
        ({"concurrency": 0}, "workloads.bad.concurrency: must be from 1 to 4096, got 0"),
        ({"tasks": ["poetry"]}, "workloads.bad.tasks: give one or more of summarize, questions"),
        ({"tasks": []}, "workloads.bad.tasks: give one or more of"),
        ({"tasks": "summarize"}, 'workloads.bad.tasks: expected a list such as ["a", "b"], not "summarize"'),
        ({"image": [640]}, "workloads.bad.image: give 2 items"),
        ({"image": [640, 4]}, "workloads.bad.image: width and height must be 16 to 8192 pixels"),
        ({"image": [640, 480], "tasks": ["summarize"]}, "workloads.bad.tasks: a workload with an image"),
        ({"tasks": ["describe"]}, "workloads.bad.tasks: a workload with an image"),
        ({"input_token": 1000}, 'workloads.bad.input_token: unknown key; did you mean "input_tokens"?'),
        ({"paired": True, "tasks": ["summarize"]}, "workloads.bad.paired: a paired workload needs two or more"),
        ({"paired": True, "concurrency": 2}, "workloads.bad.paired: a paired workload needs two or more"),
        ({"paired": "yes"}, 'workloads.bad.paired: expected true or false, not "yes"'),
    ],
)
def test_bad_workload_config_is_one_line(table: dict[str, object], expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        workload_from_config("bad", table)
    assert str(info.value).startswith(expected) and "\n" not in str(info.value)


def test_workloads_are_listed_in_one_order_built_ins_first() -> None:
    """Not as text sorts them ("100k" < "10k" < "1k"): the built-ins by size, then a config's own by name."""
    assert ordered(["short", "100k", "parallel", "1k", "10k", "vision", "1k", "alpha"]) == [
        "1k", "10k", "100k", "vision", "parallel", "alpha", "short"
    ]  # fmt: skip
