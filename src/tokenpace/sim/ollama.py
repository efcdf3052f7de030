"""Ollama's native chat (``POST /api/chat``): newline-delimited JSON, streamed unless ``"stream": false``.

Each line is a chat response with the new text in ``message.content`` (reasoning in ``message.thinking``); the
last has ``"done": true``, the done reason, the token counts and Ollama's timings in nanoseconds — here the
simulator's own: ``prompt_eval_duration`` from request to first token, ``eval_duration`` from first token to
last. Ollama has no response id, so the truth's id travels only in the ``x-request-id`` header, and no
token-free opening line, so ``role_chunk`` changes nothing here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

from aiohttp import web

from tokenpace.sim.scenario import DEFAULT_MODEL
from tokenpace.sim.wire import KINDS, Ask, Out, Wire, dumps, obj, out

OLLAMA_VERSION = "0.12.0"  # what GET /api/version reports


def _created_at() -> str:
    """Ollama's ``created_at``: RFC 3339, UTC."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _line(doc: dict[str, Any]) -> bytes:
    return (dumps(doc) + "\n").encode()


def _cap(body: dict[str, Any]) -> int | None:
    """``options.num_predict``: a positive cap, or none (Ollama's -1 and -2 mean as many as fit)."""
    value = obj(body.get("options") or {}, "options").get("num_predict")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(f"option num_predict must be an integer, got {value!r}")
    return value if value is not None and value > 0 else None


class OllamaWire(Wire):
    name = "ollama"
    paths = ("/api/chat",)
    content_type = "application/x-ndjson"
    broken_event: ClassVar[str] = '{"model":"sim","message":{"role":"assistant","content":"x'
    error_messages: ClassVar[Mapping[int, str]] = {
        401: "unauthorized",
        429: "too many requests",
        500: "llama runner process has terminated",
    }

    @classmethod
    def parse(cls, request: web.Request, body: Any) -> Ask:
        body = obj(body, "body")
        if not isinstance(model := body.get("model", DEFAULT_MODEL), str) or not model:
            raise ValueError("model is required")
        messages = body.get("messages") or []
        if not isinstance(messages, list):
            raise ValueError("messages must be a list")
        if not isinstance(stream := body.get("stream", True), bool):
            raise ValueError("stream must be a boolean")
        prompt = "".join(m["content"] for m in messages if isinstance(m, dict) and isinstance(m.get("content"), str))
        return Ask(model, prompt, _cap(body), stream)

    @classmethod
    def error_doc(cls, status: int, message: str | None = None) -> dict[str, Any]:
        return {"error": message or cls.error_messages.get(status, "error")}

    @classmethod
    def models_doc(cls, names: list[str]) -> dict[str, Any]:
        details = {"format": "gguf", "family": "sim", "parameter_size": "0B", "quantization_level": "none"}
        models = [
            {"name": n, "model": n, "modified_at": "2025-01-01T00:00:00Z", "size": 0, "digest": "0" * 64,
             "details": details}
            for n in names
        ]  # fmt: skip
        return {"models": models}

    def chunk(self, message: dict[str, str]) -> dict[str, Any]:
        return {"model": self.reply.model, "created_at": _created_at(), "message": {"role": "assistant", **message}}

    def token(self, kind: str, text: str) -> list[Out]:
        message = {"content": text} if kind == "content" else {"content": "", "thinking": text}
        return [out(_line({**self.chunk(message), "done": False}), (kind, text))]

    def malformed(self) -> Out:
        return out((self.broken_event + "\n").encode(), ("malformed", self.broken_event))

    def failure(self) -> Out:
        message = "an error was encountered while running the model: upstream overloaded"
        return out(_line({"error": message}), ("error", message))

    def finish(self) -> str:
        return "length" if self.reply.capped else "stop"

    def usage(self) -> dict[str, Any] | None:
        if not self.reply.usage_due:
            return None
        return {"prompt_eval_count": self.reply.truth.prompt_tokens, "eval_count": self.generated}

    def last(self, message: dict[str, str], first_ns: int, last_ns: int) -> dict[str, Any]:
        """The closing document; token times on perf_counter_ns, as the truth keeps them."""
        received = self.reply.truth.t_received_ns
        doc = {**self.chunk(message), "done": True, "done_reason": self.finish()}
        load = self.reply.truth.cold_start_ns  # loading the model after it scaled to zero, as Ollama
        doc |= {"total_duration": time.perf_counter_ns() - received, "load_duration": load}
        doc |= {"prompt_eval_duration": first_ns - received - load, "eval_duration": last_ns - first_ns}
        return doc | (self.usage() or {})

    def end(self) -> list[Out]:
        sent = [t for t, kind, _ in self.reply.truth.events if kind in KINDS]
        first, last = (sent[0], sent[-1]) if sent else (time.perf_counter_ns(),) * 2
        doc = self.last({"content": ""}, first, last)
        usage = self.usage()
        truth = [("finish", self.finish()), *([("usage", dumps(usage))] if usage else []), ("done", "done")]
        return [Out(_line(doc), tuple(truth))]

    def whole(self) -> dict[str, Any]:
        message = {"content": self.text("content")} | ({"thinking": t} if (t := self.text("reasoning")) else {})
        s, now = self.reply.scenario, time.perf_counter_ns()
        truth = self.reply.truth
        load = truth.cold_start_ns
        first = s.first_token_ns(truth.prompt_tokens, truth.cached_tokens)
        return self.last(message, truth.t_received_ns + load + first, now)
