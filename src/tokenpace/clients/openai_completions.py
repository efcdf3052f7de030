"""OpenAI legacy Completions streaming (``POST /completions``, ``stream: true``): plain text in, text deltas out.

Still the raw-prompt route of vLLM, SGLang, llama.cpp and several hosted providers. The stream is Chat
Completions' SSE shape with ``choices[].text`` in place of ``choices[].delta``, so it shares that decoder.
"""

from __future__ import annotations

from typing import Any

from tokenpace.clients.base import HttpRequest, WireProtocol, json_request
from tokenpace.clients.openai_chat import decode_openai, drop_stream_options
from tokenpace.config.endpoints import Endpoint
from tokenpace.errors import ConfigError
from tokenpace.measure.failures import Failure
from tokenpace.measure.timing import Event, EventKind, Recording, Timeline
from tokenpace.prompts.prompt import Message, Prompt

_TRANSCRIPT_NAMES = {"user": "User", "assistant": "Assistant"}


def completion_text(messages: tuple[Message, ...]) -> str:
    """The messages as one prompt string: their text joined by blank lines, or a transcript for a chat.

    A prompt with an assistant turn is a conversation: without roles the model could not tell whose words
    are whose, so each user and assistant turn is labelled and the text ends on the assistant's cue.
    System text stays unlabelled, first.
    """
    if not any(m.role == "assistant" for m in messages):
        return "\n\n".join(m.text for m in messages)
    parts = [m.text if m.role not in _TRANSCRIPT_NAMES else f"{_TRANSCRIPT_NAMES[m.role]}: {m.text}" for m in messages]
    return "\n\n".join([*parts, "Assistant:"])


def _text_events(t_ns: int, choice: dict[str, Any]) -> list[Event]:
    out: list[Event] = []
    if isinstance(choice.get("text"), str) and choice["text"]:
        out.append(Event(t_ns, EventKind.CONTENT, choice["text"]))
    if choice.get("finish_reason"):
        out.append(Event(t_ns, EventKind.FINISH, str(choice["finish_reason"])))
    return out or [Event(t_ns, EventKind.OTHER)]


class OpenAICompletions(WireProtocol):
    name = "openai-completions"

    def request(self, endpoint: Endpoint, prompt: Prompt) -> HttpRequest:
        """One prompt string (``completion_text``: no chat template is applied).

        The API takes no images, so an image prompt is refused rather than measured without its image.
        """
        if any(m.images for m in prompt.messages):
            raise ConfigError(f"endpoint {endpoint.name}: protocol {self.name} cannot send images; use openai-chat")
        body = {
            "model": endpoint.model,
            "prompt": completion_text(prompt.messages),
            "max_tokens": prompt.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        return json_request(endpoint, f"{endpoint.base_url}/completions", body)

    def decode(self, recording: Recording) -> Timeline:
        return decode_openai(recording, _text_events)

    def without_extras(self, request: HttpRequest, failure: Failure) -> HttpRequest | None:
        """Without ``stream_options`` once an endpoint has refused it (usage is then not reported)."""
        return drop_stream_options(request, failure)
