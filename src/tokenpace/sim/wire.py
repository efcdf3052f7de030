"""What a wire protocol is to the simulator: how to read a request and the bytes of each event, never when.

The scheduling core (``stream.py``) decides *when* every event goes out and which failure to inject; a
:class:`Wire` subclass decides only *what* goes out: it turns "these reasoning tokens", "the stream ends here"
or "break the stream now" into the protocol's own events, each an :class:`Out` that also says what the truth
records for it. So a new protocol is a small formatter, and every protocol gets the same timing for free.

One :class:`Wire` instance serves one request and may keep state (block indexes, sequence numbers, the text
so far): the events of one request are made in order, on one task.
"""

from __future__ import annotations

import hmac
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from aiohttp import web

from tokenpace.sim.scenario import Scenario, Truth

KINDS = ("reasoning", "content")  # the two kinds of generated tokens, in the order they are generated


def dumps(obj: Any) -> str:
    """Compact JSON that keeps non-ASCII text as it is, as providers send it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def sse(payload: str | dict[str, Any], event: str | None = None) -> bytes:
    """One Server-Sent Event: an optional ``event:`` line, one ``data:`` line, a blank line."""
    data = payload if isinstance(payload, str) else dumps(payload)
    return (f"event: {event}\ndata: {data}\n\n" if event else f"data: {data}\n\n").encode()


def same_key(given: str | None, key: str) -> bool:
    """Constant-time comparison of a presented key with the configured one."""
    return given is not None and hmac.compare_digest(given.encode(), key.encode())


def bearer(request: web.Request) -> str | None:
    """The key in ``Authorization: Bearer KEY``, if any."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token if scheme == "Bearer" else None


def obj(value: Any, what: str) -> dict[str, Any]:
    """``value`` if it is a JSON object; ValueError naming ``what`` otherwise."""
    if not isinstance(value, dict):
        raise ValueError(f"'{what}' must be an object.")
    return value


def text_of(items: Any, key: str = "content") -> str:
    """Text of a list of messages: each item's ``key`` as a string, or the ``text`` of its parts or blocks.

    Every protocol nests prompts this way (OpenAI messages and input items, Anthropic blocks, Gemini parts);
    images and other non-text parts add nothing, as they add no o200k text tokens.
    """
    parts: list[str] = []
    for item in items if isinstance(items, list) else ():
        value = item.get(key) if isinstance(item, dict) else None
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, list):
            parts.extend(p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    return "".join(parts)


def token_cap(doc: dict[str, Any], *names: str) -> int | None:
    """The smallest of the named limits that are given; ValueError if one is not an integer >= 1."""
    caps = []
    for name in names:
        if (value := doc.get(name)) is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Invalid '{name}': expected an integer >= 1, got {value!r}.")
            caps.append(value)
    return min(caps, default=None)


@dataclass(frozen=True, slots=True)
class Ask:
    """What the core needs from a request, in any protocol."""

    model: str
    prompt: str  # the text whose o200k count is the prompt tokens
    cap: int | None = None  # most output tokens, reasoning included
    stream: bool = True
    usage_asked: bool = True  # only OpenAI's Chat and Completions make streamed usage optional


@dataclass(frozen=True, slots=True)
class Out:
    """One event as written to the socket, and the truth entries it stands for (all stamped with its send time)."""

    data: bytes
    truth: tuple[tuple[str, str], ...]


def out(data: bytes, *truth: tuple[str, str]) -> Out:
    return Out(data, truth)


@dataclass(frozen=True, slots=True)
class Reply:
    """What is settled about a reply before its first byte: all a formatter may know of the request."""

    scenario: Scenario
    truth: Truth  # its id is the response id; its events and times are the record so far
    model: str
    reasoning: int  # reasoning tokens that will be sent
    content: int  # content tokens that will be sent (10**15 when endless)
    cap: int | None  # the request's token cap
    capped: bool  # the cap cut the reply short (a "length" finish)
    usage_due: bool  # the scenario and the request agree that usage is reported
    created: int  # Unix seconds


class Wire(ABC):
    """One protocol, as one request sees it. Subclasses format; they never sleep, write or draw random numbers.

    Class-level: ``paths`` served (POST), ``parse`` of a request, ``refuse`` without the right key, and
    ``error_doc`` for HTTP errors (their usual ``error_messages``). Per request: ``preamble``, ``token``,
    ``malformed`` (sending ``broken_event``), ``failure`` and ``end`` for a stream, ``whole`` for a reply sent at
    once; ``finish`` and ``usage`` as the protocol names them.
    """

    name: ClassVar[str]
    paths: ClassVar[tuple[str, ...]]
    id_prefix: ClassVar[str] = ""
    content_type: ClassVar[str] = "text/event-stream"
    broken_event: ClassVar[str]  # what a "malformed" stream sends as one event: JSON cut mid-string
    error_messages: ClassVar[Mapping[int, str]]  # error_doc's usual message per HTTP status

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.pieces: dict[str, list[str]] = {kind: [] for kind in KINDS}  # generated text, where it is kept

    @classmethod
    @abstractmethod
    def parse(cls, request: web.Request, body: Any) -> Ask:
        """The request's model, prompt, cap and stream flag; ValueError with the provider's kind of message."""
        raise NotImplementedError

    @classmethod
    def refuse(cls, request: web.Request, api_key: str) -> tuple[int, dict[str, Any]] | None:
        """Status and body with which the provider turns away a request without the right key, else None: by
        default (OpenAI's, Ollama's) a 401 unless the Bearer token is the key."""
        return None if same_key(bearer(request), api_key) else (401, cls.error_doc(401))

    @classmethod
    @abstractmethod
    def error_doc(cls, status: int, message: str | None = None) -> dict[str, Any]:
        """An HTTP error body in the provider's shape; without a message, its usual one for that status."""
        raise NotImplementedError

    @classmethod
    @abstractmethod
    def models_doc(cls, names: list[str]) -> dict[str, Any]:
        """The provider's model listing."""
        raise NotImplementedError

    def preamble(self) -> list[Out]:
        """Token-free events that open the stream: sent at once with ``role_chunk``, else just before the first
        token (never dropped where the protocol requires them)."""
        return []

    @abstractmethod
    def token(self, kind: str, text: str) -> list[Out]:
        """The events that carry these tokens, with whatever the protocol opens or closes around them.

        Only a protocol that repeats the text later (Responses' ``*.done`` events) keeps it: an endless stream
        must not grow.
        """

    def keep(self, kind: str, text: str) -> None:
        self.pieces[kind].append(text)

    def text(self, kind: str) -> str:
        """The text kept so far of one kind."""
        return "".join(self.pieces[kind])

    @abstractmethod
    def malformed(self) -> Out:
        """An event whose JSON is cut short, in the protocol's framing."""
        raise NotImplementedError

    @abstractmethod
    def failure(self) -> Out:
        """The error event a provider sends when generation fails mid-stream."""
        raise NotImplementedError

    @abstractmethod
    def end(self) -> list[Out]:
        """What closes a stream that ran to the end: finish reason, usage, terminator."""
        raise NotImplementedError

    @abstractmethod
    def whole(self) -> dict[str, Any]:
        """The non-streamed reply document, from the text kept."""
        raise NotImplementedError

    @abstractmethod
    def finish(self) -> str:
        """The finish (stop) reason as the protocol spells it."""
        raise NotImplementedError

    @abstractmethod
    def usage(self) -> dict[str, Any] | None:
        """The usage object as the protocol carries it at the end, or None when it is not reported."""
        raise NotImplementedError

    @property
    def generated(self) -> int:
        """Output tokens reported, reasoning included: one per word sent."""
        return self.reply.reasoning + self.reply.content
