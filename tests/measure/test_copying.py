"""The copy ratio (measure/copying.py): known ratios by hand, its bounds on long texts, and on the simulator's
scripted answers of known copy share, measured, stored and read back on SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses

import pytest

from tests.store.test_database import ok_sample
from tokenpace import sim
from tokenpace.clients.transport import Timeouts
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.workloads import Workload
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.measure.copying import (
    ANSWER_TOKENS_JUDGED,
    MAX_CHARS_PER_TOKEN,
    PROMPT_TOKENS_SEARCHED,
    SCAN_TOKENS,
    N,
    copy_ratio,
    text_copy_ratio,
)
from tokenpace.measure.sample import Sample, make_sample
from tokenpace.measure.timing import Event, EventKind, Timeline
from tokenpace.prompts.corpus import default_corpus
from tokenpace.prompts.prompt import Message, chat_prompt
from tokenpace.prompts.tokens import count_tokens
from tokenpace.store.database import Store

MS = 1_000_000
PROMPT = list(range(100))  # 100 distinct tokens
FRESH = [1000 + i for i in range(50)]  # tokens the prompt does not hold


def test_known_ratios_of_token_sequences() -> None:
    assert copy_ratio(PROMPT[10:30], PROMPT) == 1.0  # all 13 windows copied
    assert copy_ratio(FRESH[:20], PROMPT) == 0.0
    # 12 copied tokens then 8 fresh: 13 windows, of which the 5 wholly inside the copied run are found.
    assert copy_ratio(PROMPT[10:22] + FRESH[:8], PROMPT) == 5 / 13
    # Each position counts: a copied 8-gram said twice, around 8 fresh tokens, is 2 windows found of 17.
    assert copy_ratio(PROMPT[:8] + FRESH[:8] + PROMPT[:8], PROMPT) == 2 / 17
    assert copy_ratio(PROMPT[:8], PROMPT) == 1.0 and copy_ratio(FRESH[:8], PROMPT) == 0.0  # one window
    assert copy_ratio(PROMPT[:7], PROMPT) is None  # no 8-gram to judge
    assert copy_ratio(PROMPT[:20], []) == 0.0  # nothing to copy from (an image-only prompt)
    # Order matters: the same tokens, each 8-gram shuffled, are not a copy.
    assert copy_ratio(PROMPT[::-1][:20], PROMPT) == 0.0


def test_an_n_gram_across_two_scanned_pieces_is_found() -> None:
    prompt = list(range(3 * SCAN_TOKENS))
    edge = prompt[SCAN_TOKENS - 4 : SCAN_TOKENS + 4]  # half in the first piece scanned, half in the second
    assert copy_ratio(edge, prompt) == 1.0
    assert copy_ratio(prompt[-N:], prompt) == 1.0  # the prompt's very last 8-gram


def _passage() -> str:
    """About 300 tokens of real prose and code, as prompts hold."""
    doc = max(default_corpus(), key=lambda d: len(d.text))
    return doc.text[:1200]


def test_known_ratios_of_texts() -> None:
    passage = _passage()
    prompt = "Documents:\n\n" + passage + "\n\nSummarize the documents above."
    assert text_copy_ratio(passage, prompt) == 1.0
    assert text_copy_ratio("the speed of light is a fast token stream that runs over time and space", prompt) == 0.0
    assert text_copy_ratio("Too short.", prompt) is None
    half = text_copy_ratio(passage[:600] + " " + " ".join(["zebra quantum lattice"] * 60), prompt)
    assert half is not None and 0.3 < half < 0.7


def test_only_the_answers_and_prompts_first_tokens_count() -> None:
    """The bound on cost: the answer's first ANSWER_TOKENS_JUDGED tokens, the prompt's first PROMPT_TOKENS_SEARCHED, and
    no more than MAX_CHARS_PER_TOKEN characters a token of either text tokenized."""
    passage = _passage()
    filler = " x" * (PROMPT_TOKENS_SEARCHED + 1000)  # one token a word, more than the prompt's cap
    assert count_tokens(filler) > PROMPT_TOKENS_SEARCHED
    assert text_copy_ratio(passage, passage + filler) == 1.0
    assert text_copy_ratio(passage, filler + passage) == 0.0  # copied from past the cap: not looked at
    # Past the characters tokenized, though within the token cap: rows of 64 "=" are ~4 tokens of ~16 characters.
    rule = ("=" * 64 + "\n") * (PROMPT_TOKENS_SEARCHED * MAX_CHARS_PER_TOKEN // 65 + 1)
    assert count_tokens(rule) < PROMPT_TOKENS_SEARCHED and len(rule) > PROMPT_TOKENS_SEARCHED * MAX_CHARS_PER_TOKEN
    assert text_copy_ratio(passage, rule + passage) == 0.0
    assert text_copy_ratio(passage, passage + rule) == 1.0
    # An answer that copies only after its first ANSWER_TOKENS_JUDGED tokens copies nothing that counts.
    chatter = " y" * ANSWER_TOKENS_JUDGED
    assert text_copy_ratio(chatter + passage, passage) == 0.0
    copied_first = text_copy_ratio(passage + chatter, passage)
    assert copied_first is not None and 0 < copied_first < 0.1  # ~300 of 4,096 tokens


def _timeline(answer: str, thinking: str = "") -> Timeline:
    events = (
        *((Event(100 * MS, EventKind.REASONING, thinking),) if thinking else ()),
        Event(200 * MS, EventKind.CONTENT, answer[:10]),
        Event(300 * MS, EventKind.CONTENT, answer[10:]),
    )
    return Timeline(t_sent_ns=0, t_headers_ns=50 * MS, t_end_ns=400 * MS, events=events)


def test_a_sample_judges_its_answer_not_its_thinking_against_its_prompt() -> None:
    passage = _passage()
    prompt = chat_prompt([Message("system", "Be brief."), Message("user", passage)], 100)
    head = passage[:400].rsplit(" ", 1)[0]  # cut before a word, as its tokens are in the prompt
    fresh = "the speed of light is a fast token stream that runs over time and space with every model"
    endpoint = Endpoint("sim", "sim", "http://sim.invalid/v1")
    copied = make_sample("r", endpoint, "1k", ok_sample().started_at, _timeline(head), prompt)
    assert copied.copy_ratio == 1.0 and copied.prompt_text is None  # judged without keeping the prompt
    thought = make_sample("r", endpoint, "1k", ok_sample().started_at, _timeline(fresh, thinking=passage), prompt)
    assert thought.copy_ratio == 0.0  # the thinking copied, the answer did not
    assert make_sample("r", endpoint, "1k", ok_sample().started_at, _timeline(passage)).copy_ratio is None


LIMITS = Timeouts(connect=2, first_token=10, idle=10, total=30)
COPYING = Workload("copying", 400, input_tokens=1000)


async def _measured(share: float, n: int, publish: bool = True) -> tuple[sim.Simulator, list[Sample]]:
    """n samples of a simulator that copies ``share`` of its answers' 8-grams from the prompt, prompts kept;
    published (the board's, whose copy ratio is judged) unless told otherwise."""
    simulator = sim.Simulator(sim.Scenario(ttft_ms=0, tokens_per_s=20_000, output_tokens=400, copy_share=share))
    options = RunOptions(n, 1, LIMITS, keep_prompts=True, seed=7, publish=publish)
    async with sim.serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url, simulated=True)
        result = await run_workload([endpoint], COPYING, options)
    return simulator, list(result.samples)


async def test_a_run_off_the_board_spends_no_cpu_on_the_copy_ratio() -> None:
    """Only the board shows copy ratios: a one-shot run left unpublished (and a load test) does not tokenize each
    prompt again for one, so that CPU stays with the timing."""
    _, samples = await _measured(0.5, 2, publish=False)
    assert [s.ok for s in samples] == [True, True] and [s.copy_ratio for s in samples] == [None, None]


@pytest.mark.parametrize("share", [0.0, 0.25, 0.5, 0.9])
async def test_the_stored_copy_ratio_is_the_simulators_scripted_share(share: float, any_store: Store) -> None:
    simulator, samples = await _measured(share, 3)
    for s in samples:
        assert s.ok and s.copy_ratio is not None, s.error_message
        truth = simulator.truth[s.timeline.response_id or ""]
        assert s.copy_ratio == text_copy_ratio(truth.text("content"), s.prompt_text or "")
        # The script copies round(share x 393) + 7 tokens of a 400-token answer: its 8-grams are share of the
        # answer's, give or take where tokens join across the canary's line and the copied run's ends.
        assert s.copy_ratio == pytest.approx(share, abs=3 / 393)
        any_store.add_sample(s)
    any_store.flush()
    stored = {s.id: s.copy_ratio for s in any_store.samples()}
    assert stored == {s.id: s.copy_ratio for s in samples}


def test_the_store_keeps_a_copy_ratio_and_refuses_one_that_is_no_share(any_store: Store) -> None:
    kept, none, wrong = (
        dataclasses.replace(ok_sample(f"run-{i}"), copy_ratio=v) for i, v in enumerate((0.375, None, 1.5))
    )
    for s in (kept, none, wrong):
        any_store.add_sample(s)
    any_store.flush()
    stored = {s.id: s.copy_ratio for s in any_store.samples()}
    assert stored == {kept.id: 0.375, none.id: None, wrong.id: None}  # 1.5 is no share: stored as no figure
