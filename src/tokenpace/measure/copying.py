"""The copy ratio: how much of an answer repeats its prompt, the part n-gram drafting streams for free.

A server that drafts tokens by looking them up in the prompt (prompt-lookup or n-gram speculative decoding, as
vLLM's ``ngram`` and llama.cpp's lookup decoding do) streams a copied passage several tokens a step: where the
answers copy their prompts, its output speed measures the copying as much as the generating. So each sample keeps
its copy ratio, the share of its answer's 8-grams of o200k tokens found in its prompt.

Tokens, not words: drafters match token sequences; o200k is the one tokenizer every figure counts in
(prompts/tokens.py); and a translation into Japanese or Chinese has no spaces to split words at, so word 8-grams
would miss what it copies. Eight o200k tokens are about six English words: long enough that common phrases
rarely match by chance, short enough that one copied line of code counts. The answer is the content and tool
calls, not the thinking: providers of one model stream that differently (in full, summarised, not at all), so a
ratio over it would differ by what is shown, not by what is copied.

The cost is bounded: only the answer's first ANSWER_TOKENS_JUDGED tokens and the prompt's first
PROMPT_TOKENS_SEARCHED count (more than every built-in workload's output cap and prompt), each text is cut to
MAX_CHARS_PER_TOKEN characters a token before it is tokenized (a 9 MB prompt costs what a 128k-token one does),
and the prompt is scanned SCAN_TOKENS at a time, so the decoder thread hands the interpreter lock back to the
timing loop often.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from tokenpace.prompts.tokens import token_ids

N = 8  # tokens an n-gram holds
ANSWER_TOKENS_JUDGED = 4_096  # the built-ins' longest output cap is 2,000
PROMPT_TOKENS_SEARCHED = 131_072  # the 100k workload's prompt, whole
MAX_CHARS_PER_TOKEN = 8  # o200k averages ~4 characters a token in English prose, ~1-2 in Chinese
SCAN_TOKENS = 4_096  # prompt tokens looked up in one call that keeps the interpreter lock (~0.5 ms)


def ngrams(ids: Sequence[int], n: int = N) -> Iterator[tuple[int, ...]]:
    """The n-grams of ``ids``, in order: (ids[i], ..., ids[i + n - 1]) for i = 0 .. len(ids) - n."""
    return zip(*(ids[k:] for k in range(n)), strict=False)


def copy_ratio(answer: Sequence[int], prompt: Sequence[int], n: int = N) -> float | None:
    """Copy ratio = |{i : answer[i : i + n] is an n-gram of prompt}| / (len(answer) - n + 1), each position counted;
    None when the answer holds no n-gram (fewer than n tokens)."""
    windows = list(ngrams(answer, n))
    if not windows:
        return None
    wanted, found = set(windows), set[tuple[int, ...]]()
    for start in range(0, len(prompt) - n + 1, SCAN_TOKENS):
        found |= wanted.intersection(ngrams(prompt[start : start + SCAN_TOKENS + n - 1], n))
        if len(found) == len(wanted):
            break
    return sum(w in found for w in windows) / len(windows)


def first_tokens(text: str, most: int) -> list[int]:
    """The first ``most`` o200k tokens of ``text``, tokenizing no more than its first most x MAX_CHARS_PER_TOKEN
    characters."""
    return token_ids(text[: most * MAX_CHARS_PER_TOKEN])[:most]


def text_copy_ratio(answer: str, prompt: str) -> float | None:
    """:func:`copy_ratio` of the answer's first ANSWER_TOKENS_JUDGED o200k tokens in the prompt's first
    PROMPT_TOKENS_SEARCHED; None when the answer has fewer than N tokens (the prompt is not tokenized then)."""
    said = first_tokens(answer, ANSWER_TOKENS_JUDGED)
    if len(said) < N:
        return None
    return copy_ratio(said, first_tokens(prompt, PROMPT_TOKENS_SEARCHED))
