"""The correctness canary: the expected line from the nonce, and a verdict tolerant of markdown, never of digits."""

from __future__ import annotations

import pytest

from tokenpace.prompts import canary
from tokenpace.prompts.tokens import count_tokens, token_texts

LINE = "CHECK 3FA9-C01B-2E7D-4456"


def test_the_expected_line_is_the_nonce_upper_cased_in_groups_of_four() -> None:
    assert canary.expected("3fa9c01b2e7d4456") == LINE
    assert (
        canary.near_miss(LINE) == "CHECK 3FA9-C01B-2E7D-4457"
        and canary.near_miss("CHECK 0000-0000-0000-000F")[-1] == "0"
    )


def test_what_a_prompt_asks_is_read_from_its_first_and_last_lines() -> None:
    prompt = f"3fa9c01b2e7d4456 is this request's reference number.\n\nDocuments...\n\n{canary.INSTRUCTION}"
    assert canary.asked(prompt) == LINE
    assert canary.asked(prompt + "\n") == LINE
    assert canary.asked(prompt.removesuffix(canary.INSTRUCTION) + "Summarize.") is None  # no instruction
    assert canary.asked("no nonce here\n\n" + canary.INSTRUCTION) is None
    assert canary.asked("3FA9C01B2E7D4456 upper case is not a nonce\n\n" + canary.INSTRUCTION) is None


@pytest.mark.parametrize(
    "answer",
    [
        LINE,
        f"{LINE}\n\nThe documents describe ...",
        f"\n\n  {LINE}  \nrest",
        f"**{LINE}**\n",
        f"`{LINE}`",
        f"```\n{LINE}\n```\nSummary",
        f"# {LINE}",
        f"> {LINE}.",
        "CHECK **3FA9-C01B-2E7D-4456**",
        "check 3fa9-c01b-2e7d-4456",  # letter case is formatting, not digits
        "CHECK  3FA9-C01B-2E7D-4456\r\nx",
        f"<think>\nThe number on the first line is 3fa9...\n</think>\n\n{LINE}\n",
    ],
)
def test_markdown_wrapping_and_spacing_pass(answer: str) -> None:
    assert canary.passed(LINE, answer)


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "\n \n",
        "CHECK 3FA9-C01B-2E7D-4457",  # one digit off
        "CHECK 3FA9-C01B-2E7D-445",  # cut short (max_tokens)
        "CHECK 3FA9",
        "CHECK 3FA9-C01B-2E7D-44566",  # one too many
        "CHECK 3FA9C01B2E7D4456",  # not grouped
        "CHECK 3FA9-C01B-2E7D-4456 Here is the summary",  # not a line of its own
        f"Sure! Here it is:\n{LINE}",  # not the first line
        "CHECK 0A1B-2C3D-4E5F-6A7B",  # the instruction's example copied
        "<think>\nstill thinking when the cap came",
        "3FA9-C01B-2E7D-4456",
        " the speed of light is a fast token stream",
    ],
)
def test_wrong_missing_or_late_digits_fail(answer: str) -> None:
    assert not canary.passed(LINE, answer)


def test_the_canary_costs_a_few_tokens() -> None:
    """About 15 output tokens (11 to 22 over nonces), and the instruction under 70 input tokens."""
    assert 11 <= count_tokens(LINE + "\n") <= 22
    assert count_tokens(canary.INSTRUCTION) < 70


def test_the_simulator_sends_the_line_as_its_o200k_tokens() -> None:
    pieces = token_texts(LINE + "\n")
    assert "".join(pieces) == LINE + "\n" and len(pieces) == count_tokens(LINE + "\n")
    assert "".join(token_texts("<|endoftext|>")) == "<|endoftext|>"  # special-token text is plain text


def test_an_answer_ending_in_a_loop_fails_and_prose_does_not_loop() -> None:
    line = canary.expected("3fa9c01b2e7d4456")
    prose = " ".join(f"word{i} follows word{i - 1} here." for i in range(200))
    assert canary.passed(line, f"{line}\n{prose}")
    for span in ("the the ", "I will now answer the question. ", "x" * 150 + "\n"):
        looping = f"{line}\n{prose}" + span * (3 + canary.LOOP_SPAN // len(span))
        assert canary.loops(looping) and not canary.passed(line, looping)
    assert not canary.loops("ab" * 50)  # repeated, but shorter than LOOP_SPAN: a rule, a list, not a loop
    assert not canary.loops("x" * 401 + "".join(chr(65 + i % 26) * 3 for i in range(80)))
