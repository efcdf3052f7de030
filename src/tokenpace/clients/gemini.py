"""Google Gemini streaming (``POST /models/{model}:streamGenerateContent?alt=sse``): whole responses as SSE data.

Each event is a ``GenerateContentResponse`` holding the new parts: text parts (``thought: true`` marks
reasoning), function calls, or nothing new (an empty part, a bare thought signature). The stream has no
``[DONE]``: a candidate's ``finishReason`` is its terminator, and ``usageMetadata`` rides along (output
tokens are ``candidatesTokenCount`` plus ``thoughtsTokenCount``). The key travels in ``x-goog-api-key``,
never as the ``?key=`` query parameter.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from tokenpace.clients import sse
from tokenpace.clients.base import Decoded, HttpRequest, WireProtocol, json_request
from tokenpace.config.endpoints import Endpoint
from tokenpace.measure.timing import EventKind, Recording, Timeline, Usage
from tokenpace.prompts.image import base64_text
from tokenpace.prompts.prompt import Message, Prompt


def _gemini_content(m: Message) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": m.text}]
    parts += [{"inline_data": {"mime_type": "image/png", "data": base64_text(png)}} for png in m.images]
    return {"role": "model" if m.role == "assistant" else "user", "parts": parts}


def _gemini_usage(d: Decoded, meta: dict[str, Any]) -> Usage:
    """Output is candidates plus thoughts; the prompt count includes ``cachedContentTokenCount``."""
    candidates = d.count("candidatesTokenCount", meta.get("candidatesTokenCount"))
    thoughts = d.count("thoughtsTokenCount", meta.get("thoughtsTokenCount"))
    output = None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
    cached = d.count("cachedContentTokenCount", meta.get("cachedContentTokenCount"))
    return Usage(d.count("promptTokenCount", meta.get("promptTokenCount")), output, thoughts, cached)


def _parts(d: Decoded, t_ns: int, candidate: dict[str, Any]) -> None:
    for part in (candidate.get("content") or {}).get("parts") or ():
        text, call = part.get("text"), part.get("functionCall")
        if isinstance(text, str) and text:
            d.add(t_ns, EventKind.REASONING if part.get("thought") else EventKind.CONTENT, text)
        elif isinstance(call, dict):
            args = json.dumps(call.get("args") or {}, ensure_ascii=False)
            d.add(t_ns, EventKind.TOOL_CALL, (call.get("name") or "") + args)


class Gemini(WireProtocol):
    name = "gemini"
    default_base = "/v1beta"

    def request(self, endpoint: Endpoint, prompt: Prompt) -> HttpRequest:
        """System messages become ``systemInstruction``; images are ``inline_data`` parts beside the text."""
        body: dict[str, Any] = {
            "contents": [_gemini_content(m) for m in prompt.messages if m.role != "system"],
            "generationConfig": {"maxOutputTokens": prompt.max_tokens},
        }
        system = "\n\n".join(m.text for m in prompt.messages if m.role == "system")
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        model = quote(endpoint.model.removeprefix("models/"), safe="")
        url = f"{endpoint.base_url}/models/{model}:streamGenerateContent?alt=sse"
        return json_request(endpoint, url, body, auth="x-goog-api-key")

    def decode(self, recording: Recording) -> Timeline:
        d = Decoded(recording)
        with d.reading():
            for ev in sse.events(recording.chunks):
                doc = d.json(ev.data)
                if doc is None:
                    continue
                if "error" in doc:
                    d.error(ev.t_ns, doc["error"])
                    continue
                d.response_id = d.response_id or doc.get("responseId")
                before = len(d.events)
                for candidate in doc.get("candidates") or ():
                    _parts(d, ev.t_ns, candidate)
                    if candidate.get("finishReason"):
                        d.add(ev.t_ns, EventKind.FINISH, str(candidate["finishReason"]))
                blocked = (doc.get("promptFeedback") or {}).get("blockReason")
                if blocked:  # the prompt was refused: no candidates, and nothing more will come
                    d.add(ev.t_ns, EventKind.FINISH, str(blocked))
                if isinstance(doc.get("usageMetadata"), dict):
                    d.usage = _gemini_usage(d, doc["usageMetadata"])  # every event repeats it; the last one is final
                    if any(e.kind is EventKind.FINISH for e in d.events[before:]):
                        d.add(ev.t_ns, EventKind.USAGE)
                if len(d.events) == before:
                    d.add(ev.t_ns, EventKind.OTHER)
        return d.timeline()
