"""OpenAI Chat Completions streaming (``POST /chat/completions``, ``stream: true``)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from tokenpace.clients import sse
from tokenpace.clients.base import Decoded, HttpRequest, WireProtocol, json_request
from tokenpace.config.endpoints import Endpoint
from tokenpace.measure.failures import Failure
from tokenpace.measure.timing import Event, EventKind, Recording, Timeline, Usage
from tokenpace.prompts.image import data_uri
from tokenpace.prompts.prompt import Prompt

# Both spellings of reasoning deltas are in the wild: DeepSeek/vLLM/llama.cpp and OpenRouter/Groq.
_REASONING_FIELDS = ("reasoning_content", "reasoning")

ChoiceEvents = Callable[[int, dict[str, Any]], list[Event]]


def _chat_usage(d: Decoded, doc: dict[str, Any]) -> Usage:
    """Prompt tokens include the cached ones (``prompt_tokens_details.cached_tokens``; llama.cpp sends it too)."""
    details = doc.get("completion_tokens_details") or {}
    prompt = doc.get("prompt_tokens_details") or {}
    return Usage(
        d.count("prompt_tokens", doc.get("prompt_tokens")),
        d.count("completion_tokens", doc.get("completion_tokens")),
        d.count("reasoning_tokens", details.get("reasoning_tokens")),
        d.count("cached_tokens", prompt.get("cached_tokens")),
    )


def _delta_events(t_ns: int, choice: dict[str, Any]) -> list[Event]:
    delta = choice.get("delta") or {}
    content = delta.get("content")
    if content and type(content) is str and len(delta) == 1 and not choice.get("finish_reason"):
        return [Event(t_ns, EventKind.CONTENT, content)]  # nearly every chunk: one piece of answer text
    out: list[Event] = []
    for name in _REASONING_FIELDS:  # some servers send the same text under both names: take it once
        if isinstance(delta.get(name), str) and delta[name]:
            out.append(Event(t_ns, EventKind.REASONING, delta[name]))
            break
    if isinstance(delta.get("content"), str) and delta["content"]:
        out.append(Event(t_ns, EventKind.CONTENT, delta["content"]))
    for call in delta.get("tool_calls") or ():
        fn = call.get("function") or {}
        text = (fn.get("name") or "") + (fn.get("arguments") or "")
        if text:
            out.append(Event(t_ns, EventKind.TOOL_CALL, text))
    if choice.get("finish_reason"):
        out.append(Event(t_ns, EventKind.FINISH, str(choice["finish_reason"])))
    return out or [Event(t_ns, EventKind.OTHER)]


def decode_openai(recording: Recording, choice_events: ChoiceEvents) -> Timeline:
    """An OpenAI-style SSE stream (``data: {...}`` chunks with ``choices``, then ``data: [DONE]``).

    Shared by Chat Completions and the legacy Completions API, which differ only in what a choice holds.
    """
    d = Decoded(recording)
    with d.reading():
        for ev in sse.events(recording.chunks):
            if ev.data == "[DONE]":
                d.add(ev.t_ns, EventKind.DONE)
                continue
            doc = d.json(ev.data)
            if doc is None:
                continue
            if doc.get("error"):  # some servers send "error": null on ordinary chunks
                d.error(ev.t_ns, doc["error"])
                continue
            d.response_id = d.response_id or doc.get("id")
            if doc.get("usage"):
                d.usage = _chat_usage(d, doc["usage"])
                d.add(ev.t_ns, EventKind.USAGE)
            if isinstance(doc.get("timings"), dict):  # llama.cpp's own per-request timings
                d.server_timings = doc["timings"]
            for choice in doc.get("choices") or ():
                d.events.extend(choice_events(ev.t_ns, choice))
    return d.timeline()


class OpenAIChat(WireProtocol):
    name = "openai-chat"

    def request(self, endpoint: Endpoint, prompt: Prompt) -> HttpRequest:
        """Text-only messages as a plain string; with images, as text and ``image_url`` content parts."""
        body = {
            "model": endpoint.model,
            "messages": [
                {
                    "role": m.role,
                    "content": [
                        {"type": "text", "text": m.text},
                        *({"type": "image_url", "image_url": {"url": data_uri(png)}} for png in m.images),
                    ]
                    if m.images
                    else m.text,
                }
                for m in prompt.messages
            ],
            "max_tokens": prompt.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        return json_request(endpoint, f"{endpoint.base_url}/chat/completions", body)

    def decode(self, recording: Recording) -> Timeline:
        return decode_openai(recording, _delta_events)

    def without_extras(self, request: HttpRequest, failure: Failure) -> HttpRequest | None:
        """Without ``stream_options`` once an endpoint has refused it (usage is then not reported)."""
        return drop_stream_options(request, failure)


def drop_stream_options(request: HttpRequest, failure: Failure) -> HttpRequest | None:
    """Some OpenAI-compatible servers answer 400 to ``stream_options``; the stream itself works without it."""
    if failure.http_status != 400 or "stream_options" not in failure.message:
        return None
    body = json.loads(request.body)
    body.pop("stream_options", None)
    return dataclasses.replace(request, body=json.dumps(body).encode())
