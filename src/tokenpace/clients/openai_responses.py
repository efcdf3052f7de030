"""OpenAI Responses streaming (``POST /responses``, ``stream: true``): typed SSE events, one per change.

Most events are bookkeeping (``response.created``, ``output_item.added``, ``*.done`` ...) that repeat text
already streamed or carry none; only the ``*.delta`` events below are generated text. The stream ends with
``response.completed``, or ``response.incomplete`` when a cap such as ``max_output_tokens`` was reached (the
normal ending here, as every workload asks for more than its cap), and has no ``[DONE]``.
"""

from __future__ import annotations

from typing import Any

from tokenpace.clients import sse
from tokenpace.clients.base import Decoded, HttpRequest, WireProtocol, json_request
from tokenpace.config.endpoints import Endpoint
from tokenpace.measure.timing import EventKind, Recording, Timeline, Usage
from tokenpace.prompts.image import data_uri
from tokenpace.prompts.prompt import Prompt

_DELTA_KINDS = {
    "response.output_text.delta": EventKind.CONTENT,
    "response.reasoning_summary_text.delta": EventKind.REASONING,
    "response.reasoning_text.delta": EventKind.REASONING,
    "response.function_call_arguments.delta": EventKind.TOOL_CALL,
}
_ENDINGS = ("response.completed", "response.incomplete")


def _responses_usage(d: Decoded, doc: dict[str, Any]) -> Usage:
    """Input tokens include the cached ones (``input_tokens_details.cached_tokens``)."""
    details = doc.get("output_tokens_details") or {}
    inputs = doc.get("input_tokens_details") or {}
    return Usage(
        d.count("input_tokens", doc.get("input_tokens")),
        d.count("output_tokens", doc.get("output_tokens")),
        d.count("reasoning_tokens", details.get("reasoning_tokens")),
        d.count("cached_tokens", inputs.get("cached_tokens")),
    )


class OpenAIResponses(WireProtocol):
    name = "openai-responses"

    def request(self, endpoint: Endpoint, prompt: Prompt) -> HttpRequest:
        """Text-only messages as a plain string; with images, as ``input_text`` and ``input_image`` parts."""
        body = {
            "model": endpoint.model,
            "input": [
                {
                    "role": m.role,
                    "content": [
                        {"type": "input_text", "text": m.text},
                        *({"type": "input_image", "image_url": data_uri(png)} for png in m.images),
                    ]
                    if m.images
                    else m.text,
                }
                for m in prompt.messages
            ],
            "max_output_tokens": prompt.max_tokens,
            "stream": True,
            "store": False,  # a benchmark's answers are not worth keeping on the provider's side
        }
        return json_request(endpoint, f"{endpoint.base_url}/responses", body)

    def decode(self, recording: Recording) -> Timeline:
        d = Decoded(recording)
        with d.reading():
            for ev in sse.events(recording.chunks):
                doc = d.json(ev.data)
                if doc is None:
                    continue
                kind = doc.get("type") or ev.name  # the data's type, as the SDKs read it; the SSE name repeats it
                response = doc["response"] if isinstance(doc.get("response"), dict) else {}
                d.response_id = d.response_id or response.get("id")
                delta = doc.get("delta")
                if kind in _DELTA_KINDS and isinstance(delta, str) and delta:
                    d.add(ev.t_ns, _DELTA_KINDS[kind], delta)
                elif kind in _ENDINGS:
                    if isinstance(response.get("usage"), dict):
                        d.usage = _responses_usage(d, response["usage"])
                        d.add(ev.t_ns, EventKind.USAGE)
                    incomplete = response.get("incomplete_details") or {}
                    reason = "completed" if kind == "response.completed" else incomplete.get("reason") or "incomplete"
                    d.add(ev.t_ns, EventKind.FINISH, str(reason))
                    d.add(ev.t_ns, EventKind.DONE)
                elif kind == "error":  # {"type": "error", "code", "message", ...}; some servers nest it in "error"
                    d.error(ev.t_ns, doc.get("error") or doc)
                elif kind == "response.failed":
                    d.error(ev.t_ns, response.get("error") or "response failed")
                else:
                    d.add(ev.t_ns, EventKind.OTHER)
        return d.timeline()
