"""The correctness canary: a line every fresh prompt asks the model to begin its answer with, checked after.

A prompt's first line is its nonce, 16 random hex digits (prompts/prompt.py); its last line is
:data:`INSTRUCTION`, which asks the answer to begin with one line: ``CHECK``, a space, then that number in
capital letters in four groups of four joined by hyphens. So the nonce 3fa9c01b2e7d4456 expects::

    CHECK 3FA9-C01B-2E7D-4456

The model must find the number at the top of the prompt (after up to 100k tokens of documents), copy its 16
digits exactly and format them: any instruction-following model does, while a swapped model, a degraded
(over-quantized) one, an answer cut short or one that loops on garbage does not. It costs the instruction's
input tokens (taken from the documents: the prompt keeps its size) and about 15 output tokens (11 to 22 in
o200k_base), counted like the rest of the answer. Answers run to max_tokens, so the canary is asked for at the
start, where even a capped answer has it.

The verdict reads the answer's content (never its reasoning) with :func:`passed`: its first line with a letter
or digit, after a leading ``<think>...</think>`` block, must be the expected line once markdown wrapping is
taken off. Wrong, missing or extra digits always fail. An answer that ends in a loop (:func:`loops`: its last
LOOP_SPAN or more characters one span repeated, as a degenerate model repeats itself to the cap) fails too,
however it began.
"""

from __future__ import annotations

import re

PREFIX = "CHECK"
INSTRUCTION = (
    f"Begin your answer with one line: {PREFIX}, a space, then this request's reference number from the first "
    "line in capital letters, as four groups of four characters joined by hyphens (for example "
    f"{PREFIX} 0A1B-2C3D-4E5F-6A7B). Then do the task above."
)
_NONCE = re.compile(r"([0-9a-f]{16}) ")  # how a fresh prompt starts (prompts/prompt.py)
_THINK = re.compile(r"\s*<think>.*?</think>", re.DOTALL)  # reasoning some servers leave in the content
_WRAPPING = str.maketrans("", "", "*_`")  # bold, italics and code marks, wherever they are on the line
_ENDS = " \t#>.:"  # heading and quote marks before, a full stop after
LOOP_SPAN = 200  # characters: no prose, code or table repeats one span exactly for this long
LOOP_PERIOD = 400  # the longest repeated span looked for: a sentence or two


def expected(nonce: str) -> str:
    """The line = "CHECK " + nonce.upper() in groups of 4 joined by "-" (nonce: 16 hex digits)."""
    digits = nonce.upper()
    return f"{PREFIX} " + "-".join(digits[i : i + 4] for i in range(0, len(digits), 4))


def asked(prompt_text: str) -> str | None:
    """The line a prompt's text asks for: its nonce's :func:`expected` when it starts with a nonce and ends with
    :data:`INSTRUCTION` (how the simulator knows what a correct model would answer); None otherwise."""
    nonce = _NONCE.match(prompt_text)
    if nonce is None or not prompt_text.rstrip().endswith(INSTRUCTION):
        return None
    return expected(nonce.group(1))


def first_line(answer_text: str) -> str | None:
    """The answer's first line holding a letter or digit, after a leading think block, without markdown
    wrapping (``*``, ``_``, backticks anywhere; ``#``, ``>`` before; ``.``/``:`` after), whitespace collapsed."""
    text = answer_text[m.end() :] if (m := _THINK.match(answer_text)) else answer_text
    for line in text.splitlines():
        clean = " ".join(line.translate(_WRAPPING).strip(_ENDS).split())
        if any(c.isalnum() for c in clean):
            return clean
    return None


def loops(answer_text: str) -> bool:
    """Loops = for some period p <= LOOP_PERIOD, the last n = max(2p, LOOP_SPAN) characters equal the n before
    them shifted by p: the answer ends in at least three copies of one span, LOOP_SPAN characters or more."""
    text = answer_text.rstrip()
    for p in range(1, LOOP_PERIOD + 1):
        n = max(2 * p, LOOP_SPAN)
        if len(text) >= n + p and text[-n:] == text[-n - p : -p]:
            return True
    return False


def passed(expected_line: str, answer_text: str) -> bool:
    """Passed = the answer's :func:`first_line` equals the expected line, ignoring letter case, and it does not
    end in a loop (:func:`loops`)."""
    line = first_line(answer_text)
    return line is not None and line.upper() == expected_line.upper() and not loops(answer_text)


def pass_rate(passed: int, checked: int) -> float | None:
    """Pass rate = passed / checked verdicts; None when no answer was judged."""
    return passed / checked if checked else None


def near_miss(expected_line: str) -> str:
    """A near miss: the expected line with its last hex digit moved on by one (what a swapped model answers)."""
    last = expected_line[-1]
    return expected_line[:-1] + f"{(int(last, 16) + 1) % 16:X}"
