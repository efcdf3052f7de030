"""Google Gemini (``POST /v1beta/models/{model}:streamGenerateContent?alt=sse``): whole responses as SSE data.

Each event is a ``GenerateContentResponse`` holding the new parts: text, or text with ``"thought": true`` for
reasoning; its lines end with CRLF, as Google's do. Every chunk carries ``usageMetadata`` (prompt and total so
far, as Gemini sends them); the last has the ``finishReason`` and the full counts. There is no ``[DONE]``.
``role_chunk`` is an empty-text first chunk.
The same routes answer under ``/v1`` and ``/v1alpha`` (google-genai uses ``/v1`` unless told otherwise), and
``:generateContent`` answers at once. Only ``alt=sse`` streams: Gemini's streamed JSON array is not spoken.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from aiohttp import web

from tokenpace.sim.wire import Ask, Out, Wire, dumps, obj, out, same_key, sse, text_of, token_cap

_STATUS = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
_OVERLOADED = "The model is overloaded. Please try again later."
_METHODS = {"streamGenerateContent": True, "generateContent": False}


def _sse(payload: str | dict[str, Any]) -> bytes:
    """Google ends SSE lines with CRLF, as its streams do."""
    return sse(payload).replace(b"\n", b"\r\n")


def _either(doc: dict[str, Any], camel: str, snake: str) -> Any:
    """A field by its JSON name or its proto name: Google's JSON parsing accepts both."""
    return doc.get(camel, doc.get(snake))


class GeminiWire(Wire):
    name = "gemini"
    paths = ("/{version:v1beta|v1|v1alpha}/models/{target}",)
    broken_event: ClassVar[str] = '{"candidates":[{"content":{"parts":[{"text":"x'
    error_messages: ClassVar[Mapping[int, str]] = {
        400: "API key not valid. Please pass a valid API key.",
        403: "Method doesn't allow unregistered callers (callers without established identity).",
        429: "Resource has been exhausted (e.g. check quota).",
        500: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
    }

    @classmethod
    def parse(cls, request: web.Request, body: Any) -> Ask:
        model, _, method = request.match_info["target"].rpartition(":")
        if method not in _METHODS or not model:
            raise ValueError(f"Unknown method {method!r}: use :streamGenerateContent or :generateContent.")
        if _METHODS[method] and request.query.get("alt") != "sse":
            raise ValueError("The simulator streams Server-Sent Events only: add ?alt=sse.")
        body = obj(body, "body")
        if not isinstance(contents := body.get("contents"), list):
            raise ValueError("* GenerateContentRequest.contents: contents is not specified")
        system = _either(body, "systemInstruction", "system_instruction")
        config = obj(_either(body, "generationConfig", "generation_config") or {}, "generationConfig")
        cap = token_cap({"maxOutputTokens": _either(config, "maxOutputTokens", "max_output_tokens")}, "maxOutputTokens")
        return Ask(model, text_of([system], "parts") + text_of(contents, "parts"), cap, _METHODS[method])

    @classmethod
    def refuse(cls, request: web.Request, api_key: str) -> tuple[int, dict[str, Any]] | None:
        given = request.headers.get("x-goog-api-key", request.query.get("key"))
        if same_key(given, api_key):
            return None
        status = 403 if given is None else 400
        return status, cls.error_doc(status)

    @classmethod
    def error_doc(cls, status: int, message: str | None = None) -> dict[str, Any]:
        text = message or cls.error_messages.get(status, "Error")
        return {"error": {"code": status, "message": text, "status": _STATUS.get(status, "UNKNOWN")}}

    @classmethod
    def models_doc(cls, names: list[str]) -> dict[str, Any]:
        methods = ["generateContent", "streamGenerateContent", "countTokens"]
        models = [
            {"name": f"models/{n}", "version": "001", "displayName": n, "inputTokenLimit": 1_048_576,
             "outputTokenLimit": 65_536, "supportedGenerationMethods": methods}
            for n in names
        ]  # fmt: skip
        return {"models": models}

    def doc(self, parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
        if finish is not None:
            candidate["finishReason"] = finish
        doc: dict[str, Any] = {"candidates": [candidate | {"index": 0}]}
        if (usage := self.usage() if finish else self.running()) is not None:
            doc["usageMetadata"] = usage
        return doc | {"modelVersion": self.reply.model, "responseId": self.reply.truth.id}

    def running(self) -> dict[str, Any] | None:
        """The usage metadata of a chunk before the last: the prompt only, as Gemini reports it."""
        prompt = self.reply.truth.prompt_tokens
        return {"promptTokenCount": prompt, "totalTokenCount": prompt} if self.reply.usage_due else None

    def preamble(self) -> list[Out]:
        return [out(_sse(self.doc([{"text": ""}])), ("role", "model"))] if self.reply.scenario.role_chunk else []

    def token(self, kind: str, text: str) -> list[Out]:
        part = {"text": text, "thought": True} if kind == "reasoning" else {"text": text}
        return [out(_sse(self.doc([part])), (kind, text))]

    def malformed(self) -> Out:
        return out(_sse(self.broken_event), ("malformed", self.broken_event))

    def failure(self) -> Out:
        return out(_sse(self.error_doc(503, _OVERLOADED)), ("error", _OVERLOADED))

    def finish(self) -> str:
        return "MAX_TOKENS" if self.reply.capped else "STOP"

    def usage(self) -> dict[str, Any] | None:
        if not self.reply.usage_due:
            return None
        r = self.reply
        usage: dict[str, Any] = {"promptTokenCount": r.truth.prompt_tokens, "candidatesTokenCount": r.content}
        usage["totalTokenCount"] = r.truth.prompt_tokens + self.generated
        if r.truth.cached_tokens:  # part of the prompt count, and only there when some were cached
            usage["cachedContentTokenCount"] = r.truth.cached_tokens
        return usage | ({"thoughtsTokenCount": r.reasoning} if r.reasoning else {})

    def end(self) -> list[Out]:
        usage = self.usage()
        truth = ("finish", self.finish()), *([("usage", dumps(usage))] if usage else [])
        return [Out(_sse(self.doc([{"text": ""}], self.finish())), truth)]

    def whole(self) -> dict[str, Any]:
        parts = [{"text": self.text("reasoning"), "thought": True}] if self.text("reasoning") else []
        return self.doc([*parts, {"text": self.text("content")}], self.finish())
