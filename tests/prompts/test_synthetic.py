"""Synthetic datasets: sizes on target, one chain per (seed, i), nothing shared but what is meant to be."""

from __future__ import annotations

import itertools
import random
import time

import pytest

from tests.simkit import send
from tokenpace.clients.openai_completions import completion_text
from tokenpace.config.endpoints import PROTOCOLS
from tokenpace.config.presets import ProtocolName
from tokenpace.errors import ConfigError
from tokenpace.prompts.chains import Chain, Dataset
from tokenpace.prompts.corpus import Document
from tokenpace.prompts.synthetic import (
    MAX_TOKENS,
    MIN_INPUT,
    Lengths,
    MultiTurn,
    SharedPrefix,
    Synthetic,
    slack,
)
from tokenpace.prompts.tokens import count_tokens

OUT = Lengths(200)


def first_text(chain: Chain) -> str:
    return chain[0].prompt.messages[0].text


def shared_start(texts: list[str]) -> str:
    """The longest start all ``texts`` have in common."""
    n = 0
    while all(n < len(t) and t[n] == texts[0][n] for t in texts):
        n += 1
    return texts[0][:n]


def common(a: str, b: str) -> int:
    return len(shared_start([a, b]))


@pytest.mark.parametrize("target", [MIN_INPUT, 100, 1_000, 10_000, 150_000])
def test_prompt_sizes_are_on_target_and_counted_exactly(target: int) -> None:
    d = Synthetic(Lengths(target, minimum=MIN_INPUT), OUT, seed=3)
    for i in range(3 if target > 10_000 else 30):
        (request,) = d.chain(i)
        p = request.prompt
        assert p.input_tokens == count_tokens(p.messages[0].text)
        assert abs(p.input_tokens - target) <= slack(target), (i, p.input_tokens)
        assert p.max_tokens == 200 and request.tag == ""


def test_a_corpus_smaller_than_the_prompt_is_gone_round_as_often_as_needed() -> None:
    d = Synthetic(Lengths(2_000), OUT, seed=1, corpus=(Document("t", "A short document, said once."),))
    p = d.chain(0)[0].prompt
    assert abs(p.input_tokens - 2_000) <= slack(2_000)
    assert p.messages[0].text.count("A short document") > 200


def test_an_empty_corpus_is_refused() -> None:
    with pytest.raises(ConfigError, match="no documents"):
        Synthetic(Lengths(100), OUT, seed=1, corpus=())


def test_same_seed_and_index_same_chain_and_different_otherwise() -> None:
    a = Synthetic(Lengths(500, 100, minimum=MIN_INPUT), Lengths(100, 30), seed=7)
    b = Synthetic(Lengths(500, 100, minimum=MIN_INPUT), Lengths(100, 30), seed=7)
    assert [a.chain(i) for i in range(5)] == [b.chain(i) for i in reversed(range(5))][::-1]
    other = Synthetic(Lengths(500, 100, minimum=MIN_INPUT), Lengths(100, 30), seed=8)
    assert a.chain(0)[0].prompt.fingerprint != other.chain(0)[0].prompt.fingerprint


def test_chains_share_no_prefix_beyond_a_few_nonce_characters() -> None:
    texts = [first_text(Synthetic(Lengths(300), OUT, seed=5).chain(i)) for i in range(60)]
    assert max(common(a, b) for a, b in itertools.combinations(texts, 2)) < 6


def test_lengths_follow_their_distribution_and_stay_clamped() -> None:
    rng = random.Random(1)
    normal = [Lengths(1000, 100).draw(rng) for _ in range(4000)]
    assert sum(normal) / len(normal) == pytest.approx(1000, rel=0.02)
    sd = (sum((n - 1000) ** 2 for n in normal) / len(normal)) ** 0.5
    assert sd == pytest.approx(100, rel=0.1)
    uniform = [Lengths(1000, low=800, high=1200).draw(rng) for _ in range(2000)]
    assert min(uniform) == 800 and max(uniform) == 1200
    assert min(Lengths(40, 1000, minimum=32).draw(rng) for _ in range(500)) == 32
    assert max(Lengths(MAX_TOKENS, 50_000).draw(rng) for _ in range(500)) == MAX_TOKENS


def test_drawn_lengths_vary_per_request() -> None:
    d = Synthetic(Lengths(400, low=300, high=600, minimum=MIN_INPUT), Lengths(100, low=10, high=300), seed=2)
    prompts = [d.chain(i)[0].prompt for i in range(20)]
    assert len({p.max_tokens for p in prompts}) > 10
    assert all(300 - slack(300) <= p.input_tokens <= 600 + slack(600) for p in prompts)
    assert d.name == "synthetic-300-600/10-300"
    assert Synthetic(Lengths(1000, 100), Lengths(200), 1).name == "synthetic-1000~100/200"


def test_a_1k_prompt_costs_a_few_milliseconds() -> None:
    d = Synthetic(Lengths(1000), OUT, seed=4)
    d.chain(0)
    start = time.perf_counter()
    for i in range(1, 51):
        d.chain(i)
    per_prompt = (time.perf_counter() - start) / 50
    assert per_prompt < 0.02  # ~1 ms on one core; generous for a shared noisy machine


def test_prefix_groups_share_their_prefix_exactly_and_nothing_across_groups() -> None:
    d = SharedPrefix(prefix=1_000, suffix=100, per_group=4, output=Lengths(50), seed=9)
    assert d.name == "prefix-1000+100x4/50" and d.size is None
    groups = [d.chain(i) for i in range(3)]
    for chain in groups:
        assert [r.tag for r in chain] == ["prefix-miss", "prefix-hit", "prefix-hit", "prefix-hit"]
        texts = [r.prompt.messages[0].text for r in chain]
        shared = shared_start(texts)
        assert abs(count_tokens(shared) - 1_000) <= slack(1_000) + 1
        # Past the shared prefix each suffix starts with its own nonce: two share a few hex digits at most.
        assert max(common(a, b) for a, b in itertools.combinations(texts, 2)) < len(shared) + 6
        for r in chain:
            assert abs(r.prompt.input_tokens - 1_100) <= slack(1_100) + 2
            assert r.prompt.max_tokens == 50
    firsts = [first_text(c) for c in groups]
    assert max(common(a, b) for a, b in itertools.combinations(firsts, 2)) < 6
    assert d.chain(1) == groups[1]


def test_a_multiturn_chain_carries_every_earlier_turn() -> None:
    d = MultiTurn(turns=4, input=Lengths(200, minimum=MIN_INPUT), output=Lengths(80), seed=11)
    assert d.name == "multiturn-4x200/80"
    chain = d.chain(0)
    assert [r.tag for r in chain] == ["turn-1", "turn-2", "turn-3", "turn-4"]
    for k, r in enumerate(chain):
        roles = [m.role for m in r.prompt.messages]
        assert roles == ["user", "assistant"] * k + ["user"]
        assert r.prompt.messages[: 2 * k] == chain[-1].prompt.messages[: 2 * k]  # each turn extends the last
        assert r.prompt.input_tokens == sum(count_tokens(m.text) for m in r.prompt.messages)
        assert abs(r.prompt.input_tokens - (200 * (k + 1) + 80 * k)) <= 3 * (k + 1) * 2
        assert r.prompt.max_tokens == 80
    replies = [m.text for m in chain[-1].prompt.messages if m.role == "assistant"]
    assert all(abs(count_tokens(t) - 80) <= slack(80) for t in replies)
    others = [first_text(d.chain(i)) for i in range(1, 20)]
    assert max(common(first_text(chain), t) for t in others) < 6
    assert d.chain(0) == chain


def test_every_synthetic_kind_is_a_dataset() -> None:
    kinds: list[Dataset] = [
        Synthetic(OUT, OUT, 1),
        SharedPrefix(100, 100, 2, OUT, 1),
        MultiTurn(2, Lengths(100), OUT, 1),
    ]
    assert all(k.size is None and k.chain(0) for k in kinds)


async def test_synthetic_and_prefix_requests_reach_the_simulator() -> None:
    chains = [Synthetic(Lengths(300), Lengths(7), 1).chain(0), SharedPrefix(400, 50, 3, Lengths(30), 1).chain(0)]
    prompts = [r.prompt for chain in chains for r in chain]
    for prompt, (timeline, truth) in zip(prompts, await send(prompts), strict=True):
        assert timeline.failure is None
        assert truth.prompt_tokens == prompt.input_tokens
        assert truth.completion_tokens == min(20, prompt.max_tokens)  # max_tokens arrived: 7 caps FAST's 20


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_every_turn_of_a_chat_reaches_the_simulator_in_every_protocol(protocol: ProtocolName) -> None:
    chain = MultiTurn(3, Lengths(100), Lengths(40), seed=2).chain(0)
    prompts = [r.prompt for r in chain]
    for prompt, (timeline, truth) in zip(prompts, await send(prompts, protocol), strict=True):
        assert timeline.failure is None, timeline.failure
        if protocol == "openai-completions":
            assert truth.prompt_tokens == count_tokens(completion_text(prompt.messages))
        else:  # the server counts all the messages' text, joined: every turn arrived
            assert truth.prompt_tokens == count_tokens("".join(m.text for m in prompt.messages))
            assert abs(truth.prompt_tokens - prompt.input_tokens) <= len(prompt.messages)
    assert truth.prompt_tokens > 2 * 100 + 2 * 40
