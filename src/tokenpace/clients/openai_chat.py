"""OpenAI Chat Completions streaming (``POST /chat/completions``, ``stream: true``)."""

from __future__ import annotations

import json
from typing import Any

from tokenpace import sse
from tokenpace.clients.base import HttpRequest, WireProtocol, one_line, timeline
from tokenpace.config import Endpoint
from tokenpace.failures import ErrorKind, Failure
from tokenpace.image import data_uri
from tokenpace.timing import Event, EventKind, Recording, Timeline, Usage
from tokenpace.workload import Prompt

# Both spellings of reasoning deltas are in the wild: DeepSeek/vLLM/llama.cpp and OpenRouter/Groq.
_REASONING_FIELDS = ("reasoning_content", "reasoning")


def _usage(doc: dict[str, Any]) -> Usage:
    details = doc.get("completion_tokens_details") or {}
    return Usage(doc.get("prompt_tokens"), doc.get("completion_tokens"), details.get("reasoning_tokens"))


def _choice_events(t_ns: int, choice: dict[str, Any]) -> list[Event]:
    out: list[Event] = []
    delta = choice.get("delta") or {}
    for name in _REASONING_FIELDS:
        if isinstance(delta.get(name), str) and delta[name]:
            out.append(Event(t_ns, EventKind.REASONING, delta[name]))
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


class OpenAIChat(WireProtocol):
    name = "openai-chat"

    def request(self, endpoint: Endpoint, prompt: Prompt) -> HttpRequest:
        """Text-only messages as a plain string; with images, as text and ``image_url`` content parts."""

        key = endpoint.api_key()
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            **dict(endpoint.headers),
        }
        if key:
            headers["Authorization"] = f"Bearer {key}"
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
        return HttpRequest(f"{endpoint.base_url}/chat/completions", headers, json.dumps(body).encode(), key)

    def decode(self, recording: Recording) -> Timeline:
        events: list[Event] = []
        usage: Usage | None = None
        response_id: str | None = None
        server_timings: dict[str, Any] | None = None
        problem: Failure | None = None
        for ev in sse.parse(recording.chunks):
            if ev.data == "[DONE]":
                events.append(Event(ev.t_ns, EventKind.DONE))
                continue
            try:
                doc = json.loads(ev.data)
                if not isinstance(doc, dict):
                    raise ValueError("event is not a JSON object")
            except ValueError:
                problem = problem or Failure(ErrorKind.MALFORMED_STREAM, one_line(f"bad event: {ev.data}", 120))
                continue
            if "error" in doc:
                err = doc["error"]
                message = err.get("message", err) if isinstance(err, dict) else err
                events.append(Event(ev.t_ns, EventKind.ERROR, str(message)))
                problem = problem or Failure(ErrorKind.STREAM_ERROR, one_line(f"stream error: {message}"))
                continue
            response_id = response_id or doc.get("id")
            if doc.get("usage"):
                usage = _usage(doc["usage"])
                events.append(Event(ev.t_ns, EventKind.USAGE))
            if isinstance(doc.get("timings"), dict):  # llama.cpp's own per-request timings
                server_timings = doc["timings"]
            for choice in doc.get("choices") or ():
                events.extend(_choice_events(ev.t_ns, choice))
        return timeline(recording, events, usage, response_id, server_timings, problem)
