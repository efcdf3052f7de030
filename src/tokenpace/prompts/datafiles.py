"""Load-test prompts from a file: JSONL records, or ShareGPT conversations as single requests or as chats.

JSONL: one JSON object a line, ``{"prompt": "..."}`` or ``{"messages": [{"role": ..., "content": "..."}]}``
(roles system, user, assistant; the last one a user's), with an optional ``output_tokens`` (or
``max_tokens``) integer. ShareGPT: one JSON array of ``{"conversations": [{"from": "human"|"gpt"|"system",
"value": "..."}]}``, read record by record so a file of hundreds of MB never sits in memory as one object.
A conversation's first human turn is one request, whose max_tokens is the o200k count of the reply that
followed it (capped); ``turns`` makes each conversation a chain of up to that many turns instead, turn k
sending the earlier human and gpt turns and the k-th human one. Records without a human turn are skipped.

Files are hostile: their size, a line's or record's size, the records, the messages and each text are
bounded, and a bad record is a one-line ConfigError naming the file and its line. A prompt's tokens are
counted when its chain is built: one over MAX_PROMPT_TOKENS is refused there (a chat just ends before it).
Chain i is record i mod the record count, in file order. Records are checked when the file is opened, and
only their byte spans kept: a chain's record is read again when the chain is built, so a 1 GB file costs a
few MB, not several GB of strings.
"""

from __future__ import annotations

import array
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokenpace.errors import ConfigError
from tokenpace.prompts import jsonrecords
from tokenpace.prompts.chains import Chain, Request
from tokenpace.prompts.jsonrecords import bad
from tokenpace.prompts.prompt import Message, chat_prompt
from tokenpace.prompts.tokens import count_tokens

MAX_FILE_BYTES = 1 << 30  # ShareGPT_V3_unfiltered_cleaned_split.json, vLLM's default, is 642 MB
MAX_RECORD_CHARS = 16 << 20  # one JSONL line (bytes) or one ShareGPT record (characters)
MAX_TEXT_CHARS = 4 << 20  # one message's text; tokens are bounded when counted
MAX_RECORDS = 200_000
MAX_MESSAGES = 1_000  # in one record
MAX_PROMPT_TOKENS = 200_000
MAX_OUTPUT_TOKENS = 200_000  # a record's own output_tokens
REPLY_CAP = 4_096  # max_tokens taken from a recorded reply's length, at most
_ROLES = ("system", "user", "assistant")
_SHAREGPT_ROLES = {
    **dict.fromkeys(("human", "user"), "user"),
    **dict.fromkeys(("gpt", "assistant", "chatgpt", "bing", "bard", "model"), "assistant"),  # as dumps name them
    "system": "system",
}

ChatTurn = tuple[str, str]  # (role, text)


@dataclass(frozen=True, slots=True)
class _Record:
    line: int
    turns: tuple[ChatTurn, ...]  # system first if any, then user and assistant turns alternating from a user's
    output_tokens: int | None = None  # the record's own, or None: its reply's length, else the default


def _text(path: Path, line: int, value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise bad(path, line, f"{what} must be a string, got {type(value).__name__}")
    if len(value) > MAX_TEXT_CHARS:
        raise bad(path, line, f"{what} is over {MAX_TEXT_CHARS} characters")
    try:
        value.encode()  # JSON's "\ud800" decodes to a lone surrogate, which no request body can carry
    except UnicodeEncodeError as exc:
        raise bad(
            path, line, f"{what} holds a lone surrogate (\\u{ord(value[exc.start]):x}), which is not text"
        ) from None
    return value


def _jsonl_record(path: Path, line: int, doc: Any) -> _Record:
    """A JSONL line's record: its messages, its own output tokens if given."""
    if not isinstance(doc, dict):
        raise bad(path, line, 'each line must be an object with "prompt" or "messages"')
    output = doc.get("output_tokens", doc.get("max_tokens"))
    if output is not None and (
        isinstance(output, bool) or not isinstance(output, int) or not 1 <= output <= MAX_OUTPUT_TOKENS
    ):
        raise bad(path, line, f"output_tokens must be an integer from 1 to {MAX_OUTPUT_TOKENS}, got {output!r}")
    if ("prompt" in doc) == ("messages" in doc):
        raise bad(path, line, 'give either "prompt" (a string) or "messages" (a list), not both or neither')
    if "prompt" in doc:
        turns: tuple[ChatTurn, ...] = (("user", _text(path, line, doc["prompt"], "prompt")),)
    else:
        messages = doc["messages"]
        if not isinstance(messages, list) or not messages or len(messages) > MAX_MESSAGES:
            raise bad(path, line, f"messages must be a list of 1 to {MAX_MESSAGES} messages")
        turns = tuple(_chat_message(path, line, m) for m in messages)
        if turns[-1][0] != "user":
            raise bad(path, line, "the last message must be the user's")
    if not any(text.strip() for _, text in turns):
        raise bad(path, line, "the prompt is empty")
    return _Record(line, turns, output)


def _chat_message(path: Path, line: int, m: Any) -> ChatTurn:
    if not isinstance(m, dict) or m.get("role") not in _ROLES:
        raise bad(path, line, f'each message must be {{"role": one of {", ".join(_ROLES)}, "content": "..."}}')
    return m["role"], _text(path, line, m.get("content"), "content")


def _sharegpt_record(path: Path, line: int, doc: Any) -> _Record | None:
    """A conversation as system, then alternating user and assistant turns; None when it has no human turn.

    Consecutive turns of one speaker are joined, empty ones dropped, and anything before the first human
    turn but a system prompt, or a system turn after it, left out.
    """
    conversation = doc.get("conversations") if isinstance(doc, dict) else None
    if not isinstance(conversation, list) or len(conversation) > MAX_MESSAGES:
        raise bad(path, line, f'each record must be {{"conversations": [...]}} with at most {MAX_MESSAGES} turns')
    turns: list[list[str]] = []
    started = False  # a human turn has come
    for turn in conversation:
        speaker = turn.get("from") if isinstance(turn, dict) else None
        if speaker not in _SHAREGPT_ROLES:
            raise bad(path, line, f'each turn must be {{"from": one of {", ".join(_SHAREGPT_ROLES)}, "value": "..."}}')
        role, text = _SHAREGPT_ROLES[speaker], _text(path, line, turn.get("value"), "value")
        if not text.strip() or (role == "system" and started) or (role == "assistant" and not started):
            continue
        started = started or role == "user"
        if turns and turns[-1][0] == role:
            turns[-1][1] += "\n\n" + text
        else:
            turns.append([role, text])
    if not started:
        return None
    return _Record(line, tuple((role, text) for role, text in turns))


@dataclass(frozen=True)
class FileDataset:
    """A file's records as chains: one request each, or (``turns`` > 0, ShareGPT) one chat each."""

    path: Path
    kind: str  # "jsonl" or "sharegpt"
    default_output: int = 256
    turns: int = 0  # 0: single requests
    max_bytes: int = MAX_FILE_BYTES
    _lines: array.array[int] = field(init=False, repr=False)  # each record's line, for errors
    _starts: array.array[int] = field(init=False, repr=False)  # each record's byte span in the file
    _ends: array.array[int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        """Read the file once, checking every record, and keep only where each one is (a few MB at most)."""
        if self.kind not in ("jsonl", "sharegpt") or self.turns < 0:
            raise ConfigError(f"{self.path}: read it as jsonl or sharegpt with turns >= 0, not {self.kind!r}")
        lines, starts, ends = array.array("L"), array.array("Q"), array.array("Q")
        with jsonrecords.open_bounded(self.path, self.max_bytes) as f:
            read = jsonrecords.json_lines if self.kind == "jsonl" else jsonrecords.array_items
            for n, doc, (start, end) in read(self.path, f, self.max_bytes, MAX_RECORD_CHARS):
                if self._record(n, doc) is None:
                    continue
                if len(lines) == MAX_RECORDS:
                    raise bad(self.path, n, f"more than {MAX_RECORDS} records; keep fewer in the file")
                lines.append(n)
                starts.append(start)
                ends.append(end)
        if not lines:
            raise ConfigError(f'{self.path}: no prompts in it; give {{"prompt": "..."}} lines or ShareGPT records')
        for name, value in (("_lines", lines), ("_starts", starts), ("_ends", ends)):
            object.__setattr__(self, name, value)

    def _record(self, line: int, doc: Any) -> _Record | None:
        if self.kind == "jsonl":
            return _jsonl_record(self.path, line, doc)
        return _sharegpt_record(self.path, line, doc)

    def _read(self, k: int) -> _Record:
        """Record ``k``, read again from its span: the file is not held, and was checked when opened."""
        line = self._lines[k]
        record = self._record(line, jsonrecords.read_span(self.path, line, (self._starts[k], self._ends[k])))
        if record is None:
            raise bad(self.path, line, "the record changed since the file was read")
        return record

    @property
    def name(self) -> str:
        stem = re.sub(r"[^\w.-]+", "_", self.path.stem)[:32]
        return f"{self.kind}-{stem}" + (f"-{self.turns}turns" if self.turns else "")

    @property
    def size(self) -> int | None:
        return len(self._lines)

    def chain(self, i: int) -> Chain:
        record = self._read(i % len(self._lines))
        if self.turns:
            return self._chat(record)
        cut = next(k for k, (role, _) in enumerate(record.turns) if role == "user") + 1
        if self.kind == "jsonl":
            cut = len(record.turns)
        messages = [Message(role, text) for role, text in record.turns[:cut]]
        reply = record.turns[cut][1] if cut < len(record.turns) else None
        prompt = chat_prompt(messages, record.output_tokens or self._output(reply))
        self._check(record, prompt.input_tokens)
        return (Request(prompt),)

    def _output(self, reply: str | None) -> int:
        """The recorded reply's o200k count, at most REPLY_CAP; the default when there is none."""
        n = count_tokens(reply) if reply else 0
        return min(n, REPLY_CAP) if n else self.default_output

    def _check(self, record: _Record, tokens: int) -> None:
        if tokens > MAX_PROMPT_TOKENS:
            raise bad(self.path, record.line, f"a prompt of {tokens} tokens, over the {MAX_PROMPT_TOKENS} limit")

    def _chat(self, record: _Record) -> Chain:
        """Up to ``turns`` requests, turn k holding every turn before its user turn; ends before an oversize one."""
        messages: list[Message] = []
        counts: list[int] = []
        out: list[Request] = []
        turns = record.turns
        for k, (role, text) in enumerate(turns):
            messages.append(Message(role, text))
            counts.append(count_tokens(text))
            if role != "user":
                continue
            if sum(counts) > MAX_PROMPT_TOKENS and out:
                break
            self._check(record, sum(counts))
            reply = turns[k + 1][1] if k + 1 < len(turns) else None
            out.append(Request(chat_prompt(messages, self._output(reply), counts), f"turn-{len(out) + 1}"))
            if len(out) == self.turns:
                break
        return tuple(out)


def open_file(kind: str, path: str | os.PathLike[str], default_output: int, turns: int = 0) -> FileDataset:
    """The dataset of a JSONL (``kind`` "jsonl") or ShareGPT ("sharegpt") file."""
    return FileDataset(Path(path), kind, default_output, turns)
