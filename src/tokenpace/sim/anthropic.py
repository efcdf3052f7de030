"""Anthropic Messages (``POST /v1/messages``): named events around numbered content blocks.

A stream is ``message_start`` (the message, empty, with input usage), then per block ``content_block_start``,
``content_block_delta``s and ``content_block_stop`` — a ``thinking`` block (``thinking_delta``s, then a
``signature_delta``) before the ``text`` block — with ``ping``s in between, then ``message_delta`` (stop reason
and usage) and ``message_stop``. Anthropic always reports usage (its SDK needs it), so ``usage="never"``
changes nothing here. The key is taken from ``x-api-key`` or, as the official SDK (2.x) sends it, from
``Authorization: Bearer``; ``anthropic-version`` must come with it.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, ClassVar

from aiohttp import web

from tokenpace.sim.wire import Ask, Out, Reply, Wire, bearer, dumps, obj, out, same_key, sse, text_of, token_cap

PING_EVERY = 50  # deltas between pings, besides the one that opens the stream
_BLOCKS = {"reasoning": ("thinking", "thinking_delta"), "content": ("text", "text_delta")}


class AnthropicWire(Wire):
    name = "anthropic"
    paths = ("/v1/messages",)
    id_prefix = "msg_"
    broken_event: ClassVar[str] = '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x'
    error_types: ClassVar[Mapping[int, str]] = {
        400: "invalid_request_error",
        401: "authentication_error",
        404: "not_found_error",
        429: "rate_limit_error",
        529: "overloaded_error",
    }
    error_messages: ClassVar[Mapping[int, str]] = {
        401: "invalid x-api-key",
        429: "Number of requests has exceeded your rate limit.",
        500: "Internal server error",
    }

    def __init__(self, reply: Reply) -> None:
        super().__init__(reply)
        self.index = -1  # of the block being streamed
        self.open: str | None = None  # its kind
        self.sent = 0  # deltas sent, for the pings

    @classmethod
    def parse(cls, request: web.Request, body: Any) -> Ask:
        body = obj(body, "body")
        if not isinstance(model := body.get("model"), str):
            raise ValueError("model: Field required")
        if not isinstance(messages := body.get("messages"), list):
            raise ValueError("messages: Field required")
        if (cap := token_cap(body, "max_tokens")) is None:
            raise ValueError("max_tokens: Field required")
        system = body.get("system")
        prompt = system if isinstance(system, str) else text_of([{"content": system}])
        return Ask(model, prompt + text_of(messages), cap, body.get("stream") is True)

    @classmethod
    def refuse(cls, request: web.Request, api_key: str) -> tuple[int, dict[str, Any]] | None:
        if not same_key(request.headers.get("x-api-key", bearer(request)), api_key):  # the SDK sends a Bearer
            return 401, cls.error_doc(401)
        if "anthropic-version" not in request.headers:
            return 400, cls.error_doc(400, "anthropic-version: header is required")
        return None

    @classmethod
    def error_doc(cls, status: int, message: str | None = None) -> dict[str, Any]:
        text = message or cls.error_messages.get(status, "Error")
        return {"type": "error", "error": {"type": cls.error_types.get(status, "api_error"), "message": text}}

    @classmethod
    def models_doc(cls, names: list[str]) -> dict[str, Any]:
        created = "2025-01-01T00:00:00Z"
        data = [{"type": "model", "id": n, "display_name": n, "created_at": created} for n in names]
        return {"data": data, "has_more": False, "first_id": names[0], "last_id": names[-1]}

    @staticmethod
    def event(payload: dict[str, Any], *truth: tuple[str, str]) -> Out:
        """A named event (its ``type``); its truth entries (by default ("other", its type))."""
        return Out(sse(payload, payload["type"]), truth or (("other", payload["type"]),))

    def message(self, content: list[dict[str, Any]], stop: str | None, usage: dict[str, Any]) -> dict[str, Any]:
        r = self.reply
        return {
            "id": r.truth.id, "type": "message", "role": "assistant", "model": r.model, "content": content,
            "stop_reason": stop, "stop_sequence": None, "usage": usage,
        }  # fmt: skip

    def signature(self) -> str:
        return base64.b64encode(f"sim:{self.reply.truth.id}".encode()).decode()

    def start_block(self, kind: str) -> Out:
        self.open, self.index = kind, self.index + 1
        block_type = _BLOCKS[kind][0]
        block = {"type": block_type, block_type: ""}
        return self.event({"type": "content_block_start", "index": self.index, "content_block": block})

    def close_block(self) -> list[Out]:
        if self.open is None:
            return []
        events = []
        if self.open == "reasoning":
            delta = {"type": "signature_delta", "signature": self.signature()}
            events.append(self.event({"type": "content_block_delta", "index": self.index, "delta": delta}))
        self.open = None
        return [*events, self.event({"type": "content_block_stop", "index": self.index})]

    def preamble(self) -> list[Out]:
        truth = self.reply.truth
        usage = {"input_tokens": truth.uncached_tokens, "output_tokens": 1}
        usage |= {"cache_creation_input_tokens": 0, "cache_read_input_tokens": truth.cached_tokens}
        events = [self.event({"type": "message_start", "message": self.message([], None, usage)})]
        first = "reasoning" if self.reply.reasoning else "content" if self.reply.content else None
        return [*events, *([self.start_block(first)] if first else []), self.event({"type": "ping"})]

    def token(self, kind: str, text: str) -> list[Out]:
        events = [] if self.open == kind else [*self.close_block(), self.start_block(kind)]
        block_type, delta_type = _BLOCKS[kind]
        delta = {"type": delta_type, block_type: text}
        events.append(self.event({"type": "content_block_delta", "index": self.index, "delta": delta}, (kind, text)))
        self.sent += 1
        return events + ([self.event({"type": "ping"})] if self.sent % PING_EVERY == 0 else [])

    def malformed(self) -> Out:
        return out(sse(self.broken_event, "content_block_delta"), ("malformed", self.broken_event))

    def failure(self) -> Out:
        error = {"type": "overloaded_error", "message": "Overloaded"}
        return self.event({"type": "error", "error": error}, ("error", "Overloaded"))

    def finish(self) -> str:
        return "max_tokens" if self.reply.capped else "end_turn"

    def usage(self) -> dict[str, Any]:
        """Anthropic's input_tokens leave out the tokens read from its cache, reported apart (as newer servers
        repeat them in ``message_delta``)."""
        truth = self.reply.truth
        usage = {"input_tokens": truth.uncached_tokens, "output_tokens": self.generated}
        return usage | ({"cache_read_input_tokens": truth.cached_tokens} if self.reply.scenario.prefix_cache else {})

    def end(self) -> list[Out]:
        usage = self.usage()
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": self.finish(), "stop_sequence": None},
            "usage": usage,
        }
        stop = self.event(delta, ("finish", self.finish()), ("usage", dumps(usage)))
        return [*self.close_block(), stop, self.event({"type": "message_stop"}, ("done", "message_stop"))]

    def whole(self) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if thinking := self.text("reasoning"):
            content.append({"type": "thinking", "thinking": thinking, "signature": self.signature()})
        if text := self.text("content"):
            content.append({"type": "text", "text": text})
        return self.message(content, self.finish(), self.usage())
