"""Workloads: named prompt shapes (input size, task mix, image, concurrency) that results are about.

Speed depends on prompt length, so a result is about a named workload. Built in: ``1k``, ``10k`` and ``100k``
input tokens with a mix of five tasks and Artificial Analysis's output lengths (1,000, 1,500 and 2,000 tokens),
``vision`` (a ~1 megapixel chart and ~1k tokens of text), ``parallel`` (1k tokens, 10 requests released
together, as Artificial Analysis's daily parallel test) and ``cached-10k`` (pairs of requests sharing a 10k-token
prefix: warm vs cold TTFT of a prompt cache). A config file declares more, or changes a built-in's keys
(``[workloads.NAME]``); ``prompts.prompt`` builds each request's fresh prompt.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from types import MappingProxyType
from typing import Any

import pydantic

from tokenpace.config.plain import first_problem
from tokenpace.errors import ConfigError

TEXT_TASKS = ("summarize", "questions", "compare", "translate", "visual")
IMAGE_TASK = "describe"
MIN_INPUT_TOKENS = 300  # nonce line and task take up to ~150 of them
MAX_INPUT_TOKENS = 2_000_000  # ten times the longest context offered; such a prompt is ~9 MB of text
MAX_CONCURRENCY = 4096  # requests in flight at once, as bench's -c


@dataclass(frozen=True, slots=True)
class Workload:
    """What to send: a target prompt size, the task mix and output cap, and optionally an image or a burst.

    A request's task is chosen by its seed from ``tasks``. ``image`` (width, height) attaches a chart and goes
    with the ``describe`` task only. ``concurrency``: this many requests are released together. ``paired``:
    requests go in pairs, the same prefix twice with a different task at the end, the second sent once the
    first has ended (turn 1 fills a prompt cache, turn 2 may hit it).
    """

    name: str
    max_tokens: int
    _: KW_ONLY
    input_tokens: int = 1000
    tasks: tuple[str, ...] = TEXT_TASKS
    concurrency: int | None = None
    image: tuple[int, int] | None = None
    paired: bool = False

    def __post_init__(self) -> None:
        if problem := _problem(self):
            raise ValueError(problem)


def _problem(w: Workload) -> str | None:
    """What is wrong with a workload, as ``key: what is wrong`` (a ValueError's message), or None."""
    known = (*TEXT_TASKS, IMAGE_TASK)
    if w.input_tokens < MIN_INPUT_TOKENS:
        return f"input_tokens: must be at least {MIN_INPUT_TOKENS}, got {w.input_tokens}"
    if w.input_tokens > MAX_INPUT_TOKENS:
        return f"input_tokens: must be at most {MAX_INPUT_TOKENS}, got {w.input_tokens}"
    if w.max_tokens < 1:
        return f"max_tokens: must be at least 1, got {w.max_tokens}"
    if w.concurrency is not None and not 1 <= w.concurrency <= MAX_CONCURRENCY:
        return f"concurrency: must be from 1 to {MAX_CONCURRENCY}, got {w.concurrency}"
    if not w.tasks or (unknown := [t for t in w.tasks if t not in known]):
        return f"tasks: give one or more of {', '.join(known)}" + (f", not {unknown[0]!r}" if w.tasks else "")
    if w.image is not None and not all(16 <= side <= 8192 for side in w.image):
        return f"image: width and height must be 16 to 8192 pixels, got {list(w.image)}"
    if w.paired and (w.concurrency is not None or w.image is not None or len(set(w.tasks)) < 2):
        return "paired: a paired workload needs two or more text tasks (one per turn), no concurrency and no image"
    if (w.image is not None) != (w.tasks == (IMAGE_TASK,)):
        return f"tasks: a workload with an image runs the {IMAGE_TASK!r} task only, and {IMAGE_TASK!r} needs an image"
    return None


# Artificial Analysis's minimum output per workload (its methodology, issue 22): output speed leaves out the first
# chunk, and over a short output the first chunks weigh more, so a shorter cap gives a figure that does not compare.
AA_OUTPUT_TOKENS: Mapping[str, int] = MappingProxyType({"1k": 1_000, "10k": 1_500, "100k": 2_000})
# Every task asks for more words than max_tokens allows (prompts/prompt.py), so no answer ends before the cap.
# vision and parallel send 1k-sized text (AA's parallel test is 1k-sized too), so they take 1k's cap and compare.
BUILTIN: dict[str, Workload] = {
    "1k": Workload("1k", AA_OUTPUT_TOKENS["1k"], input_tokens=1_000),
    "10k": Workload("10k", AA_OUTPUT_TOKENS["10k"], input_tokens=10_000),
    "100k": Workload("100k", AA_OUTPUT_TOKENS["100k"], input_tokens=100_000),
    "vision": Workload("vision", AA_OUTPUT_TOKENS["1k"], input_tokens=1_000, tasks=(IMAGE_TASK,), image=(1200, 840)),
    "parallel": Workload("parallel", AA_OUTPUT_TOKENS["1k"], input_tokens=1_000, concurrency=10),
    # The same prefix twice (turn 1 cold, turn 2 warm): 10k-sized, so it takes 10k's cap and its turn 1 compares.
    "cached-10k": Workload("cached-10k", AA_OUTPUT_TOKENS["10k"], input_tokens=10_000, paired=True),
}
DEFAULT = BUILTIN["1k"]


def ordered(names: Iterable[str], configured: Sequence[str] = ()) -> list[str]:
    """Workload names in the one order every list uses: the ones ``configured`` (the schedule's) in its order,
    then the built-ins as above, then the others by name."""
    first = list(dict.fromkeys([*configured, *BUILTIN]))
    return sorted(set(names), key=lambda n: (first.index(n) if n in first else len(first), n))


class _WorkloadTable(pydantic.BaseModel):
    """A ``[workloads.NAME]`` table's types; a key left out keeps the built-in's value (or DEFAULT's); the values
    are checked by ``Workload`` itself."""

    model_config = pydantic.ConfigDict(extra="forbid", strict=True)
    input_tokens: int | None = None
    max_tokens: int | None = None
    tasks: list[str] | None = None
    concurrency: int | None = None
    image: list[int] | None = pydantic.Field(None, min_length=2, max_length=2)
    paired: bool | None = None


def workload_from_config(name: str, table: Mapping[str, Any]) -> Workload:
    """A workload from its TOML table; any mistake is one ConfigError line ``workloads.NAME.key: ...``.

    Keys: ``input_tokens``, ``max_tokens``, ``tasks`` (default: all five text tasks, or ``describe`` with an
    image), ``concurrency``, ``image = [width, height]``, ``paired``. A table named after a built-in changes only
    the keys it gives (``[workloads.10k]`` with ``max_tokens = 3000`` is still 10k tokens in); any other starts from
    DEFAULT (1k in, 1k's output cap, the five text tasks).
    """
    try:
        t = _WorkloadTable.model_validate(table)
    except pydantic.ValidationError as exc:
        raise ConfigError(f"workloads.{name}.{first_problem(exc, _WorkloadTable)}") from None
    base = BUILTIN.get(name, DEFAULT)
    given: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in t.model_dump(exclude_none=True).items()
    }
    if "tasks" not in given:  # an image of its own runs the image task; otherwise the base's tasks
        given["tasks"] = (IMAGE_TASK,) if given.get("image", base.image) else base.tasks
    try:
        return dataclasses.replace(base, name=name, **given)  # every key left out: the base's value
    except ValueError as exc:
        raise ConfigError(f"workloads.{name}.{exc}") from None
