"""OpenAI legacy Completions (``POST /v1/completions``): a prompt in, ``text_completion`` chunks out.

The protocol has no reasoning channel: a reasoning model behind it (vLLM, llama.cpp with a raw prompt) writes
its thinking into ``text`` like any other output, and so does the simulator (the truth still tells the two
apart). It has no token-free opening chunk either, so ``role_chunk`` changes nothing here.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from tokenpace.sim.openai_chat import OpenAIWire, model_of, usage_asked
from tokenpace.sim.wire import Ask, Out, Reply, dumps, obj, out, sse, token_cap


def _prompt_of(body: dict[str, Any]) -> str:
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt):
        return "".join(prompt)
    raise ValueError("'prompt' is a required property and must be a string or a list of strings.")


class CompletionsWire(OpenAIWire):
    name = "openai-completions"
    paths = ("/v1/completions",)
    id_prefix = "cmpl-"

    def __init__(self, reply: Reply) -> None:
        super().__init__(reply)
        self.head = {"id": reply.truth.id, "object": "text_completion", "created": reply.created, "model": reply.model}
        self.tail = {"usage": None} if reply.usage_due else {}

    @classmethod
    def parse(cls, request: web.Request, body: Any) -> Ask:
        body = obj(body, "body")
        return Ask(
            model_of(body),
            _prompt_of(body),
            token_cap(body, "max_tokens"),
            body.get("stream") is True,
            usage_asked(body),
        )

    def chunk(self, text: str, finish: str | None = None) -> bytes:
        choice = {"text": text, "index": 0, "logprobs": None, "finish_reason": finish}
        return sse({**self.head, "choices": [choice], **self.tail})

    def token(self, kind: str, text: str) -> list[Out]:
        return [out(self.chunk(text), (kind, text))]

    def end(self) -> list[Out]:
        events = [out(self.chunk("", self.finish()), ("finish", self.finish()))]
        if (usage := self.usage()) is not None:
            events.append(out(sse({**self.head, "choices": [], "usage": usage}), ("usage", dumps(usage))))
        return [*events, out(sse("[DONE]"), ("done", "[DONE]"))]

    def whole(self) -> dict[str, Any]:
        text = self.text("reasoning") + self.text("content")
        doc = {**self.head, "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": self.finish()}]}
        if (usage := self.usage()) is not None:
            doc["usage"] = usage
        return doc
