"""OpenAI Chat Completions (``POST /v1/chat/completions``), and what all three OpenAI protocols share.

A stream is ``data:`` chunks of ``chat.completion.chunk``: an empty role delta first, token deltas (reasoning
in ``reasoning_content`` or ``reasoning``, as DeepSeek/vLLM and OpenRouter/Groq name it), a chunk with the
finish reason, a usage chunk with ``choices: []`` when ``stream_options.include_usage`` asks, ``[DONE]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from aiohttp import web

from tokenpace.sim.scenario import DEFAULT_MODEL
from tokenpace.sim.wire import Ask, Out, Reply, Wire, dumps, obj, out, sse, text_of, token_cap


def model_of(body: dict[str, Any]) -> str:
    if not isinstance(model := body.get("model", DEFAULT_MODEL), str):
        raise ValueError("'model' must be a string.")
    return model


def usage_asked(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


class OpenAIWire(Wire):
    """OpenAI's key check, error shape and model list, shared by Chat, Completions and Responses."""

    broken_event: ClassVar[str] = '{"choices": [{"delta": {"content": "x"'
    error_types: ClassVar[Mapping[int, tuple[str, str | None]]] = {
        400: ("invalid_request_error", None),
        401: ("invalid_request_error", "invalid_api_key"),
        404: ("invalid_request_error", None),
        429: ("rate_limit_error", "rate_limit_exceeded"),
    }
    error_messages: ClassVar[Mapping[int, str]] = {
        401: "Incorrect API key provided.",
        429: "Rate limit reached for requests",
        500: "The server had an error while processing your request.",
    }

    @classmethod
    def error_doc(cls, status: int, message: str | None = None) -> dict[str, Any]:
        """OpenAI's error shape: SDKs read ``error.message`` and ``error.type`` from it."""
        type_, code = cls.error_types.get(status, ("server_error", None))
        text = message or cls.error_messages.get(status, "Error.")
        return {"error": {"message": text, "type": type_, "param": None, "code": code}}

    @classmethod
    def models_doc(cls, names: list[str]) -> dict[str, Any]:
        data = [{"id": n, "object": "model", "created": 0, "owned_by": "tokenpace"} for n in names]
        return {"object": "list", "data": data}

    def usage(self) -> dict[str, Any] | None:
        if not self.reply.usage_due:
            return None
        r = self.reply
        usage: dict[str, Any] = {"prompt_tokens": r.truth.prompt_tokens, "completion_tokens": self.generated}
        usage["total_tokens"] = r.truth.prompt_tokens + self.generated
        if r.scenario.prefix_cache:  # prompt tokens include the cached ones
            usage["prompt_tokens_details"] = {"cached_tokens": r.truth.cached_tokens}
        if r.reasoning:
            usage["completion_tokens_details"] = {"reasoning_tokens": r.reasoning}
        return usage

    def finish(self) -> str:
        return "length" if self.reply.capped else "stop"

    def malformed(self) -> Out:
        return out(sse(self.broken_event), ("malformed", self.broken_event))

    def failure(self) -> Out:
        error = {"error": {"message": "upstream overloaded", "type": "server_error"}}
        return out(sse(error), ("error", "upstream overloaded"))


class ChatWire(OpenAIWire):
    name = "openai-chat"
    paths = ("/v1/chat/completions",)
    id_prefix = "chatcmpl-"

    def __init__(self, reply: Reply) -> None:
        super().__init__(reply)
        self.head: dict[str, Any] = {"id": reply.truth.id, "object": "chat.completion.chunk", "created": reply.created}
        self.head |= {"model": reply.model, "system_fingerprint": None}
        self.tail = {"usage": None} if reply.usage_due else {}  # as OpenAI does when usage was asked for

    @classmethod
    def parse(cls, request: web.Request, body: Any) -> Ask:
        body = obj(body, "body")
        if not isinstance(messages := body.get("messages"), list):
            raise ValueError("'messages' is a required property and must be a list.")
        cap = token_cap(body, "max_tokens", "max_completion_tokens")
        return Ask(model_of(body), text_of(messages), cap, body.get("stream") is True, usage_asked(body))

    def chunk(self, delta: dict[str, str], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return sse({**self.head, "choices": [choice], **self.tail})

    def preamble(self) -> list[Out]:
        if not self.reply.scenario.role_chunk:
            return []
        return [out(self.chunk({"role": "assistant", "content": ""}), ("role", "assistant"))]

    def token(self, kind: str, text: str) -> list[Out]:
        field = self.reply.scenario.reasoning_field if kind == "reasoning" else "content"
        return [out(self.chunk({field: text}), (kind, text))]

    def end(self) -> list[Out]:
        events = [out(self.chunk({}, self.finish()), ("finish", self.finish()))]
        if (usage := self.usage()) is not None:
            events.append(out(sse({**self.head, "choices": [], "usage": usage}), ("usage", dumps(usage))))
        return [*events, out(sse("[DONE]"), ("done", "[DONE]"))]

    def whole(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.text("content"), "refusal": None}
        if self.text("reasoning"):
            message[self.reply.scenario.reasoning_field] = self.text("reasoning")
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": self.finish()}
        doc = {**self.head, "object": "chat.completion", "choices": [choice]}
        if (usage := self.usage()) is not None:
            doc["usage"] = usage
        return doc
