"""Anthropic Messages streaming (``POST /messages``, ``stream: true``): named SSE events around content blocks.

``message_start`` opens the message (id, input usage), each content block streams ``content_block_delta``
events between ``content_block_start`` and ``content_block_stop``, ``message_delta`` carries the stop reason
and the output usage, and ``message_stop`` ends it. ``ping`` may come at any time. Only text, thinking and
tool-input deltas are generated text; a thinking block's ``signature_delta`` is an opaque token, not text.

Anthropic's ``input_tokens`` leaves out the prompt tokens read from its cache (``cache_read_input_tokens``)
and those written to it (``cache_creation_input_tokens``). The input count stored is their sum, the whole
prompt as other providers count it, and the cached count is ``cache_read_input_tokens``.
"""

from __future__ import annotations

from typing import Any

from tokenpace.clients import sse
from tokenpace.clients.base import Decoded, HttpRequest, WireProtocol, json_request
from tokenpace.config.endpoints import Endpoint
from tokenpace.measure.timing import EventKind, Recording, Timeline, Usage
from tokenpace.prompts.image import base64_text
from tokenpace.prompts.prompt import Message, Prompt

VERSION = "2023-06-01"  # the API version header; an endpoint's headers may name another

# content_block_delta's delta type -> (event kind, field holding the text)
_DELTAS = {
    "text_delta": (EventKind.CONTENT, "text"),
    "thinking_delta": (EventKind.REASONING, "thinking"),
    "input_json_delta": (EventKind.TOOL_CALL, "partial_json"),
}


def _inputs(d: Decoded, usage: Any) -> tuple[int | None, int | None]:
    """(whole prompt, cache reads) of a usage object: input + cache creation + cache read tokens, and cache reads."""
    if not isinstance(usage, dict):
        return None, None
    fresh = d.count("input_tokens", usage.get("input_tokens"))
    written = d.count("cache_creation_input_tokens", usage.get("cache_creation_input_tokens"))
    read = d.count("cache_read_input_tokens", usage.get("cache_read_input_tokens"))
    return (None if fresh is None else fresh + (written or 0) + (read or 0)), read


def _anthropic_content(m: Message) -> str | list[dict[str, Any]]:
    if not m.images:
        return m.text
    return [
        {"type": "text", "text": m.text},
        *(
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": base64_text(png)}}
            for png in m.images
        ),
    ]


class Anthropic(WireProtocol):
    name = "anthropic"

    def request(self, endpoint: Endpoint, prompt: Prompt) -> HttpRequest:
        """System messages go to the top-level ``system`` field: the Messages API has no system role."""
        system = "\n\n".join(m.text for m in prompt.messages if m.role == "system")
        body: dict[str, Any] = {
            "model": endpoint.model,
            "max_tokens": prompt.max_tokens,
            "messages": [
                {"role": m.role, "content": _anthropic_content(m)} for m in prompt.messages if m.role != "system"
            ],
            "stream": True,
        }
        if system:
            body["system"] = system
        url = f"{endpoint.base_url}/messages"
        return json_request(endpoint, url, body, auth="x-api-key", extra={"anthropic-version": VERSION})

    def decode(self, recording: Recording) -> Timeline:
        d = Decoded(recording)
        input_tokens: int | None = None
        cached: int | None = None
        with d.reading():
            for ev in sse.events(recording.chunks):
                doc = d.json(ev.data)
                if doc is None:
                    continue
                kind = doc.get("type") or ev.name
                if kind == "content_block_delta":
                    delta = doc.get("delta") or {}
                    event_kind, field = _DELTAS.get(str(delta.get("type")), (EventKind.OTHER, ""))
                    text = delta.get(field) if field else None
                    if isinstance(text, str) and text:
                        d.add(ev.t_ns, event_kind, text)
                    else:  # signature_delta, citations_delta, an empty delta
                        d.add(ev.t_ns, EventKind.OTHER)
                elif kind == "message_start":
                    message = doc.get("message") or {}
                    d.response_id = d.response_id or message.get("id")
                    input_tokens, cached = _inputs(d, message.get("usage"))
                    d.add(ev.t_ns, EventKind.OTHER)
                elif kind == "message_delta":
                    stop = (doc.get("delta") or {}).get("stop_reason")
                    if stop:
                        d.add(ev.t_ns, EventKind.FINISH, str(stop))
                    usage = doc.get("usage")
                    if isinstance(usage, dict):  # output so far; newer servers repeat the input counts here
                        given, given_cached = _inputs(d, usage)
                        d.usage = Usage(
                            input_tokens if given is None else given,
                            d.count("output_tokens", usage.get("output_tokens")),
                            cached_tokens=cached if given_cached is None else given_cached,
                        )
                        d.add(ev.t_ns, EventKind.USAGE)
                elif kind == "message_stop":
                    d.add(ev.t_ns, EventKind.DONE)
                elif kind == "error":
                    d.error(ev.t_ns, doc.get("error") or doc)
                else:  # ping, content_block_start / stop, and any event type added later
                    d.add(ev.t_ns, EventKind.OTHER)
        return d.timeline()
