"""A ground-truth streaming server in every protocol tokenpace measures: known TTFT, rate, chunking and failures.

A measuring tool has to be checked against something whose timing is known. The simulator answers each
provider's streaming route the way that provider does, on a schedule set by a :class:`Scenario`, and records
the send time of every event it writes as a :class:`Truth` on ``time.perf_counter_ns`` (CLOCK_MONOTONIC, the
client's clock; stamped before the write, with when the write returned beside it: the event left between the
two), so a client on the same machine can compare what it measured with what was sent, event by event:
in-process through ``Simulator.truth``, from another process through ``GET /sim/truth/{id}``.

One server serves every protocol at once. :func:`serve` yields the OpenAI base URL ``http://HOST:PORT/v1``;
the server root is that URL without ``/v1``. Routes, and the base URL each client takes:

- openai-chat: ``POST /v1/chat/completions``; base root + ``/v1`` (the ``openai`` SDK, tokenpace).
- openai-completions: ``POST /v1/completions``; base root + ``/v1``.
- openai-responses: ``POST /v1/responses``; base root + ``/v1``.
- anthropic: ``POST /v1/messages``; the ``anthropic`` SDK takes the root (it adds ``/v1``), tokenpace root + ``/v1``.
- ollama: ``POST /api/chat``; base root (the ``ollama`` SDK's ``host``, tokenpace).
- gemini: ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` (and ``:generateContent``), also under
  ``/v1`` and ``/v1alpha``; ``google-genai`` takes the root as ``HttpOptions(base_url=...)`` and adds its API
  version (``v1`` unless ``api_version`` says otherwise), tokenpace takes root + ``/v1beta``.

Model lists: ``GET /v1/models`` (OpenAI's, or Anthropic's or Gemini's when their headers come with it),
``GET /v1beta/models``, ``GET /api/tags``; and ``GET /api/version``, ``GET /health``.

The same scenario means the same schedule in every protocol; only the bytes differ (``wire.py`` says how a
protocol is added). Every response carries ``x-request-id`` = the truth's id, which is also the response id
the stream shows (Ollama's shows none). Truth event kinds: "reasoning" and "content" (tokens), "role" (a
token-free chunk shaped like a token chunk: Chat's role delta, Gemini's empty first chunk), "other" (protocol
events without tokens: Responses' lifecycle and item events, Anthropic's ``message_start``, block starts and
stops, ``signature_delta``, ``ping``), "finish", "usage", "done" (the terminator: ``[DONE]``,
``response.completed``, ``message_stop``, Ollama's ``"done": true``; Gemini has none), "malformed", "error".
One event may stand for several kinds at one time (Anthropic's ``message_delta``: finish and usage).

Generated text is made of words that are each exactly one o200k_base token, so the o200k count of the text
equals the output tokens the simulator reports.
"""

from tokenpace.sim.process import started_for
from tokenpace.sim.scenario import ERRORS, NON_ASCII_WORDS, WORDS, Scenario, Truth, scenarios
from tokenpace.sim.server import SIMULATOR_HEADER, WIRES, Simulator, serve, serve_forever
from tokenpace.sim.standin import Stand, stand_ins

__all__ = [
    "ERRORS",
    "NON_ASCII_WORDS",
    "SIMULATOR_HEADER",
    "WIRES",
    "WORDS",
    "Scenario",
    "Simulator",
    "Stand",
    "Truth",
    "scenarios",
    "serve",
    "serve_forever",
    "stand_ins",
    "started_for",
]
