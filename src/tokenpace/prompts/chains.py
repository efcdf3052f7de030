"""What a load test sends: a dataset of request chains, the i-th chain always the same for the same seed.

A chain is requests sent one after another, each when the one before it has ended: a single request (fresh
prompts, a file's prompts), the turns of one conversation (each turn's messages hold the earlier turns), or
the requests that share one prefix (the first one fills the server's prefix cache, the others hit it). Each
request carries a ``tag`` that the report groups figures by ("" for none, "prefix-miss"/"prefix-hit",
"turn-2", ...). Building a chain may cost CPU (a 100k prompt ~1 s): the load engine builds ahead, off the loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from tokenpace.config.workloads import Workload
from tokenpace.prompts.corpus import Corpus
from tokenpace.prompts.prompt import Prompt, build_turns


@dataclass(frozen=True, slots=True)
class Request:
    """One request of a chain: its prompt, what the report groups it by, and which send of a repeated prefix it is
    (a paired workload's turns: its samples say so, and a chain of them shares a group id)."""

    prompt: Prompt
    tag: str = ""
    prefix_turn: int | None = None


Chain = tuple[Request, ...]


class Dataset(Protocol):
    """Request chains by index; ``chain(i)`` is pure (same seed, same chain) and may be called from any thread."""

    @property
    def name(self) -> str:
        """What the samples' ``workload`` column and the report call it."""
        ...

    @property
    def size(self) -> int | None:
        """How many distinct chains there are (a file's), or None when there is no end (generated ones)."""
        ...

    def chain(self, i: int) -> Chain: ...


@dataclass(frozen=True)
class FreshPrompts:
    """The default: a workload's fresh prompt per request (prompts/prompt.py), never two alike; a paired workload's
    (cached-10k) chains are its two turns, built from one seed: the same prefix, a different task.

    With a ``round_seed`` (a scheduled round's, schedule/rounds.py), chain i's documents and task come from
    round_seed + i and only its nonce from seed + i: every endpoint of the round gets the same prompt but its first
    line."""

    workload: Workload
    seed: int
    corpus: Corpus | None = None
    requests: int | None = None  # a run's request count: a paired workload's last chain holds what is left of it
    round_seed: int | None = None

    @property
    def name(self) -> str:
        return self.workload.name

    @property
    def size(self) -> int | None:
        return None

    def chain(self, i: int) -> Chain:
        if self.round_seed is None:
            prompts = build_turns(self.workload, self.seed + i, self.corpus)
        else:
            prompts = build_turns(self.workload, self.round_seed + i, self.corpus, nonce_seed=self.seed + i)
        if self.workload.paired:
            left = len(prompts) if self.requests is None else self.requests - 2 * i  # an odd count's last: turn 1
            return tuple(Request(p, prefix_turn=t) for t, p in enumerate(prompts[:left], 1))
        return tuple(Request(p) for p in prompts)
