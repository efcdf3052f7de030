"""A ground-truth OpenAI-compatible streaming server: known TTFT, rate, chunking and failures, on demand.

A measuring tool has to be checked against something whose timing is known. The simulator answers
``POST /v1/chat/completions`` the way OpenAI does, on a schedule set by a :class:`Scenario`, and records the
send time of every event it writes as a :class:`Truth` on ``time.perf_counter_ns`` (CLOCK_MONOTONIC, the
client's clock), so a client on the same machine can compare what it measured with what was sent, event by
event: in-process through ``Simulator.truth``, from another process through ``GET /sim/truth/{id}``.

Generated text is made of words that are each exactly one o200k_base token, so the o200k count of the text
equals the ``completion_tokens`` the simulator reports. Events are scheduled on absolute target times, so
sleep overshoot does not accumulate into drift.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import math
import random
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from aiohttp import web

from tokenpace.errors import SimulatorError
from tokenpace.tokens import count_tokens

DEFAULT_MODEL = "sim"
TRUTH_KEPT = 100_000
ERRORS = frozenset({"429", "500", "malformed", "cut", "endless", "midstream"})
NS_PER_MS = 1_000_000

# Each word, with its leading space, is one o200k_base token (tests check), and so is any run of them.
_TEXT = """the speed of light is a fast token stream that runs over time and space with every model we
measure data for people who want to know how quick an answer comes back from server in one second first last
next word text chunk rate test clock delay network latency output input request response simple clear good
great small large high low long short new old open close start end right left north south water fire earth
wind world river mountain city house road table chair paper music number value result"""
WORDS: tuple[str, ...] = tuple(" " + w for w in _TEXT.split())
# Multi-byte UTF-8 for decoder tests; not one token each, so completion_tokens counts words with these.
NON_ASCII_WORDS: tuple[str, ...] = (
    " café", " naïve", " über", " façade", " Zürich", " ñandú", " 日本", " 東京", " 速度", " 你好",
    " привет", " Ελλάδα", " 🚀", " ✨",
)  # fmt: skip

_BROKEN_EVENT = '{"choices": [{"delta": {"content": "x"'  # what a "malformed" stream sends as one event
_MID_ERRORS = frozenset({"malformed", "cut", "midstream"})


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _error_doc(message: str, type_: str = "invalid_request_error", code: str | None = None) -> dict[str, Any]:
    """OpenAI's error shape: SDKs read ``error.message`` and ``error.type`` from it."""
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


@dataclass(frozen=True)
class Scenario:
    """How the simulated model behaves: timing, chunking, usage reporting and the failure to inject."""

    ttft_ms: float = 200.0  # request received -> first content or reasoning token event (before prefill)
    prefill_tokens_per_s: float | None = None  # if set, TTFT also grows by prompt tokens / this rate
    tokens_per_s: float = 50.0  # token rate after the first token
    tokens_per_chunk: int = 1  # tokens per SSE event
    jitter_ms: float = 0.0  # uniform +- jitter on each event's target time after the first
    output_tokens: int = 100  # content tokens; reasoning + content are capped by the request's max tokens
    reasoning_tokens: int = 0  # sent as reasoning deltas before the content
    reasoning_field: str = "reasoning_content"  # or "reasoning": both are seen in the wild
    role_chunk: bool = True  # first, at once: {"role": "assistant", "content": ""}
    usage: str = "auto"  # auto: when stream_options.include_usage asks; always; never
    final_burst: bool = False  # after the first chunk, all the rest in one last chunk
    stall_after_tokens: int | None = None  # pause once after this many tokens ...
    stall_ms: float = 0.0  # ... for this long
    error: str | None = None  # None or one of ERRORS
    error_rate: float = 1.0  # probability that a request gets the error
    non_ascii: bool = False  # accented, CJK and emoji words (then completion_tokens counts words)
    seed: int = 0  # with the request counter, seeds each request's text, jitter and error draw

    def first_token_ns(self, prompt_tokens: int) -> int:
        """Scheduled TTFT = ttft_ms + prompt tokens / prefill rate (the second term only when a rate is set)."""
        prefill_s = prompt_tokens / self.prefill_tokens_per_s if self.prefill_tokens_per_s else 0.0
        return round(self.ttft_ms * NS_PER_MS + prefill_s * 1e9)

    def __post_init__(self) -> None:
        times = (self.ttft_ms, self.jitter_ms, self.stall_ms)
        counts = (self.output_tokens, self.reasoning_tokens, self.stall_after_tokens or 0)
        checks = [
            (min(times) >= 0 and all(map(math.isfinite, times)), "ttft_ms, jitter_ms, stall_ms must be >= 0"),
            (self.tokens_per_s > 0, "tokens_per_s must be > 0"),
            ((self.prefill_tokens_per_s or 1) > 0, "prefill_tokens_per_s must be > 0"),
            (self.tokens_per_chunk >= 1, "tokens_per_chunk must be >= 1"),
            (min(counts) >= 0, "output_tokens, reasoning_tokens, stall_after_tokens must be >= 0"),
            (self.reasoning_field in ("reasoning_content", "reasoning"), "reasoning_field: unknown field"),
            (self.usage in ("auto", "always", "never"), "usage must be auto, always or never"),
            (self.error in {None, *ERRORS}, f"error must be None or one of {', '.join(sorted(ERRORS))}"),
            (0 <= self.error_rate <= 1, "error_rate must be between 0 and 1"),
            (not (self.final_burst and self.error == "endless"), "final_burst cannot be endless"),
        ]
        if bad := [message for ok, message in checks if not ok]:
            raise SimulatorError("scenario: " + "; ".join(bad))


@dataclass
class Truth:
    """What the simulator did for one request, on the client's clock; ``events``: (t_send_ns, kind, text)."""

    id: str
    t_received_ns: int
    events: list[tuple[int, str, str]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0  # tokens written so far (reasoning included)

    def text(self, *kinds: str) -> str:
        """Concatenated text of the events of the given kinds (content and reasoning when none given)."""
        wanted = set(kinds) or {"content", "reasoning"}
        return "".join(text for _, kind, text in self.events if kind in wanted)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Truth:
        """Rebuild what ``GET /sim/truth/{id}`` returned (JSON turned the event tuples into lists)."""
        events = [(int(t), str(kind), str(text)) for t, kind, text in doc["events"]]
        return cls(doc["id"], doc["t_received_ns"], events, doc["prompt_tokens"], doc["completion_tokens"])


def _prompt_text(messages: list[Any]) -> str:
    """Message contents concatenated: plain strings and the text of content parts."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return "".join(parts)


def _token_cap(body: dict[str, Any]) -> int | None:
    """The smaller of max_tokens and max_completion_tokens where given; ValueError if one is not valid."""
    caps = []
    for name in ("max_tokens", "max_completion_tokens"):
        if (value := body.get(name)) is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Invalid '{name}': expected an integer >= 1, got {value!r}.")
            caps.append(value)
    return min(caps, default=None)


def _plan(s: Scenario, reasoning: int, content: int, words: Iterator[str]) -> Iterator[tuple[int, str, int, str]]:
    """Token events as (send time in tokens after the first, kind, tokens, text), reasoning first, each of
    ``tokens_per_chunk`` tokens; ``final_burst``: the first, then the rest when the last token is due."""
    total, pos = reasoning + content, 0
    for kind, n in (("reasoning", reasoning), ("content", content)):
        end = pos + n
        while pos < end:
            burst = s.final_burst and pos > 0
            size = end - pos if burst else min(s.tokens_per_chunk, end - pos)
            yield (total - 1 if burst else pos), kind, size, "".join(next(words) for _ in range(size))
            pos += size


def _usage(prompt: int, reasoning: int, completion: int) -> dict[str, Any]:
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
    usage["total_tokens"] = prompt + completion
    if reasoning:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return usage


async def _sleep_until(t_ns: int) -> None:
    """Sleep until perf_counter_ns() >= t_ns: never early, even where the loop's timers round to ms."""
    while (left := t_ns - time.perf_counter_ns()) > 0:  # noqa: ASYNC110 - a deadline, not a condition
        await asyncio.sleep(left / 1e9)


class Simulator:
    """Serves scenarios by model name and keeps the :class:`Truth` of every request served, by response id."""

    def __init__(
        self,
        default: Scenario = Scenario(),
        models: Mapping[str, Scenario] | None = None,
        api_key: str | None = None,
    ) -> None:
        self.default = default
        self.models: dict[str, Scenario] = dict(models or {})
        self.api_key = api_key
        self.truth: dict[str, Truth] = {}
        self._served = 0

    def app(self) -> web.Application:
        count_tokens(" warm")  # load the vocabulary now, not inside the first request's TTFT
        app = web.Application(client_max_size=64 * 1024**2)  # long prompts are a workload, not an attack
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/health", self._health)
        app.router.add_get("/sim/truth/{id}", self._truth)
        return app

    def _denied(self, request: web.Request) -> web.Response | None:
        given = request.headers.get("Authorization", "").encode()
        if self.api_key is None or hmac.compare_digest(given, f"Bearer {self.api_key}".encode()):
            return None
        return web.json_response(_error_doc("Incorrect API key provided.", code="invalid_api_key"), status=401)

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _models(self, request: web.Request) -> web.Response:
        if (denied := self._denied(request)) is not None:
            return denied
        names = dict.fromkeys([DEFAULT_MODEL, *self.models])
        data = [{"id": n, "object": "model", "created": 0, "owned_by": "tokenpace"} for n in names]
        return web.json_response({"object": "list", "data": data})

    async def _truth(self, request: web.Request) -> web.Response:
        if (truth := self.truth.get(request.match_info["id"])) is None:
            return web.json_response(_error_doc("No such request id."), status=404)
        return web.json_response(truth.to_dict())

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        t_received = time.perf_counter_ns()
        if (denied := self._denied(request)) is not None:
            return denied
        try:
            try:
                body = await request.json()
            except ValueError:
                raise ValueError("We could not parse the JSON body of your request.") from None
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                raise ValueError("'messages' is a required property and must be a list.")
            if not isinstance(model := body.get("model", DEFAULT_MODEL), str):
                raise ValueError("'model' must be a string.")
            cap = _token_cap(body)
        except ValueError as exc:
            return web.json_response(_error_doc(str(exc)), status=400)

        s = self.models.get(model, self.default)
        self._served += 1
        rng = random.Random(f"{s.seed}:{self._served}")  # errors and jitter
        word_rng = random.Random(f"{s.seed}:{self._served}:words")  # the text does not depend on timing
        vocabulary = NON_ASCII_WORDS if s.non_ascii else WORDS
        error = s.error if s.error is not None and rng.random() < s.error_rate else None
        rid = f"chatcmpl-{uuid.uuid4().hex}"
        prompt_tokens = count_tokens(_prompt_text(body["messages"]))
        truth = self.truth[rid] = Truth(rid, t_received, prompt_tokens=prompt_tokens)
        if len(self.truth) > TRUTH_KEPT:  # a long-running simulator forgets its oldest requests
            del self.truth[next(iter(self.truth))]
        if error == "429":
            doc = _error_doc("Rate limit reached for requests", "rate_limit_error", "rate_limit_exceeded")
            return await _reply(request, truth, 429, _dumps(doc), [("error", "429")], {"Retry-After": "1"})
        if error == "500":
            doc = _error_doc("The server had an error while processing your request.", "server_error")
            return await _reply(request, truth, 500, _dumps(doc), [("error", "500")])

        reasoning, content, finish = s.reasoning_tokens, s.output_tokens, "stop"
        if cap is not None and reasoning + content > cap:  # reasoning counts toward the cap, as at OpenAI
            reasoning, content, finish = min(reasoning, cap), max(0, cap - reasoning), "length"
        options = body.get("stream_options")
        asked = isinstance(options, dict) and options.get("include_usage") is True
        call = _Call(
            request, s, truth, model, error, rng, words=iter(lambda: word_rng.choice(vocabulary), None),
            reasoning=reasoning, content=10**15 if error == "endless" else content, finish=finish,
            usage_due=s.usage == "always" or (s.usage == "auto" and asked),
        )  # fmt: skip
        return await (_stream(call) if body.get("stream") is True else _complete(call))


@dataclass
class _Call:
    """One chat request being served: its scenario, token budget, seeded randomness and the truth it fills."""

    request: web.Request
    s: Scenario
    truth: Truth
    model: str
    error: str | None
    rng: random.Random
    words: Iterator[str]
    reasoning: int
    content: int  # 10**15 for an endless stream: never reached
    finish: str
    usage_due: bool  # in a stream; a non-streamed reply carries usage unless the scenario says "never"

    def at(self, token_offset: int) -> int:
        """Target send time of an event due ``token_offset`` tokens after the first token."""
        return (
            self.truth.t_received_ns
            + self.s.first_token_ns(self.truth.prompt_tokens)
            + round(token_offset * 1e9 / self.s.tokens_per_s)
        )


async def _reply(
    request: web.Request,
    truth: Truth,
    status: int,
    body: str,
    events: list[tuple[str, str]],
    headers: Mapping[str, str] | None = None,
) -> web.StreamResponse:
    """A whole JSON response written at once; its truth events all get the time its headers were written."""
    data = body.encode()
    resp = web.StreamResponse(status=status, headers={"x-request-id": truth.id, **(headers or {})})
    resp.content_type = "application/json"
    resp.content_length = len(data)
    with contextlib.suppress(ConnectionResetError):  # the client went away
        t_send = time.perf_counter_ns()
        await resp.prepare(request)
        await resp.write(data)
        truth.events.extend((t_send, kind, text) for kind, text in events)
        await resp.write_eof()
    return resp


def _cut(request: web.Request) -> None:
    """Drop the connection with the response unfinished: the client sees a truncated body, no terminator.

    What the handler returns next is not written: aiohttp finds the transport closed and lets it go quietly.
    """
    if request.transport is not None:
        request.transport.close()  # close, not abort: what was written still arrives


async def _stream(c: _Call) -> web.StreamResponse:
    s, truth = c.s, c.truth
    headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "x-request-id": truth.id}
    resp = web.StreamResponse(headers=headers)
    head = {"id": truth.id, "object": "chat.completion.chunk", "created": int(time.time()), "model": c.model}
    head["system_fingerprint"] = None
    tail = {"usage": None} if c.usage_due else {}  # as OpenAI does when usage was asked for

    def chunk(delta: dict[str, str], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _dumps({**head, "choices": [choice], **tail})

    async def send(kind: str, text: str, payload: str) -> None:
        data = f"data: {payload}\n\n".encode()
        t_send = time.perf_counter_ns()
        await resp.write(data)
        truth.events.append((t_send, kind, text))

    pending = c.error if c.error in _MID_ERRORS else None  # sent once half the tokens are out
    half, sent = (c.reasoning + c.content) // 2, 0
    stall_at, stall_ns = s.stall_after_tokens, 0
    jitter_ns = s.jitter_ms * NS_PER_MS
    try:
        await resp.prepare(c.request)
        if s.role_chunk:
            await send("role", "assistant", chunk({"role": "assistant", "content": ""}))
        for i, (offset, kind, n, text) in enumerate(_plan(s, c.reasoning, c.content, c.words)):
            if pending is not None and sent >= half:
                if pending != "malformed":
                    break
                await send("malformed", _BROKEN_EVENT, _BROKEN_EVENT)
                pending = None
            if stall_at is not None and sent >= stall_at:
                stall_at, stall_ns = None, round(s.stall_ms * NS_PER_MS)
            jitter = round(c.rng.uniform(-jitter_ns, jitter_ns)) if i and jitter_ns else 0
            await _sleep_until(c.at(offset) + jitter + stall_ns)
            await send(kind, text, chunk({s.reasoning_field if kind == "reasoning" else "content": text}))
            sent = truth.completion_tokens = sent + n
            if c.error == "endless":
                await asyncio.sleep(0)  # stay cancellable even when running behind schedule
        if pending == "cut":
            _cut(c.request)
            return resp
        if pending == "midstream":
            error = {"error": {"message": "upstream overloaded", "type": "server_error"}}
            await send("error", "upstream overloaded", _dumps(error))
        else:
            if pending == "malformed":  # there were no tokens to send it after
                await send("malformed", _BROKEN_EVENT, _BROKEN_EVENT)
            await send("finish", c.finish, chunk({}, c.finish))
            if c.usage_due:
                usage = _usage(truth.prompt_tokens, c.reasoning, c.reasoning + c.content)
                await send("usage", _dumps(usage), _dumps({**head, "choices": [], "usage": usage}))
            await send("done", "[DONE]", "[DONE]")
        await resp.write_eof()
    except ConnectionResetError:
        pass  # the client went away: the truth keeps what was sent
    return resp


async def _complete(c: _Call) -> web.StreamResponse:
    """A non-streamed reply, sent when a stream of the same scenario would have sent its last token.

    Failures map to what a non-streamed client would see: "malformed" truncates the JSON body, "cut" drops the
    connection, "midstream" is an HTTP 500, and "endless" never answers (under serve(), until the client
    disconnects; on a runner without handler cancellation, until shutdown).
    """
    s, truth = c.s, c.truth
    if c.error == "endless":
        await asyncio.Event().wait()
    texts, last, sent, stall_ns = {"reasoning": "", "content": ""}, 0, 0, 0
    for offset, kind, n, text in _plan(s, c.reasoning, c.content, c.words):  # the stream's rules, no waits
        if s.stall_after_tokens is not None and sent >= s.stall_after_tokens:
            stall_ns = round(s.stall_ms * NS_PER_MS)
        texts[kind], last, sent = texts[kind] + text, offset, sent + n
    await _sleep_until(c.at(last) + stall_ns)
    if c.error == "cut":
        _cut(c.request)
        return web.Response()
    if c.error == "midstream":
        doc = _error_doc("upstream overloaded", "server_error")
        return await _reply(c.request, truth, 500, _dumps(doc), [("error", "upstream overloaded")])
    message: dict[str, Any] = {"role": "assistant", "content": texts["content"], "refusal": None}
    if texts["reasoning"]:
        message[s.reasoning_field] = texts["reasoning"]
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": c.finish}
    doc = {"id": truth.id, "object": "chat.completion", "created": int(time.time()), "model": c.model}
    doc |= {"system_fingerprint": None, "choices": [choice]}
    events = [(k, texts[k]) for k in ("reasoning", "content") if texts[k]] + [("finish", c.finish)]
    if s.usage != "never":
        doc["usage"] = _usage(truth.prompt_tokens, c.reasoning, sent)
        events.append(("usage", _dumps(doc["usage"])))
    truth.completion_tokens = sent
    body = _dumps(doc)
    if c.error == "malformed":
        body = body[: len(body) // 2]
        events = [("malformed", body)]
    return await _reply(c.request, truth, 200, body, events)


@contextlib.asynccontextmanager
async def serve(sim: Simulator, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[str]:
    """Start on a free port (port=0) and yield the base URL like 'http://127.0.0.1:PORT/v1'; stop on exit.

    Handlers are cancelled when their client disconnects, so endless or stalled streams stop at once, and
    shutdown waits little for streams still running: a simulator has nothing worth finishing.
    """
    runner = web.AppRunner(sim.app(), access_log=None, handler_cancellation=True, shutdown_timeout=0.5)
    await runner.setup()
    try:
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as exc:
            raise SimulatorError(f"cannot listen on {host}:{port} ({exc.strerror}); choose another port") from None
        ip, bound = runner.addresses[0][:2]  # the address actually bound: a name may resolve to several
        yield f"http://{f'[{ip}]' if ':' in ip else ip}:{bound}/v1"
    finally:
        await runner.cleanup()


async def serve_forever(sim: Simulator, host: str, port: int) -> None:
    """Serve until cancelled (the ``tokenpace sim`` command); prints nothing, the caller does."""
    async with serve(sim, host, port):
        await asyncio.Event().wait()
