"""Ollama's native chat API (``POST /api/chat``): newline-delimited JSON, one object per generated piece.

Each line carries ``message.content`` (or ``message.thinking``, or ``message.tool_calls``); the last one has
``done: true``, the reason and the server's own timings in nanoseconds (load, prompt evaluation, generation),
which are kept as a free cross-check of what the client measured. Ollama Cloud (``https://ollama.com``)
speaks the same API with a Bearer key. Its API has no cached-token field (Ollama reuses a cached prompt
prefix, but says so nowhere), so a sample from it is never flagged as served from a prompt cache.
"""

from __future__ import annotations

import json
from typing import Any

from tokenpace.clients import ndjson
from tokenpace.clients.base import Decoded, HttpRequest, WireProtocol, json_request
from tokenpace.config.endpoints import Endpoint
from tokenpace.measure.timing import EventKind, Recording, Timeline, Usage
from tokenpace.prompts.image import base64_text
from tokenpace.prompts.prompt import Message, Prompt

SERVER_TIMINGS = (
    "total_duration",
    "load_duration",
    "prompt_eval_duration",
    "eval_duration",
    "eval_count",
    "prompt_eval_count",
)


def _ollama_message(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.text}
    if m.images:
        out["images"] = [base64_text(png) for png in m.images]
    return out


def _message_events(d: Decoded, t_ns: int, message: dict[str, Any]) -> bool:
    """Add the generated text of one line's message; whether there was any."""
    found = False
    for field, kind in (("thinking", EventKind.REASONING), ("content", EventKind.CONTENT)):
        if isinstance(message.get(field), str) and message[field]:
            d.add(t_ns, kind, message[field])
            found = True
    for call in message.get("tool_calls") or ():
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict):
            continue
        args = fn.get("arguments")
        text = (fn.get("name") or "") + ("" if args is None else json.dumps(args, ensure_ascii=False))
        if text:
            d.add(t_ns, EventKind.TOOL_CALL, text)
            found = True
    return found


class Ollama(WireProtocol):
    name = "ollama"
    default_base = ""  # the server root: http://localhost:11434, https://ollama.com

    def request(self, endpoint: Endpoint, prompt: Prompt) -> HttpRequest:
        """Images go as base64 PNGs on their message; the output cap is ``options.num_predict``."""
        body = {
            "model": endpoint.model,
            "messages": [_ollama_message(m) for m in prompt.messages],
            "stream": True,
            "options": {"num_predict": prompt.max_tokens},
        }
        return json_request(endpoint, f"{endpoint.base_url}/api/chat", body, accept="application/x-ndjson")

    def warm_url(self, endpoint: Endpoint) -> str:
        return f"{endpoint.base_url}/api/tags"

    def decode(self, recording: Recording) -> Timeline:
        d = Decoded(recording)
        with d.reading():
            for line in ndjson.lines(recording.chunks):
                doc = d.json(line.text)
                if doc is None:
                    continue
                if "error" in doc:
                    d.error(line.t_ns, doc["error"])
                    continue
                message = doc.get("message")
                found = isinstance(message, dict) and _message_events(d, line.t_ns, message)
                if doc.get("done") is True:
                    d.add(line.t_ns, EventKind.FINISH, str(doc.get("done_reason") or ""))
                    d.usage = Usage(
                        d.count("prompt_eval_count", doc.get("prompt_eval_count")),
                        d.count("eval_count", doc.get("eval_count")),
                    )
                    d.add(line.t_ns, EventKind.USAGE)
                    d.server_timings = {k: doc[k] for k in SERVER_TIMINGS if k in doc} or None
                    d.add(line.t_ns, EventKind.DONE)
                elif not found:
                    d.add(line.t_ns, EventKind.OTHER)
        return d.timeline()
