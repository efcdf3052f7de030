"""OpenAI Responses (``POST /v1/responses``): typed events, each an ``event:`` line and a numbered object.

A stream opens with ``response.created`` and ``response.in_progress``, then one output item per kind of
output: a ``reasoning`` item whose summary text streams as ``response.reasoning_summary_text.delta``, then a
``message`` item whose text streams as ``response.output_text.delta``; each item is announced (``*.added``)
before its deltas and closed (``*.done``) after them. ``response.completed`` (``response.incomplete`` when the
token cap cut it short) carries the whole response and its usage. There is no ``[DONE]``.
"""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

from aiohttp import web

from tokenpace.sim.openai_chat import OpenAIWire, model_of
from tokenpace.sim.wire import KINDS, Ask, Out, Reply, dumps, out, sse, text_of, token_cap

_OPENING = ("created", "in_progress")


def _input_text(body: dict[str, Any]) -> str:
    """``instructions`` and ``input``: a string, or items whose content is a string or typed parts."""
    given = body.get("input")
    if not isinstance(given, str | list):
        raise ValueError("'input' is a required property and must be a string or a list of input items.")
    text = given if isinstance(given, str) else text_of(given)
    instructions = body.get("instructions")
    return (instructions if isinstance(instructions, str) else "") + text


def _item_id(kind: str) -> str:
    return ("rs_" if kind == "reasoning" else "msg_") + uuid.uuid4().hex


class ResponsesWire(OpenAIWire):
    name = "openai-responses"
    paths = ("/v1/responses",)
    id_prefix = "resp_"
    broken_event: ClassVar[str] = '{"type":"response.output_text.delta","delta":"x'

    def __init__(self, reply: Reply) -> None:
        super().__init__(reply)
        self.seq = 0  # sequence_number of the next event
        self.output: list[dict[str, Any]] = []  # items done
        self.open: str | None = None  # kind of the item being streamed
        self.item_id = ""

    @classmethod
    def parse(cls, request: web.Request, body: Any) -> Ask:
        if not isinstance(body, dict):
            raise ValueError("'body' must be an object.")
        return Ask(model_of(body), _input_text(body), token_cap(body, "max_output_tokens"), body.get("stream") is True)

    def event(self, type_: str, *truth: tuple[str, str], **fields: Any) -> Out:
        """One numbered event; its truth entries (by default ("other", its type))."""
        data = {"type": type_, **fields, "sequence_number": self.seq}
        self.seq += 1
        return Out(sse(data, type_), truth or (("other", type_),))

    def response(self, status: str, usage: dict[str, Any] | None) -> dict[str, Any]:
        r = self.reply
        incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
        return {
            "id": r.truth.id, "object": "response", "created_at": r.created, "status": status, "error": None,
            "incomplete_details": incomplete, "instructions": None, "max_output_tokens": r.cap, "model": r.model,
            "output": list(self.output), "parallel_tool_calls": True, "previous_response_id": None,
            "reasoning": {"effort": None, "summary": None}, "store": False, "temperature": 1.0,
            "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [], "top_p": 1.0,
            "truncation": "disabled", "usage": usage, "metadata": {},
        }  # fmt: skip

    def item(self, done: bool) -> dict[str, Any]:
        """The open item, as announced (empty) or as closed (with its text)."""
        if self.open == "reasoning":
            summary = [{"type": "summary_text", "text": self.text("reasoning")}] if done else []
            return {"id": self.item_id, "type": "reasoning", "summary": summary}
        content = [self.part(self.text("content"))] if done else []
        status = ("incomplete" if self.reply.capped else "completed") if done else "in_progress"
        return {"id": self.item_id, "type": "message", "status": status, "role": "assistant", "content": content}

    @staticmethod
    def part(text: str) -> dict[str, Any]:
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}

    def start_item(self, kind: str) -> list[Out]:
        self.open, self.item_id = kind, _item_id(kind)
        at = {"item_id": self.item_id, "output_index": len(self.output)}
        added = self.event("response.output_item.added", output_index=len(self.output), item=self.item(False))
        if kind == "reasoning":
            part = {"type": "summary_text", "text": ""}
            return [added, self.event("response.reasoning_summary_part.added", **at, summary_index=0, part=part)]
        return [added, self.event("response.content_part.added", **at, content_index=0, part=self.part(""))]

    def close_item(self) -> list[Out]:
        if self.open is None:
            return []
        at = {"item_id": self.item_id, "output_index": len(self.output)}
        text = self.text(self.open)
        if self.open == "reasoning":
            part = {"type": "summary_text", "text": text}
            events = [
                self.event("response.reasoning_summary_text.done", **at, summary_index=0, text=text),
                self.event("response.reasoning_summary_part.done", **at, summary_index=0, part=part),
            ]
        else:
            events = [
                self.event("response.output_text.done", **at, content_index=0, text=text, logprobs=[]),
                self.event("response.content_part.done", **at, content_index=0, part=self.part(text)),
            ]
        item = self.item(True)
        events.append(self.event("response.output_item.done", output_index=len(self.output), item=item))
        self.output.append(item)
        self.open = None
        return events

    def preamble(self) -> list[Out]:
        events = [self.event(f"response.{t}", response=self.response("in_progress", None)) for t in _OPENING]
        first = "reasoning" if self.reply.reasoning else "content" if self.reply.content else None
        return events + (self.start_item(first) if first else [])

    def token(self, kind: str, text: str) -> list[Out]:
        self.keep(kind, text)  # the *.done events repeat it
        events = [] if self.open == kind else [*self.close_item(), *self.start_item(kind)]
        at = {"item_id": self.item_id, "output_index": len(self.output)}
        if kind == "reasoning":
            delta = self.event("response.reasoning_summary_text.delta", (kind, text), **at, summary_index=0, delta=text)
        else:
            delta = self.event(
                "response.output_text.delta", (kind, text), **at, content_index=0, delta=text, logprobs=[]
            )
        return [*events, delta]

    def malformed(self) -> Out:
        return out(sse(self.broken_event, "response.output_text.delta"), ("malformed", self.broken_event))

    def failure(self) -> Out:
        message = "upstream overloaded"
        return self.event("error", ("error", message), code="server_error", message=message, param=None)

    def finish(self) -> str:
        return "max_output_tokens" if self.reply.capped else "completed"

    def usage(self) -> dict[str, Any] | None:
        if not self.reply.usage_due:
            return None
        prompt, output, cached = self.reply.truth.prompt_tokens, self.generated, self.reply.truth.cached_tokens
        return {
            "input_tokens": prompt, "input_tokens_details": {"cached_tokens": cached}, "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": self.reply.reasoning}, "total_tokens": prompt + output,
        }  # fmt: skip

    def end(self) -> list[Out]:
        events = self.close_item()
        status = "incomplete" if self.reply.capped else "completed"
        usage, type_ = self.usage(), f"response.{status}"
        truth = [("finish", self.finish()), *([("usage", dumps(usage))] if usage else []), ("done", type_)]
        return [*events, self.event(type_, *truth, response=self.response(status, usage))]

    def whole(self) -> dict[str, Any]:
        for kind in KINDS:
            if self.text(kind):
                self.open, self.item_id = kind, _item_id(kind)
                self.output.append(self.item(True))
        self.open = None
        return self.response("incomplete" if self.reply.capped else "completed", self.usage())
