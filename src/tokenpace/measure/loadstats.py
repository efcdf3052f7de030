"""A load test's figures, from what each request did: throughput, latency percentiles, goodput and SLO attainment.

Pure functions over :class:`Done` records (the load engine's output); each formula in its docstring. The field's
vocabulary, as vLLM's ``bench serve`` and GuideLLM report it:

- TTFT: first token - request sent (the client's own wait before sending is reported apart, as ``wait``);
- TPOT: (E2E - TTFT) / (output tokens - 1), per request;
- ITL: gaps between a request's consecutive chunks, pooled over all requests;
- E2E: last byte - request sent;
- throughput: measured requests (and their output tokens) / the measured window (first send to last end);
- goodput: requests that met every SLO / the measured window; SLO attainment: their share of all measured requests.
"""

from __future__ import annotations

from dataclasses import dataclass

from tokenpace.measure.sample import Sample


@dataclass(frozen=True, slots=True)
class Done:
    """One request of a load test, as the engine finished it."""

    sample: Sample
    tag: str = ""  # the dataset's group for it ("" none; "prefix-hit", "turn-2", ...)
    warmup: bool = False  # sent before the measured requests: left out of every figure
    asked_ns: int = 0  # perf_counter_ns when the schedule released it (open loop: its arrival time)
    chain: int = 0  # the dataset chain it belongs to


@dataclass(frozen=True, slots=True)
class Latency:
    """One latency over the measured requests, in ms: count, mean, percentiles and max (None: no values)."""

    n: int = 0
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None


@dataclass(frozen=True, slots=True)
class TagFigures:
    """The figures of one tag's requests (prefix-hit vs prefix-miss, turn 1 vs later turns)."""

    tag: str
    requests: int
    ok: int
    ttft: Latency
    tpot: Latency
    e2e: Latency


@dataclass(frozen=True, slots=True)
class Figures:
    """A load level's run-level figures over its measured requests (warm-up left out)."""

    requests: int  # measured requests that ended (ok or not); cancelled ones at the end of a --duration included
    ok: int
    errors: dict[str, int]  # error kind -> count
    duration_s: float  # the measured window: first measured send to last measured end
    request_rate: float  # ok requests / window
    output_tokens_per_s: float  # output tokens (o200k) of ok measured requests / window
    input_tokens_per_s: float  # prompt tokens (o200k) of ok measured requests / window
    concurrency_held: float  # mean requests in flight: sum of measured requests' E2E / window
    ttft: Latency
    tpot: Latency
    itl: Latency
    e2e: Latency
    wait: Latency  # request sent - released by the schedule: the client's own lateness
    output_speed: Latency  # per-request output speed (tok/s, Artificial Analysis's formula)
    goodput: float | None = None  # requests that met every SLO / window; None without an SLO
    slo_attainment: float | None = None  # share (0..1) of measured requests that met every SLO
    by_tag: tuple[TagFigures, ...] = ()  # one per tag when the dataset tags requests
