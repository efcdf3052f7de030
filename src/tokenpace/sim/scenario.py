"""What the simulator is told to do (:class:`Scenario`) and what it did (:class:`Truth`), whatever the protocol.

Both are protocol-free on purpose: one scenario means the same timing, chunking and failures on every wire
format, and a truth compares with what any client measured, event by event.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import random
import typing
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from tokenpace.config.settings import SIM_MODEL
from tokenpace.errors import ConfigError, SimulatorError
from tokenpace.measure.metrics import NS_PER_MS
from tokenpace.prompts.prompt import without_nonce

if TYPE_CHECKING:
    from tokenpace.config.endpoints import Config

DEFAULT_MODEL = SIM_MODEL
TRUTH_KEPT = 1_000  # truths a simulator keeps by default: its latest requests (see Simulator)
ERRORS = frozenset({"429", "500", "malformed", "cut", "endless", "midstream"})

# Each word, with its leading space, is one o200k_base token (tests check), and so is any run of them.
_WORDS_TEXT = """the speed of light is a fast token stream that runs over time and space with every model we
measure data for people who want to know how quick an answer comes back from server in one second first last
next word text chunk rate test clock delay network latency output input request response simple clear good
great small large high low long short new old open close start end right left north south water fire earth
wind world river mountain city house road table chair paper music number value result"""
WORDS: tuple[str, ...] = tuple(" " + w for w in _WORDS_TEXT.split())
# Multi-byte UTF-8 for decoder tests; not one token each, so completion_tokens counts words with these.
NON_ASCII_WORDS: tuple[str, ...] = (
    " café", " naïve", " über", " façade", " Zürich", " ñandú", " 日本", " 東京", " 速度", " 你好",
    " привет", " Ελλάδα", " 🚀", " ✨",
)  # fmt: skip


def asked_fingerprint(prompt: str) -> str:
    """What a prompt asks: the first 16 hex digits of the sha256 of its text less its nonce line (prompts/prompt.py)."""
    return hashlib.sha256(without_nonce(prompt).encode()).hexdigest()[:16]


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
    reasoning_field: str = "reasoning_content"  # Chat Completions: or "reasoning"; both are seen in the wild
    role_chunk: bool = True  # the protocol's token-free preamble goes out at once (chat: an empty role delta)
    usage: str = "auto"  # auto: as the request asks (OpenAI's include_usage; others always report); always; never
    final_burst: bool = False  # after the first chunk, all the rest in one last chunk
    stall_after_tokens: int | None = None  # pause once after this many tokens ...
    stall_ms: float = 0.0  # ... for this long
    error: str | None = None  # None or one of ERRORS
    error_rate: float = 1.0  # probability that a request gets the error
    # What a 429 carries: this Retry-After ("" none: the client's default back-off) beside OpenAI's x-ratelimit-*
    # headers, the reset of requests said the same.
    retry_after: str = "1"
    non_ascii: bool = False  # accented, CJK and emoji words (then completion_tokens counts words)
    seed: int = 0  # with the request counter, seeds each request's text, jitter and error draw
    max_streams: int | None = None  # streams generated at once; more wait their turn (their TTFT grows by it)
    # A capacity in requests/s, exact: each request begins (its TTFT counted from there) no sooner than
    # 1 / max_requests_per_s after the one before it began, on the simulator's schedule rather than after a slot
    # frees, so no handling time is added to it: a load test's saturation is known to the request.
    max_requests_per_s: float | None = None
    # Per request, TTFT times a log-normal factor of this sigma and tokens/s divided by one of half of it: a real
    # API's requests differ, its TTFT more than its speed. 0: every request alike (timing tests need that).
    spread: float = 0.0
    # Scale to zero: a model idle (no request in flight) for longer than cold_after_s unloads, and the request
    # that wakes it, with any that arrive while it loads, waits cold_start_ms more for its first token. A
    # simulator starts with its models loaded. 0: never unloads.
    cold_start_ms: float = 0.0
    cold_after_s: float = 900.0
    # The correctness canary (prompts/canary.py): asked for by a prompt, the answer begins with its line, right
    # unless the model is swapped after this many requests to it (each later one answers a digit off) or
    # degraded (each request answers wrong with this probability).
    canary_wrong_after: int | None = None
    canary_wrong_rate: float = 0.0
    # A degenerate model: after this many words the content repeats one phrase of LOOP_WORDS words to the cap.
    loop_after_tokens: int | None = None
    # A prompt cache (sim/prefix.py): a prompt's leading blocks seen recently are not prefilled again; their count
    # is reported in each protocol's own field. Cached tokens cost prompt tokens / cached_tokens_per_s (None: free).
    prefix_cache: bool = False
    cached_tokens_per_s: float | None = None
    # Speculative decoding's easy case (measure/copying.py): right after any canary line, the content copies one
    # run of the prompt's own tokens, from a place drawn per request, so that this share of the content's 8-grams
    # (of o200k tokens) are found in the prompt: round(share x (content tokens - 7)) + 7 tokens; as many as the
    # prompt and the cap hold. 0: no copying.
    copy_share: float = 0.0
    # The answer's length follows what was asked, as a real model's does: output_tokens times a log-normal factor
    # of this sigma drawn from the prompt less its nonce line, so prompts that differ only there (one round's,
    # schedule/rounds.py) get answers of one length. 0: every answer output_tokens long.
    answer_spread: float = 0.0

    def drawn(self, rng: random.Random) -> Scenario:
        """This request's scenario: TTFT and speed drawn with ``spread`` (itself when 0; draws nothing then, so
        a seed's errors and jitter stay as they were)."""
        if not self.spread:
            return self
        slower, slower_tokens = rng.lognormvariate(0, self.spread), rng.lognormvariate(0, self.spread / 2)
        prefill = self.prefill_tokens_per_s and self.prefill_tokens_per_s / slower
        cached = self.cached_tokens_per_s and self.cached_tokens_per_s / slower
        return dataclasses.replace(
            self, ttft_ms=self.ttft_ms * slower, prefill_tokens_per_s=prefill, cached_tokens_per_s=cached,
            tokens_per_s=self.tokens_per_s / slower_tokens, spread=0.0,
        )  # fmt: skip

    def answer_tokens(self, prompt: str) -> int:
        """Content tokens = round(output_tokens x e^(answer_spread x N)), N ~ N(0, 1) seeded by the prompt's
        :func:`asked_fingerprint` (output_tokens when answer_spread is 0)."""
        if not self.answer_spread:
            return self.output_tokens
        return round(
            self.output_tokens * math.exp(self.answer_spread * random.Random(asked_fingerprint(prompt)).gauss())
        )

    def first_token_ns(self, prompt_tokens: int, cached_tokens: int = 0) -> int:
        """Scheduled TTFT = ttft_ms + uncached prompt tokens / prefill rate + cached ones / cached rate (each term
        only when its rate is set)."""
        prefill_s = (prompt_tokens - cached_tokens) / self.prefill_tokens_per_s if self.prefill_tokens_per_s else 0.0
        read_s = cached_tokens / self.cached_tokens_per_s if self.cached_tokens_per_s else 0.0
        return round(self.ttft_ms * NS_PER_MS + (prefill_s + read_s) * 1e9)

    def __post_init__(self) -> None:
        times = (self.ttft_ms, self.jitter_ms, self.stall_ms, self.spread, self.cold_start_ms, self.cold_after_s)
        counts = (self.output_tokens, self.reasoning_tokens, self.stall_after_tokens or 0)
        checks = [
            (
                min(times) >= 0 and all(map(math.isfinite, times)),
                "ttft_ms, jitter_ms, stall_ms, spread, cold_start_ms, cold_after_s must be >= 0",
            ),
            (self.tokens_per_s > 0, "tokens_per_s must be > 0"),
            ((self.prefill_tokens_per_s or 1) > 0, "prefill_tokens_per_s must be > 0"),
            ((self.cached_tokens_per_s or 1) > 0, "cached_tokens_per_s must be > 0"),
            (self.tokens_per_chunk >= 1, "tokens_per_chunk must be >= 1"),
            (min(counts) >= 0, "output_tokens, reasoning_tokens, stall_after_tokens must be >= 0"),
            (self.reasoning_field in ("reasoning_content", "reasoning"), "reasoning_field: unknown field"),
            (self.usage in ("auto", "always", "never"), "usage must be auto, always or never"),
            (self.error in {None, *ERRORS}, f"error must be None or one of {', '.join(sorted(ERRORS))}"),
            (0 <= self.error_rate <= 1, "error_rate must be between 0 and 1"),
            (self.retry_after.isprintable(), "retry_after must be printable text, one line"),
            ((self.canary_wrong_after or 0) >= 0, "canary_wrong_after must be >= 0"),
            (0 <= self.canary_wrong_rate <= 1, "canary_wrong_rate must be between 0 and 1"),
            (0 <= self.copy_share <= 1, "copy_share must be between 0 and 1"),
            ((self.loop_after_tokens or 0) >= 0, "loop_after_tokens must be >= 0"),
            (0 <= self.answer_spread < math.inf, "answer_spread must be >= 0"),
            (self.max_streams is None or self.max_streams >= 1, "max_streams must be >= 1"),
            (
                self.max_requests_per_s is None or 0 < self.max_requests_per_s < math.inf,
                "max_requests_per_s must be > 0",
            ),
            (not (self.final_burst and self.error == "endless"), "final_burst cannot be endless"),
        ]
        if bad := [message for ok, message in checks if not ok]:
            raise SimulatorError("scenario: " + "; ".join(bad))


@dataclass
class Truth:
    """What the simulator did for one request, on the client's clock; ``events``: (t_send_ns, kind, text), each
    stamped just before its write; ``written``: when each event's write returned, in the same order. The event left
    between the two: a simulator preempted in between (a busy machine) stamped it early by that much."""

    id: str
    t_received_ns: int
    events: list[tuple[int, str, str]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0  # tokens written so far (reasoning included)
    cold_start_ms: float = 0.0  # how long it waited for its model to load (scale to zero); 0: it was warm
    cached_tokens: int = 0  # prompt tokens its prefix cache served (scenario prefix_cache), not prefilled
    asked: str = ""  # the prompt's :func:`asked_fingerprint`: prompts that differ only in their nonce line share it
    written: list[int] = field(default_factory=list)

    @property
    def uncached_tokens(self) -> int:
        """Prompt tokens prefilled = prompt tokens - cached tokens."""
        return self.prompt_tokens - self.cached_tokens

    @property
    def cold_start_ns(self) -> int:
        """The model's load wait in ns = cold_start_ms x 1e6, rounded."""
        return round(self.cold_start_ms * NS_PER_MS)

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
        cold, cached = float(doc.get("cold_start_ms", 0.0)), int(doc.get("cached_tokens", 0))
        counts = doc["prompt_tokens"], doc["completion_tokens"], cold, cached
        written = [int(t) for t in doc.get("written", [])]
        return cls(doc["id"], doc["t_received_ns"], events, *counts, str(doc.get("asked", "")), written)


def from_table(table: Mapping[str, Any]) -> Scenario:
    """A config's ``simulate = {...}`` table as a Scenario (ValueError ``key: problem``, one line)."""
    import pydantic

    from tokenpace.config.plain import first_problem

    hints = typing.get_type_hints(Scenario)
    fields: dict[str, Any] = {f.name: (hints[f.name], f.default) for f in dataclasses.fields(Scenario)}
    # Scenario's fields and types as a model, for one clear line per mistake (Scenario itself checks values).
    shape = pydantic.create_model("simulate", __config__=pydantic.ConfigDict(extra="forbid", strict=True), **fields)
    try:
        return Scenario(**shape.model_validate(table).model_dump(exclude_unset=True))
    except pydantic.ValidationError as exc:
        raise ValueError(first_problem(exc, shape)) from None
    except SimulatorError as exc:
        raise ValueError(str(exc).removeprefix("scenario: ")) from None


def scenarios(config: Config) -> dict[str, Scenario]:
    """Each simulated provider's Scenario, from its table; a mistake is one ConfigError naming file and key."""
    found = {}
    for provider, table in config.simulators.items():
        try:
            found[provider] = from_table(table)
        except ValueError as exc:
            raise ConfigError(f"{config.source}: providers.{provider}.simulate.{exc}") from None
    return found
