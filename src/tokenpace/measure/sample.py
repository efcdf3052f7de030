"""A sample: one request's outcome, successful or not, with the raw timeline it was measured from."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from tokenpace.config.endpoints import Endpoint
from tokenpace.measure.copying import text_copy_ratio
from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.metrics import Metrics, compute
from tokenpace.measure.timing import EventKind, Timeline
from tokenpace.measure.verdict import ALL, NONE, Bound
from tokenpace.prompts import canary
from tokenpace.prompts.prompt import Prompt
from tokenpace.version import __version__

Source = Literal["scheduled", "one-shot"]
SOURCES: tuple[Source, ...] = ("scheduled", "one-shot")
# A sample is served from a cache when the provider says at least this many prompt tokens came from it: a real
# hit is 1,024 or more (OpenAI, Anthropic and Gemini cache no less), while llama.cpp reports the few chat-template
# tokens its slot reuses on every fresh prompt (4-5), which save nothing.
CACHED_MIN_TOKENS = 128
LOCAL = ""  # the region of samples taken by the process that stores them (run, serve without agents)


def is_cached(cached_tokens: int | None) -> bool:
    """Cached = the provider's cached prompt tokens >= CACHED_MIN_TOKENS."""
    return cached_tokens is not None and cached_tokens >= CACHED_MIN_TOKENS


@dataclass(frozen=True, slots=True)
class Network:
    """The path to an endpoint as one agent saw it before a run (milliseconds; None where not measured)."""

    connect_ms: float | None = None
    tls_ms: float | None = None
    rtt_ms: float | None = None


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a run measured from: a region's probe agent and the queued job it ran, or this process (LOCAL)."""

    region: str = LOCAL
    agent: str | None = None  # the agent's name, as `tokenpace agents` lists it
    job_id: str | None = None  # the queue's job: the database keeps one sample per (job_id, job_seq)
    network: Network | None = None  # the path to the endpoint, measured just before the run


@dataclass(frozen=True, slots=True)
class Sample:
    """Endpoint + workload + when + metrics + error kind + timeline + the version that measured it."""

    id: str
    run_id: str
    endpoint: Endpoint
    workload: str
    started_at: datetime  # UTC, wall clock when the request was sent
    metrics: Metrics
    timeline: Timeline
    input_tokens: int | None = None  # o200k_base count of the prompt's text
    prompt_fingerprint: str | None = None  # identifies the exact prompt without storing it
    image_bytes: int = 0
    image_pixels: int = 0
    group_id: str | None = None  # requests released together (the parallel workload) share one
    prompt_text: str | None = None  # the prompt itself, only when asked to keep it (images never)
    tool_version: str = __version__
    source: Source = "scheduled"  # who took it: the service's schedule, or a one-shot `tokenpace run`
    published: bool = True  # ranked on the board; a one-shot run's samples only with `run --publish`
    client_bound: Bound = NONE  # the figures the client's own lateness could have moved too far (measure/verdict.py)
    region: str = LOCAL
    agent: str | None = None
    job_id: str | None = None
    job_seq: int | None = None  # the request's index within its job: a retried job cannot store it twice
    network: Network | None = None
    # What was timed, beyond timing (issue 22): the canary line the prompt asked for and whether the answer
    # began with it (None: no canary asked, or no answer); seconds since the previous request to the endpoint
    # ended, as this process or its store knows it, and whether that idle time makes it a cold start
    # (load/coldstart.py); which send of a repeated prefix this is.
    canary: str | None = None
    canary_ok: bool | None = None
    idle_s: float | None = None
    cold: bool = False
    prefix_turn: int | None = None
    client_lag_ms: float | None = None  # how late its figures' timestamps may be, ms (None: not judged)
    # The share of its answer's 8-grams found in its prompt (measure/copying.py): what prompt-lookup drafting
    # could have streamed for free. None: no prompt known, or an answer of fewer than 8 tokens.
    copy_ratio: float | None = None

    @property
    def cached(self) -> bool:
        """The provider says part of the prompt came from its prompt cache."""
        return is_cached(self.metrics.provider_cached_tokens)

    @property
    def ok(self) -> bool:
        return self.timeline.failure is None

    @property
    def error_kind(self) -> ErrorKind | None:
        return None if self.timeline.failure is None else self.timeline.failure.kind

    @property
    def error_message(self) -> str | None:
        return None if self.timeline.failure is None else self.timeline.failure.message

    @property
    def http_status(self) -> int | None:
        return None if self.timeline.failure is None else self.timeline.failure.http_status

    @property
    def retry_after_s(self) -> float | None:
        return None if self.timeline.failure is None else self.timeline.failure.retry_after_s

    @property
    def ratelimits(self) -> tuple[tuple[str, str], ...]:
        return () if self.timeline.failure is None else self.timeline.failure.ratelimits


def make_sample(
    run_id: str,
    endpoint: Endpoint,
    workload: str,
    started_at: datetime,
    timeline: Timeline,
    prompt: Prompt | None = None,
    group_id: str | None = None,
    keep_prompt: bool = False,
    *,
    source: Source = "scheduled",
    published: bool = True,
    client_bound: Bound | bool = NONE,
    client_lag_ms: float | None = None,
    origin: Origin | None = None,
    seq: int | None = None,
    idle_s: float | None = None,
    cold: bool = False,
    prefix_turn: int | None = None,
    copying: bool = True,
) -> Sample:
    """A sample with a fresh id and its metrics computed from the timeline; ``seq`` numbers it in a job;
    ``idle_s`` and ``cold``: the endpoint's idle time before it and the tag it makes (load/coldstart.py);
    ``prefix_turn``: which send of a repeated prefix it was (a paired workload's); ``client_bound``: its flagged
    figures (True: every one, as a client-bound sample was before figures were judged apart); ``copying``: judge
    its copy ratio (the board's samples: it tokenizes the whole prompt again, CPU a load test keeps for timing)."""
    origin = origin or Origin()
    asked = None if prompt is None else prompt.canary
    return Sample(
        id=uuid.uuid4().hex,
        run_id=run_id,
        endpoint=endpoint,
        workload=workload,
        started_at=started_at,
        metrics=compute(timeline),
        timeline=timeline,
        input_tokens=None if prompt is None else prompt.input_tokens,
        prompt_fingerprint=None if prompt is None else prompt.fingerprint,
        image_bytes=0 if prompt is None else prompt.image_bytes,
        image_pixels=0 if prompt is None else prompt.image_pixels,
        group_id=group_id,
        prompt_text=prompt.text if prompt is not None and keep_prompt else None,
        source=source,
        published=published,
        client_bound=ALL if client_bound is True else Bound(client_bound),
        client_lag_ms=client_lag_ms,
        region=origin.region,
        agent=origin.agent,
        job_id=origin.job_id,
        job_seq=None if origin.job_id is None else seq,
        network=origin.network,
        idle_s=idle_s,
        cold=cold,
        canary=asked,
        canary_ok=canary_verdict(asked, timeline),
        prefix_turn=prefix_turn,
        copy_ratio=answer_copy_ratio(prompt, timeline) if copying else None,
    )


def answer_copy_ratio(prompt: Prompt | None, timeline: Timeline) -> float | None:
    """copying.text_copy_ratio of the answer's content and tool calls (never its thinking) in the prompt's text; a
    failed request's too, over what it answered before it failed."""
    if prompt is None:
        return None
    return text_copy_ratio(timeline.text(EventKind.CONTENT, EventKind.TOOL_CALL), prompt.text)


def canary_verdict(asked: str | None, timeline: Timeline) -> bool | None:
    """canary.passed on the answer's content text; None when no canary was asked or the request failed (a
    failure is counted as one already: judging its partial answer too would count it twice)."""
    if asked is None or timeline.failure is not None:
        return None
    return canary.passed(asked, timeline.text(EventKind.CONTENT))


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One invocation that took samples, with the client's own health while it measured.

    A run is flagged ``client_bound`` when the client's event loop lagged enough to distort timings.
    """

    id: str
    started_at: datetime
    finished_at: datetime
    command: str
    concurrency: int
    requested: int
    completed: int
    loop_lag_p50_ms: float | None
    loop_lag_p99_ms: float | None
    loop_lag_max_ms: float | None
    cpu_us_per_event: float | None
    client_bound: bool
    tool_version: str = __version__
    seed: int | None = None  # prompts of endpoint k were built from seeds seed + k * requests + i
