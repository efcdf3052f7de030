"""File datasets: JSONL and ShareGPT records become the requests and chats they say, and hostile files are refused."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.simkit import send
from tokenpace.errors import ConfigError
from tokenpace.prompts import datafiles, jsonrecords
from tokenpace.prompts.datafiles import FileDataset, open_file
from tokenpace.prompts.prompt import Message
from tokenpace.prompts.tokens import count_tokens


def jsonl(tmp_path: Path, *lines: Any, name: str = "p.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def sharegpt(tmp_path: Path, records: Any, indent: int | None = 2) -> Path:
    path = tmp_path / "sg.json"
    path.write_text(json.dumps(records, indent=indent, ensure_ascii=False), encoding="utf-8")
    return path


def msg(role: str, content: str) -> dict[str, str]:
    return {"role": role, "content": content}


def conv(*turns: tuple[str, str]) -> dict[str, Any]:
    return {"id": "x", "conversations": [{"from": who, "value": text} for who, text in turns]}


REPLY = "Paris is the capital of France, and it has been for a very long time."
CHAT = conv(
    ("human", "What is the capital of France?"),
    ("gpt", REPLY),
    ("human", "And of Italy?"),
    ("gpt", "Rome."),
    ("human", "Thanks!"),
)


def refused(path: Path, match: str, kind: str = "jsonl", **kw: Any) -> str:
    with pytest.raises(ConfigError, match=match) as info:
        FileDataset(path, kind, **kw).chain(0)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    return message


# --- JSONL --------------------------------------------------------------------------------------------


def test_jsonl_prompts_and_messages_become_requests(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path,
        {"prompt": "Tell me about tokens.", "output_tokens": 64},
        "",
        {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why?"}]},
        {"messages": [msg("user", "A"), msg("assistant", "B"), msg("user", "C")], "max_tokens": 9},
    )
    d = open_file("jsonl", path, default_output=100)
    assert d.size == 3 and d.name == "jsonl-p"
    (a,), (b,), (c,) = d.chain(0), d.chain(1), d.chain(2)
    assert a.prompt.messages == (Message("user", "Tell me about tokens."),) and a.prompt.max_tokens == 64
    assert a.prompt.input_tokens == count_tokens("Tell me about tokens.") and a.tag == ""
    assert [m.role for m in b.prompt.messages] == ["system", "user"] and b.prompt.max_tokens == 100
    assert [m.text for m in c.prompt.messages] == ["A", "B", "C"] and c.prompt.max_tokens == 9
    assert d.chain(3) == d.chain(0) and d.chain(3 * 1000 + 2) == d.chain(2)  # chains wrap around the file
    assert len({d.chain(i)[0].prompt.fingerprint for i in range(3)}) == 3


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("{not json", r"p.jsonl:2: not valid JSON"),
        ("[1, 2]", r":2: each line must be an object"),
        ({"text": "hi"}, r":2: give either"),
        ({"prompt": "hi", "messages": []}, r":2: give either"),
        ({"prompt": 3}, r":2: prompt must be a string, got int"),
        ({"prompt": "  "}, r":2: the prompt is empty"),
        ({"messages": "hi"}, r":2: messages must be a list"),
        ({"messages": []}, r":2: messages must be a list"),
        ({"messages": [{"role": "robot", "content": "x"}]}, r":2: each message must be"),
        ({"messages": [{"role": "user", "content": ["parts"]}]}, r":2: content must be a string"),
        ({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}, "the last message"),
        ({"prompt": "hi", "output_tokens": 0}, r":2: output_tokens must be an integer from 1 to 200000, got 0"),
        ({"prompt": "hi", "output_tokens": True}, "output_tokens must be an integer"),
        ({"prompt": "hi", "max_tokens": "9"}, "output_tokens must be an integer"),
        ({"prompt": "hi", "output_tokens": 200_001}, "output_tokens must be an integer"),
        ("[" * 100_000 + "]" * 100_000, r":2: (JSON nested too deep|not valid JSON)"),
    ],
)
def test_a_bad_jsonl_line_is_named_by_its_line(tmp_path: Path, line: Any, match: str) -> None:
    refused(jsonl(tmp_path, {"prompt": "fine"}, line), match)


def test_jsonl_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(datafiles, "MAX_TEXT_CHARS", 10)
    refused(jsonl(tmp_path, {"prompt": "x" * 11}), r":1: prompt is over 10 characters")
    monkeypatch.setattr(datafiles, "MAX_MESSAGES", 2)
    many = {"messages": [{"role": "user", "content": "q"}] * 3}
    refused(jsonl(tmp_path, many), r":1: messages must be a list of 1 to 2 messages")
    monkeypatch.setattr(datafiles, "MAX_RECORD_CHARS", 50)
    refused(jsonl(tmp_path, {"prompt": "ok"}, "x" * 60), r":2: a line over 50 bytes")
    monkeypatch.setattr(datafiles, "MAX_RECORDS", 3)
    refused(jsonl(tmp_path, *[{"prompt": "p"}] * 4), r":4: more than 3 records")
    assert FileDataset(jsonl(tmp_path, *[{"prompt": "p"}] * 3), "jsonl").size == 3


def test_a_utf8_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"prompt": "hi"}\n')
    assert FileDataset(path, "jsonl").chain(0)[0].prompt.messages[0].text == "hi"
    path.write_bytes(b'\xef\xbb\xbf[{"conversations": [{"from": "human", "value": "hi"}]}]')
    assert FileDataset(path, "sharegpt").chain(0)[0].prompt.messages[0].text == "hi"


def test_a_prompt_over_the_token_limit_is_refused_when_its_chain_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(datafiles, "MAX_PROMPT_TOKENS", 5)
    d = FileDataset(jsonl(tmp_path, {"prompt": "one two"}, {"prompt": "one two three four five six seven"}), "jsonl")
    assert d.chain(0)
    with pytest.raises(ConfigError, match=r"p.jsonl:2: a prompt of 7 tokens, over the 5 limit"):
        d.chain(1)


def test_files_that_are_missing_empty_too_big_not_regular_or_not_utf8(tmp_path: Path) -> None:
    refused(tmp_path / "none.jsonl", "cannot read it")
    refused(jsonl(tmp_path), "no prompts in it")
    refused(jsonl(tmp_path, "", "  "), "no prompts in it")
    refused(jsonl(tmp_path, {"prompt": "x" * 100}), "over the 50-byte limit", max_bytes=50)
    refused(sharegpt(tmp_path, [CHAT]), "over the 50-byte limit", "sharegpt", max_bytes=50)
    refused(tmp_path, "not a regular file")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    refused(fifo, "not a regular file")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"prompt": "ok"}\n{"prompt": "\xff\xfe"}\n')
    refused(bad, r"bad.jsonl:2: not UTF-8 text")
    bad.write_bytes(b'[{"conversations": [{"from": "human", "value": "\xff"}]}]')
    refused(bad, "not UTF-8 text", "sharegpt")


# --- ShareGPT -----------------------------------------------------------------------------------------


def test_sharegpt_first_turn_with_the_reply_length_as_max_tokens(tmp_path: Path) -> None:
    records = [
        CHAT,
        conv(("system", "You are terse."), ("human", "Hi"), ("gpt", "Hello")),
        conv(("gpt", "I speak first"), ("human", "Q1"), ("system", "late"), ("human", "Q1 more")),  # no reply
        conv(("gpt", "only the model")),  # no human turn: skipped
        {"conversations": []},
    ]
    d = open_file("sharegpt", sharegpt(tmp_path, records), default_output=77)
    assert d.size == 3 and d.name == "sharegpt-sg"
    (a,), (b,), (c,) = d.chain(0), d.chain(1), d.chain(2)
    assert a.prompt.messages == (Message("user", "What is the capital of France?"),)
    assert a.prompt.max_tokens == count_tokens(REPLY)
    assert b.prompt.messages == (Message("system", "You are terse."), Message("user", "Hi"))
    assert b.prompt.max_tokens == count_tokens("Hello")
    assert c.prompt.messages == (Message("user", "Q1\n\nQ1 more"),) and c.prompt.max_tokens == 77


def test_other_assistant_names_are_assistant_turns_and_a_wrong_kind_is_refused(tmp_path: Path) -> None:
    path = sharegpt(tmp_path, [conv(("user", "Q"), ("chatgpt", "A"), ("human", "Q2"), ("bard", "A2"))])
    chain = FileDataset(path, "sharegpt", turns=2).chain(1)
    assert [m.role for m in chain[1].prompt.messages] == ["user", "assistant", "user"]
    refused(path, "read it as jsonl or sharegpt", "csv")


def test_a_long_reply_is_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(datafiles, "REPLY_CAP", 5)
    assert FileDataset(sharegpt(tmp_path, [CHAT]), "sharegpt").chain(0)[0].prompt.max_tokens == 5


def test_sharegpt_chats_send_every_earlier_turn(tmp_path: Path) -> None:
    d = open_file("sharegpt", sharegpt(tmp_path, [CHAT]), default_output=50, turns=4)
    assert d.name == "sharegpt-sg-4turns" and d.size == 1
    chain = d.chain(0)
    assert [r.tag for r in chain] == ["turn-1", "turn-2", "turn-3"]
    assert [m.text for m in chain[2].prompt.messages] == [
        "What is the capital of France?", REPLY, "And of Italy?", "Rome.", "Thanks!"
    ]  # fmt: skip
    assert [m.role for m in chain[2].prompt.messages] == ["user", "assistant"] * 2 + ["user"]
    assert [r.prompt.max_tokens for r in chain] == [count_tokens(REPLY), count_tokens("Rome."), 50]
    for r in chain:
        assert r.prompt.input_tokens == sum(count_tokens(m.text) for m in r.prompt.messages)
    assert len(open_file("sharegpt", d.path, 50, turns=2).chain(0)) == 2


def test_a_chat_ends_before_the_turn_that_would_be_too_long(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(datafiles, "MAX_PROMPT_TOKENS", count_tokens("What is the capital of France?") + 2)
    d = FileDataset(sharegpt(tmp_path, [CHAT]), "sharegpt", turns=3)
    assert [r.tag for r in d.chain(0)] == ["turn-1"]
    monkeypatch.setattr(datafiles, "MAX_PROMPT_TOKENS", 2)
    with pytest.raises(ConfigError, match=r"sg.json:2: a prompt of 7 tokens"):
        d.chain(0)


def test_records_are_read_a_chunk_at_a_time_with_their_line_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonrecords, "CHUNK", 7)  # every record crosses several chunks
    records = [conv(("human", f"question {i} ✓"), ("gpt", "answer " * i)) for i in range(1, 30)]
    path = sharegpt(tmp_path, records)
    d = FileDataset(path, "sharegpt")
    assert [d.chain(i)[0].prompt.messages[0].text for i in range(29)] == [f"question {i} ✓" for i in range(1, 30)]
    text = path.read_text()
    broken = text.replace('"question 7 ✓"', '"question 7 ✓" oops')
    path.write_text(broken, encoding="utf-8")
    line = broken[: broken.index("oops")].count("\n") + 1
    refused(path, rf"sg.json:{line}: not valid JSON", "sharegpt")
    assert FileDataset(sharegpt(tmp_path, records, indent=None), "sharegpt").size == 29  # all on one line


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"conversations": []}', r":1: the file must hold one JSON array"),
        ("", r":1: the file must hold one JSON array"),
        ("[]", "no prompts in it"),
        ('[\n{"conversations": "hi"}]', r":2: each record must be"),
        ('[\n"text"]', r":2: each record must be"),
        ('[\n{"conversations": [{"from": "bot", "value": "x"}]}]', r":2: each turn must be"),
        ('[\n{"conversations": [{"from": "human", "value": 5}]}]', r":2: value must be a string, got int"),
        ('[\n{"conversations": [{"from": "human", "value": "x"}]} {}]', r":2: expected , or \]"),
        ('[\n{"conversations": [{"from": "human", "value": "x"}]},]', r":2: not valid JSON"),
        ('[\n{"conversations": [{"from": "human", "value": "x"}]}', r":2: expected , or \]"),
        ('[\n{"conversations": [{"from": "human", "value": "x"}', r":2: not valid JSON"),
        ('[{"conversations": [{"from": "human", "value": "x"}]}] trailing', "sg.json"),
        ("[" + "[" * 100_000 + "]" * 100_001, r"(JSON nested too deep|not valid JSON)"),
    ],
)
def test_a_bad_sharegpt_file_is_named_by_its_line(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "sg.json"
    path.write_text(text)
    if text.endswith("trailing"):  # what follows the array is never read: the records are all there
        assert FileDataset(path, "sharegpt").size == 1
        return
    refused(path, match, "sharegpt")


def test_sharegpt_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(datafiles, "MAX_MESSAGES", 4)
    refused(sharegpt(tmp_path, [CHAT]), r":2: each record must be .* at most 4 turns", "sharegpt")
    monkeypatch.setattr(datafiles, "MAX_TEXT_CHARS", 20)
    refused(sharegpt(tmp_path, [conv(("human", "x" * 21))]), r"value is over 20 characters", "sharegpt")
    monkeypatch.setattr(datafiles, "MAX_RECORDS", 2)
    refused(sharegpt(tmp_path, [conv(("human", "q"))] * 3), r"more than 2 records", "sharegpt")
    monkeypatch.setattr(datafiles, "MAX_RECORD_CHARS", 100)
    monkeypatch.setattr(jsonrecords, "CHUNK", 10)
    refused(sharegpt(tmp_path, [conv(("human", "y" * 200))]), r"an item over 100 characters", "sharegpt")


# --- end to end ---------------------------------------------------------------------------------------


async def test_file_requests_and_chats_reach_the_simulator(tmp_path: Path) -> None:
    prompts = [
        FileDataset(jsonl(tmp_path, {"prompt": "How fast is it?", "output_tokens": 5}), "jsonl").chain(0)[0].prompt,
        *(r.prompt for r in FileDataset(sharegpt(tmp_path, [CHAT]), "sharegpt", turns=3).chain(0)),
    ]
    answers = await send(prompts)
    for prompt, (timeline, truth) in zip(prompts, answers, strict=True):
        assert timeline.failure is None
        assert truth.prompt_tokens == count_tokens("".join(m.text for m in prompt.messages))
        assert truth.completion_tokens == min(20, prompt.max_tokens)
    assert answers[-1][1].prompt_tokens > answers[-2][1].prompt_tokens > answers[-3][1].prompt_tokens
