"""What is asked: a workload makes fresh prompts, so no two requests share a cacheable prefix."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Prompt:
    """A chat prompt ready to send: messages and the output cap that keeps speed measurable."""

    messages: tuple[tuple[str, str], ...]  # (role, content)
    max_tokens: int


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    max_tokens: int

    def prompt(self, seed: int) -> Prompt:
        """A short writing task led by a nonce, so prefix caches cannot serve it."""
        rng = random.Random(seed)
        nonce = f"{rng.getrandbits(64):016x}"
        topic = rng.choice(_TOPICS)
        text = (
            f"[{nonce}] Write a detailed, multi-paragraph explanation of {topic}. "
            "Keep writing until you have covered the history, how it works and open questions."
        )
        return Prompt(messages=(("user", text),), max_tokens=self.max_tokens)


_TOPICS = (
    "how tides work",
    "the history of the printing press",
    "how compilers optimise loops",
    "why the sky is blue",
    "how vaccines train the immune system",
    "the water cycle",
    "how bridges carry load",
    "the origins of chess",
)

DEFAULT = Workload(name="short", max_tokens=256)
