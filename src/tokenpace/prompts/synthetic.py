"""Synthetic load-test prompts: corpus text cut to drawn token lengths, single, sharing a prefix, or as chats.

Text comes from a corpus (prompts/corpus.py's built-in one by default) read as one endless loop of tokens:
a prompt is a nonce line, a run of that loop starting at a seeded token, and a short instruction to go on
writing, cut so its o200k_base count is within ``slack`` tokens of the drawn length. The nonce (16 random
hex digits) comes first, so two prompts share fewer than 4 characters of prefix but where it is intended:
the requests of one prefix group share the group's whole prefix (its nonce first), and the turns of one chat
hold the earlier turns. Everything a chain holds follows from (seed, chain index) alone.

Cutting a run of tokens out of an already-tokenized text costs a string slice; counting the result is one
encode, two when the first cut lands off by more than the slack (a 1k prompt: about a millisecond).

A load test's warm-up requests (:class:`WarmedUp`) are synthetic prompts too, never the dataset's: shaped like
its first measured request, with a nonce of their own first, so no measured request is answered from what the
warm-up left in the server's cache (SGLang's ``bench_serving`` split its warm-up from the dataset for the same
reason: a warm-up that reused the first prompt made the first measured request a full cache hit).
"""

from __future__ import annotations

import array
import functools
import random
from dataclasses import dataclass

from tokenpace.errors import ConfigError
from tokenpace.prompts.chains import Chain, Dataset, Request
from tokenpace.prompts.corpus import Corpus, default_corpus, token_starts
from tokenpace.prompts.prompt import Message, Prompt, chat_prompt
from tokenpace.prompts.tokens import count_tokens

MAX_TOKENS = 200_000  # the most tokens any drawn length may take
MIN_INPUT = 32  # a prompt's nonce line and instruction take ~20
TAIL = "\n\nContinue the text above in the same style, at length."


def slack(n: int) -> int:
    """Tokens a prompt of target ``n`` may be off by: max(2, n / 100)."""
    return max(2, n // 100)


@dataclass(frozen=True, slots=True)
class Lengths:
    """Token lengths drawn one per request: ``mean``, else normal(mean, stdev), else uniform [low, high].

    Every draw is clamped to [minimum, MAX_TOKENS].
    """

    mean: int
    stdev: int = 0
    low: int | None = None
    high: int | None = None
    minimum: int = 1

    def draw(self, rng: random.Random) -> int:
        """max(minimum, min(MAX_TOKENS, the drawn length)), the normal draw rounded to the nearest integer."""
        if self.low is not None and self.high is not None:
            n = rng.randint(self.low, self.high)
        elif self.stdev:
            n = round(rng.gauss(self.mean, self.stdev))
        else:
            n = self.mean
        return max(self.minimum, min(MAX_TOKENS, n))

    @property
    def top(self) -> int:
        """The largest length it draws but for a normal's tail: high, else mean."""
        return self.high if self.high is not None else self.mean

    @property
    def label(self) -> str:
        if self.low is not None:
            return f"{self.low}-{self.high}"
        return f"{self.mean}~{self.stdev}" if self.stdev else str(self.mean)


@dataclass(frozen=True, slots=True)
class _Loop:
    """A corpus as one loop of text: its documents joined by blank lines, and where each o200k token starts."""

    text: str
    starts: array.array[int]  # character offset of each token, then len(text)

    @property
    def tokens(self) -> int:
        return len(self.starts) - 1

    def run(self, start: int, n: int) -> str:
        """The ``n`` tokens of text from token ``start``, going round the loop as often as needed."""
        parts: list[str] = []
        start %= self.tokens
        while n > 0:
            take = min(n, self.tokens - start)
            parts.append(self.text[self.starts[start] : self.starts[start + take]])
            n, start = n - take, 0
        return "".join(parts)


@functools.cache
def _loop(corpus: Corpus) -> _Loop:
    """The corpus's loop, tokenized once per process (the built-in corpus: ~0.2 s)."""
    if not corpus:
        raise ConfigError("the corpus holds no documents")
    text = "".join(doc.text + "\n\n" for doc in corpus)
    return _Loop(text, token_starts(text))


def nonce(rng: random.Random) -> str:
    return f"{rng.getrandbits(64):016x}"


def sized(loop: _Loop, rng: random.Random, n: int, head: str = "", tail: str = "") -> tuple[str, int]:
    """``head`` + corpus text + ``tail`` of ``n`` o200k tokens give or take ``slack(n)``, and its exact count.

    Tokens can merge where the pieces join, so the first cut is counted and, when off by more than the
    slack, cut again by the difference.
    """
    start = rng.randrange(loop.tokens)
    body = max(0, n - count_tokens(head) - count_tokens(tail))
    text = head + loop.run(start, body) + tail
    size = count_tokens(text)
    if abs(size - n) > slack(n):
        body = max(0, body + n - size)
        text = head + loop.run(start, body) + tail
        size = count_tokens(text)
    return text, size


class _Generated:
    """What the generated datasets share: text from their corpus's loop, tokenized when the dataset is made
    (before any stream is timed), and no end to their chains."""

    corpus: Corpus | None

    def __post_init__(self) -> None:
        self.loop  # noqa: B018 - tokenized now, not while the first requests are built

    @property
    def loop(self) -> _Loop:
        return _loop(default_corpus() if self.corpus is None else self.corpus)

    @property
    def size(self) -> int | None:
        return None


@dataclass(frozen=True)
class Synthetic(_Generated):
    """One fresh prompt per chain: input and output lengths drawn per request."""

    input: Lengths
    output: Lengths
    seed: int
    corpus: Corpus | None = None

    @property
    def name(self) -> str:
        return f"synthetic-{self.input.label}/{self.output.label}"

    def chain(self, i: int) -> Chain:
        rng = random.Random(f"synthetic/{self.seed}/{i}")
        n_in, n_out = self.input.draw(rng), self.output.draw(rng)
        text, size = sized(self.loop, rng, n_in, f"{nonce(rng)}\n\n", TAIL)
        return (Request(chat_prompt([Message("user", text)], n_out, [size])),)


@dataclass(frozen=True)
class SharedPrefix(_Generated):
    """Chain i is group i: ``per_group`` prompts of one ``prefix``-token prefix and each its own suffix.

    The first request fills the server's prefix cache ("prefix-miss"), the others are sent after it
    ("prefix-hit"). Each group's prefix starts with its own nonce, each suffix with another.
    """

    prefix: int
    suffix: int
    per_group: int
    output: Lengths
    seed: int
    corpus: Corpus | None = None

    @property
    def name(self) -> str:
        return f"prefix-{self.prefix}+{self.suffix}x{self.per_group}/{self.output.label}"

    def chain(self, i: int) -> Chain:
        loop = self.loop
        rng = random.Random(f"prefix/{self.seed}/{i}")
        shared, _ = sized(loop, rng, self.prefix, f"{nonce(rng)}\n\n")
        out = []
        for j in range(self.per_group):
            own, _ = sized(loop, rng, self.suffix, f"\n\n{nonce(rng)}\n\n", TAIL)
            prompt = chat_prompt([Message("user", shared + own)], self.output.draw(rng))
            out.append(Request(prompt, "prefix-hit" if j else "prefix-miss"))
        return tuple(out)


@dataclass(frozen=True)
class MultiTurn(_Generated):
    """Chain i is one chat of ``turns`` turns; turn k sends every earlier user and assistant turn, then its own.

    Assistant turns are corpus text as long as the turn's max_tokens: what a reply to the cap would add.
    """

    turns: int
    input: Lengths
    output: Lengths
    seed: int
    corpus: Corpus | None = None

    @property
    def name(self) -> str:
        return f"multiturn-{self.turns}x{self.input.label}/{self.output.label}"

    def chain(self, i: int) -> Chain:
        loop = self.loop
        rng = random.Random(f"multiturn/{self.seed}/{i}")
        messages: list[Message] = []
        counts: list[int] = []
        out = []
        for k in range(self.turns):
            n_in, n_out = self.input.draw(rng), self.output.draw(rng)
            user, size = sized(loop, rng, n_in, f"{nonce(rng)}\n\n" if k == 0 else "", TAIL)
            messages.append(Message("user", user))
            counts.append(size)
            out.append(Request(chat_prompt(messages, n_out, counts), f"turn-{k + 1}"))
            if k + 1 < self.turns:
                reply, size = sized(loop, rng, n_out)
                if not reply.strip():  # a one-token cut can be a line break; some APIs refuse blank turns
                    reply, size = "OK", 1
                messages.append(Message("assistant", reply))
                counts.append(size)
        return tuple(out)


@dataclass(frozen=True)
class WarmedUp:
    """A dataset behind ``warmups`` warm-up requests: chain i < warmups is warm-up i, one synthetic prompt of its
    own; chain warmups + j is the dataset's chain ``first`` + j, so the measured requests are the dataset's from
    ``first`` on, as without a warm-up.

    The load engine releases its first ``warmups`` chains as warm-up (load/release.py's budget), so chain i and
    release i agree: a warm-up is one request, and a measured chain's later requests take the budget only once
    every warm-up has been released. A warm-up prompt has the input tokens (at least MIN_INPUT) and max tokens
    of the dataset's first measured request, corpus text from its own seed, and its own nonce first.
    """

    dataset: Dataset
    warmups: int
    first: int = 0  # the dataset's first measured chain (a sweep's later points go on from the last)
    seed: int = 0
    corpus: Corpus | None = None

    @property
    def name(self) -> str:
        return self.dataset.name

    @property
    def size(self) -> int | None:
        return None if self.dataset.size is None else self.warmups + self.dataset.size

    @functools.cached_property
    def shape(self) -> Prompt:
        """The dataset's first measured request's prompt: what each warm-up is shaped like."""
        return self.dataset.chain(self.first)[0].prompt

    def chain(self, i: int) -> Chain:
        if i >= self.warmups:
            return self.dataset.chain(self.first + i - self.warmups)
        shape, loop = self.shape, _loop(default_corpus() if self.corpus is None else self.corpus)
        # "warm-up/" keys no dataset's generator: a measured prompt never draws this text and nonce.
        rng = random.Random(f"warm-up/{self.seed}/{self.first}/{i}")
        n_in = max(MIN_INPUT, min(MAX_TOKENS, shape.input_tokens))
        text, size = sized(loop, rng, n_in, f"{nonce(rng)}\n\n", TAIL)
        return (Request(chat_prompt([Message("user", text)], shape.max_tokens, [size]), "warm-up"),)
