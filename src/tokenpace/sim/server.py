"""The simulator's HTTP server: every protocol's routes on one port, one scenario per model name.

A request is turned into an :class:`Ask` by its protocol's :class:`Wire`, gets its scenario, error draw and
text seed here, and is then streamed (or answered at once) by the protocol-free core in ``stream.py``.

A gateway is simulated at its own paths: ``Simulator(root="/zen")`` serves every route under ``/zen``
(``/zen/v1/chat/completions``, ``/zen/v1/messages``, ``/zen/api/chat``...), and :func:`serve` then yields
``http://HOST:PORT/zen/v1``, OpenCode Zen's base with the host swapped; ``root="/zen/go"`` is OpenCode Go's.
``served_on={"kimi-k2.5": "openai-chat"}`` serves a model on that protocol only, as such a gateway does: asked
on another's route, it answers 404 "not supported". Models it does not name are served on every route.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import random
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Any

from aiohttp import web

from tokenpace.errors import SimulatorError
from tokenpace.measure import copying
from tokenpace.measure.metrics import NS_PER_MS
from tokenpace.prompts import canary
from tokenpace.prompts.tokens import count_tokens, encoding, token_ids, token_texts
from tokenpace.sim.anthropic import AnthropicWire
from tokenpace.sim.gemini import GeminiWire
from tokenpace.sim.ollama import OLLAMA_VERSION, OllamaWire
from tokenpace.sim.openai_chat import ChatWire
from tokenpace.sim.openai_completions import CompletionsWire
from tokenpace.sim.openai_responses import ResponsesWire
from tokenpace.sim.prefix import PrefixCache
from tokenpace.sim.scenario import DEFAULT_MODEL, NON_ASCII_WORDS, TRUTH_KEPT, WORDS, Scenario, Truth, asked_fingerprint
from tokenpace.sim.stream import ServedRequest, complete, reply_at_once, stream
from tokenpace.sim.wire import Ask, Reply, Wire, dumps

WIRES: tuple[type[Wire], ...] = (ChatWire, CompletionsWire, ResponsesWire, AnthropicWire, OllamaWire, GeminiWire)
SIMULATOR_HEADER = "X-Tokenpace-Simulator"
LOOP_WORDS = 8  # a looping model's phrase (Scenario.loop_after_tokens)
_DEFAULT = Scenario()  # frozen: one instance serves as every Simulator's default
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _throttled(s: Scenario) -> dict[str, str]:
    """A 429's headers as OpenAI sends them: Retry-After (the scenario's; none when "") and x-ratelimit-*."""
    reset = f"{s.retry_after}s" if s.retry_after.isdigit() else "1s"
    limits = {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0"}
    return ({"Retry-After": s.retry_after} if s.retry_after else {}) | limits | {"x-ratelimit-reset-requests": reset}


def _lister(request: web.Request) -> type[Wire]:
    """Whose ``GET /v1/models`` this is: OpenAI, Anthropic and Gemini all list models there; headers tell."""
    if "x-goog-api-key" in request.headers or "key" in request.query:
        return GeminiWire
    if "anthropic-version" in request.headers or "x-api-key" in request.headers:
        return AnthropicWire
    return ChatWire


@dataclasses.dataclass
class _Model:
    """One model's load state, for a scenario that scales to zero: requests in flight, idle since, loaded by."""

    idle_since_ns: int
    busy: int = 0
    ready_ns: int = 0  # when the load in progress ends

    def arrive(self, s: Scenario, t_ns: int) -> int:
        """When a request arriving at ``t_ns`` may begin: at once when loaded; else when the load it starts (idle
        more than cold_after_s), or the one in progress, ends."""
        if s.cold_start_ms and not self.busy and t_ns - self.idle_since_ns > s.cold_after_s * 1e9:
            self.ready_ns = t_ns + round(s.cold_start_ms * NS_PER_MS)
        self.busy += 1
        return max(t_ns, self.ready_ns)

    def leave(self) -> None:
        self.busy -= 1
        if not self.busy:
            self.idle_since_ns = time.perf_counter_ns()


class Simulator:
    """Serves scenarios by model name and keeps the :class:`Truth` of its latest requests, by response id.

    A truth takes about 16 kB for 100 tokens and ``tokenpace serve`` runs its simulators for weeks, so only the
    last ``truth_kept`` are kept (the oldest forgotten first): enough for any run to compare with its own.
    """

    def __init__(
        self,
        default: Scenario = _DEFAULT,
        models: Mapping[str, Scenario] | None = None,
        api_key: str | None = None,
        truth_kept: int = TRUTH_KEPT,
        root: str = "",
        served_on: Mapping[str, str] | None = None,
    ) -> None:
        if truth_kept < 1:
            raise SimulatorError(f"truth_kept must be >= 1, not {truth_kept}")
        if root and (not root.startswith("/") or root.endswith("/") or not root.isprintable() or "{" in root):
            raise SimulatorError(f"root {root!r}: give a path such as /zen (a leading slash, none at the end)")
        self.root = root  # every route's prefix: the server root a client's base URL starts with
        self.served_on: dict[str, str] = dict(served_on or {})  # model -> the one protocol (Wire.name) it is on
        self.default = default
        self.models: dict[str, Scenario] = dict(models or {})
        self.api_key = api_key
        self.truth_kept = truth_kept
        self.truth: dict[str, Truth] = {}  # insertion order: oldest first
        self._served = 0
        self._asked: Counter[str] = Counter()  # requests per model name, for its scenario's canary_wrong_after
        self._slots: dict[Scenario, asyncio.Semaphore] = {}  # each scenario's stream slots (max_streams)
        self._next_begin: dict[Scenario, int] = {}  # each scenario's earliest next begin (max_requests_per_s)
        self._born_ns = time.perf_counter_ns()  # its models are loaded at start, idle from then
        self._loaded: dict[str, _Model] = {}  # by model name ("": every name served by the default scenario)
        self.caches: dict[str, PrefixCache] = {}  # each model's prompt cache (scenario prefix_cache), bounded

    def app(self) -> web.Application:
        count_tokens(" warm")  # load the vocabulary now, not inside the first request's TTFT
        app = web.Application(client_max_size=64 * 1024**2)  # long prompts are a workload, not an attack
        at = self.root
        for wire in WIRES:
            for path in wire.paths:
                app.router.add_post(at + path, self._handler(wire))
        app.router.add_get(at + "/v1/models", self._listing(_lister))
        app.router.add_get(at + "/v1beta/models", self._listing(lambda _: GeminiWire))
        app.router.add_get(at + "/api/tags", self._listing(lambda _: OllamaWire))
        app.router.add_get(at + "/api/version", self._version)
        app.router.add_get(at + "/health", self._health)
        app.router.add_get(at + "/sim/truth/{id}", self._truth)
        return app

    def _refusal(self, wire: type[Wire], request: web.Request) -> web.Response | None:
        if self.api_key is None or (refused := wire.refuse(request, self.api_key)) is None:
            return None
        status, doc = refused
        return web.json_response(doc, status=status, dumps=dumps)

    def _handler(self, wire: type[Wire]) -> _Handler:
        async def handle(request: web.Request) -> web.StreamResponse:
            return await self._serve(wire, request)

        return handle

    def _listing(self, which: Callable[[web.Request], type[Wire]]) -> _Handler:
        async def models(request: web.Request) -> web.StreamResponse:
            wire = which(request)
            if (refused := self._refusal(wire, request)) is not None:
                return refused
            doc = wire.models_doc(list(dict.fromkeys([DEFAULT_MODEL, *self.models])))
            # Says what it is, so that discovery never ranks a simulator as a real server (whatever its port).
            return web.json_response(doc, headers={SIMULATOR_HEADER: "1"})

        return models

    async def _version(self, request: web.Request) -> web.Response:
        return web.json_response({"version": OLLAMA_VERSION})

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _truth(self, request: web.Request) -> web.Response:
        if (truth := self.truth.get(request.match_info["id"])) is None:
            return web.json_response(ChatWire.error_doc(404, "No such request id."), status=404)
        return web.json_response(truth.to_dict())

    async def _serve(self, wire: type[Wire], request: web.Request) -> web.StreamResponse:
        t_received = time.perf_counter_ns()
        if (refused := self._refusal(wire, request)) is not None:
            return refused
        try:
            try:
                body: Any = await request.json()
            except ValueError:
                raise ValueError("We could not parse the JSON body of your request.") from None
            ask = wire.parse(request, body)
        except ValueError as exc:
            return web.json_response(wire.error_doc(400, str(exc)), status=400, dumps=dumps)
        if self.served_on.get(ask.model, wire.name) != wire.name:  # a gateway's model asked on the wrong route
            why = f"Model {ask.model} is not supported on this endpoint."
            return web.json_response(wire.error_doc(404, why), status=404, dumps=dumps)

        s = self.models.get(ask.model, self.default)
        self._served += 1
        self._asked[ask.model] += 1
        rng = random.Random(f"{s.seed}:{self._served}")  # errors and jitter
        word_rng = random.Random(f"{s.seed}:{self._served}:words")  # the text does not depend on timing
        vocabulary = NON_ASCII_WORDS if s.non_ascii else WORDS
        error = s.error if s.error is not None and rng.random() < s.error_rate else None
        opening = self._canary(s, ask, rng)
        rid = f"{wire.id_prefix}{uuid.uuid4().hex}"
        truth = self.truth[rid] = Truth(rid, t_received)
        while len(self.truth) > self.truth_kept:  # a long-running simulator forgets its oldest requests
            del self.truth[next(iter(self.truth))]
        # Counted on a thread (tiktoken lets go of the GIL): on the loop, a burst of 256 prompts of 1k tokens
        # held each later request's handler back by up to ~100 ms (bench/fidelity.py's transit). The count is
        # the simulated prefill's work: it happens within the TTFT, which is scheduled from t_received anyway.
        tokens = await asyncio.get_running_loop().run_in_executor(None, token_ids, ask.prompt)
        truth.prompt_tokens, truth.asked = len(tokens), asked_fingerprint(ask.prompt)
        if s.prefix_cache:  # the cache is the model's, as a server's KV cache is: shared by its protocols
            truth.cached_tokens = self.caches.setdefault(ask.model, PrefixCache()).serve(tokens)
        if error in ("429", "500"):
            status, headers = int(error), _throttled(s) if error == "429" else {}
            body_text = dumps(wire.error_doc(status))
            return await reply_at_once(request, truth, status, body_text, [("error", error)], headers)

        reasoning, content, capped = s.reasoning_tokens, s.answer_tokens(ask.prompt), False
        if ask.cap is not None and reasoning + content > ask.cap:  # reasoning counts toward the cap everywhere
            reasoning, content, capped = min(reasoning, ask.cap), max(0, ask.cap - reasoning), True
        due = (s.usage == "always" or (s.usage == "auto" and ask.usage_asked)) if ask.stream else s.usage != "never"
        reply = Reply(
            s, truth, ask.model, reasoning, 10**15 if error == "endless" else content, ask.cap, capped, due,
            int(time.time()),
        )  # fmt: skip
        if s.copy_share:  # its own draw, so that other scenarios' texts stay as they were
            copy_rng = random.Random(f"{s.seed}:{self._served}:copy")
            opening += copied(tokens, s.copy_share, content, content - len(opening), copy_rng)
        words: Iterator[str] = iter(lambda: word_rng.choice(vocabulary), None)
        if s.loop_after_tokens is not None:
            phrase = [word_rng.choice(vocabulary) for _ in range(LOOP_WORDS)]
            words = itertools.chain(itertools.islice(words, s.loop_after_tokens), itertools.cycle(phrase))
        paced = s.drawn(rng)  # this request's TTFT and speed, when the scenario spreads them
        model = self._loaded.setdefault(ask.model if ask.model in self.models else "", _Model(self._born_ns))
        begins = model.arrive(s, t_received)
        truth.cold_start_ms = (begins - t_received) / NS_PER_MS
        if s.max_requests_per_s is not None:
            begins = max(begins, self._next_begin.get(s, 0))
            self._next_begin[s] = begins + round(1e9 / s.max_requests_per_s)
        try:
            if s.max_streams is None:
                call = ServedRequest(request, paced, truth, wire(reply), error, rng, words, begins, opening)
                return await self._answer(call, ask.stream)
            # A server of bounded capacity (a batch size): requests beyond it queue, as a loaded server's do.
            slots = self._slots.setdefault(s, asyncio.Semaphore(s.max_streams))
            async with slots:
                begun = max(time.perf_counter_ns(), begins)
                call = ServedRequest(request, paced, truth, wire(reply), error, rng, words, begun, opening)
                return await self._answer(call, ask.stream)
        finally:
            model.leave()

    def _canary(self, s: Scenario, ask: Ask, rng: random.Random) -> tuple[str, ...]:
        """The canary's line and a newline as o200k tokens, when the prompt asks for one (prompts/canary.py):
        right, or a digit off once the model is swapped (after ``canary_wrong_after`` requests to it) or when
        degraded (``canary_wrong_rate``, drawn only when set, so other scenarios' draws stay as they were)."""
        line = canary.asked(ask.prompt)
        if line is None:
            return ()
        swapped = s.canary_wrong_after is not None and self._asked[ask.model] > s.canary_wrong_after
        if swapped or (s.canary_wrong_rate and rng.random() < s.canary_wrong_rate):
            line = canary.near_miss(line)
        return tuple(token_texts(line + "\n"))

    @staticmethod
    async def _answer(call: ServedRequest, streamed: bool) -> web.StreamResponse:
        return await (stream(call) if streamed else complete(call))


def copied(prompt: list[int], share: float, content: int, room: int, rng: random.Random) -> tuple[str, ...]:
    """A run of the prompt's tokens, each as its text, from a drawn place: round(share x (content - n + 1)) + n - 1
    tokens (n = copying.N), so that ``share`` of a content of ``content`` tokens' n-grams are the prompt's; at most
    ``room`` tokens and the prompt's own length, and none where that leaves no n-gram to copy."""
    n = copying.N
    size = min(round(share * (content - n + 1)) + n - 1, room, len(prompt)) if content >= n else 0
    if size < n:
        return ()
    start = rng.randrange(len(prompt) - size + 1)
    enc = encoding()
    return tuple(enc.decode([t]) for t in prompt[start : start + size])


@contextlib.asynccontextmanager
async def serve(sim: Simulator, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[str]:
    """Start on a free port (port=0) and yield the OpenAI base URL 'http://127.0.0.1:PORT/v1' (with the simulator's
    ``root`` before "/v1": 'http://127.0.0.1:PORT/zen/v1'); stop on exit.

    The server root is that URL without "/v1": Anthropic's and Ollama's SDKs take the root, Gemini's the root
    too (it adds "/v1beta" or "/v1" itself); tokenpace's own Gemini endpoint is root + "/v1beta".

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
        yield f"http://{f'[{ip}]' if ':' in ip else ip}:{bound}{sim.root}/v1"
    finally:
        await runner.cleanup()


async def serve_forever(sim: Simulator, host: str, port: int, ready: Callable[[str], None] | None = None) -> None:
    """Serve until cancelled (the ``tokenpace sim`` command), telling ``ready`` the base URL actually bound."""
    async with serve(sim, host, port) as url:
        if ready is not None:
            ready(url)
        await asyncio.Event().wait()
