"""A load test's figures, from what each request did: throughput, latency percentiles, goodput and SLO attainment.

Pure functions over :class:`Done` records (the load engine's output); each formula in its docstring. The field's
vocabulary, as vLLM's ``bench serve`` and GuideLLM report it:

- TTFT: first token - request sent (the client's own wait before sending is reported apart, as ``wait``);
- TPOT: (E2E - TTFT) / (output tokens - 1), per request, tokens counted with o200k; and beside it, in the
  server's own tokens where its usage reported them (vLLM's ``bench serve``, SGLang and AIPerf count those);
- ITL: waits between a request's consecutive chunks, pooled over all requests;
- E2E: last byte - request sent;
- dispatch delay (``wait``): request sent - its scheduled start (``asked_ns``): the client's own lateness;
- TTFT and E2E *from schedule*: first token (last byte) - scheduled start = the figure from the send + the
  dispatch delay. A stalled client (a blocked loop, a cap too low for an open loop's rate) sends late, and
  the server then sees less load than asked: the figures from the send hide that (coordinated omission), the
  ones from schedule show what a user arriving on the schedule would have waited;
- throughput: measured requests (and their output tokens, o200k and the server's) / the measured window (first
  send to last end);
- goodput: requests that met every SLO / the measured window; SLO attainment: their share of all measured requests.

Each per-request latency (TTFT, TPOT, E2E) also has MLPerf's early-stopping estimate of its P99
(``early_stopping``, measure/stats.py's :func:`early_stop`): the value its P99 is under at 99 % confidence, or,
from fewer requests than that needs, the highest percentile they do bound. ITL has none: a request's gaps are
not independent draws, which the binomial rule assumes.

A request meets the SLO when it is ok and each bound set holds for it: TTFT, its TPOT, its longest ITL
(``itl``) and E2E each at or under the bound; a figure the request lacks (no ITL in a one-chunk answer, no TPOT
below two tokens) fails its bound, so an SLO never passes a request it could not judge.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from tokenpace.config.traffic import Slo
from tokenpace.measure.catalogue import metric
from tokenpace.measure.metrics import NS_PER_MS, chunk_times, itl_ms, percentile_sorted
from tokenpace.measure.sample import Sample
from tokenpace.measure.stats import EarlyStop, Figure, early_stop

# A level whose dispatch delay P99 is above this is invalid (``bench --max-dispatch-p99``). A healthy client's
# delay is its loop's timer resolution and a request's building, about a millisecond (the 5 ms loop-lag P99 of
# load/lag.py already marks it client-bound); a stall (a blocked loop, a cap too low for the rate) costs
# hundreds of ms to seconds. A quiet level on a shared, loaded 2-core machine measured a P99 of 24 ms: 100 ms
# lets such a CI runner's jitter pass (a failed gate must mean something) and still catches any stall.
DISPATCH_P99_MS = 100.0
TAIL_Q = 0.99  # the percentile an early-stopping estimate is given for: the P99 every level reports
EARLY_STOPPED = ("ttft", "tpot", "e2e")  # the Figures fields with one, each a value per request


@dataclass(frozen=True, slots=True)
class Done:
    """One request the engine sent, as it finished: its sample and what a load test reads besides."""

    sample: Sample
    tag: str = ""  # the dataset's group for it ("" none; "prefix-hit", "turn-2", ...)
    warmup: bool = False  # sent before the measured requests: left out of every figure
    asked_ns: int = 0  # perf_counter_ns when the schedule released it (open loop: its arrival time)
    chain: int = 0  # the dataset chain it belongs to; -1 for a load test's warm-up (a prompt of its own)


@dataclass(frozen=True, slots=True)
class TagFigures:
    """The figures of one tag's requests (prefix-hit vs prefix-miss, turn 1 vs later turns)."""

    tag: str
    requests: int
    ok: int
    ttft: Figure
    tpot: Figure
    e2e: Figure


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
    ttft: Figure
    tpot: Figure
    itl: Figure
    e2e: Figure
    wait: Figure  # dispatch delay = request sent - scheduled start: the client's own lateness
    output_speed: Figure  # per-request output speed (tok/s, Artificial Analysis's formula)
    goodput: float | None = None  # requests that met every SLO / window; None without an SLO
    slo_attainment: float | None = None  # share (0..1) of measured requests that met every SLO
    by_tag: tuple[TagFigures, ...] = ()  # one per tag when the dataset tags requests
    offered_rate: float | None = None  # open loop: the rate asked for (req/s); request_rate under it: fell behind
    ttft_from_schedule: Figure = field(default_factory=Figure)  # first token - scheduled start (older documents: n 0)
    e2e_from_schedule: Figure = field(default_factory=Figure)  # last byte - scheduled start
    # In the server's own output tokens (its usage): n counts the ok requests that reported them (0: none did).
    tpot_server: Figure = field(default_factory=Figure)
    output_tokens_per_s_server: float | None = None  # None unless every ok measured request reported them
    # per EARLY_STOPPED field, MLPerf's early-stopping estimate of its P99 (older documents: none)
    early_stopping: dict[str, EarlyStop] = field(default_factory=dict)


def latency(values: Sequence[float]) -> Figure:
    """A latency's figure over the measured requests (ms): n, mean, P50/P90/P95/P99 (metrics.percentile: linear
    between closest ranks) and max of the values."""
    ordered = sorted(values)
    if not ordered:
        return Figure()
    p50, p90, p95, p99 = (percentile_sorted(ordered, q) for q in (50, 90, 95, 99))
    return Figure(len(ordered), statistics.fmean(ordered), p50=p50, p90=p90, p95=p95, p99=p99, max=ordered[-1])


def tpot_from(ttft_ms: float | None, e2e_ms: float | None, output_tokens: int) -> float | None:
    """TPOT = (E2E - TTFT) / (output tokens - 1), ms; None below two output tokens or without a first token."""
    if ttft_ms is None or e2e_ms is None or output_tokens < 2:
        return None
    return (e2e_ms - ttft_ms) / (output_tokens - 1)


def tpot_ms(s: Sample) -> float | None:
    """A request's TPOT (:func:`tpot_from` of its metrics), ms."""
    return tpot_from(s.metrics.ttft_ms, s.metrics.e2e_ms, s.metrics.output_tokens)


def server_tpot_ms(s: Sample) -> float | None:
    """A request's TPOT in the server's tokens = (E2E - TTFT) / (usage output tokens - 1), ms; None without usage."""
    n = s.metrics.provider_output_tokens
    return None if n is None else tpot_from(s.metrics.ttft_ms, s.metrics.e2e_ms, n)


def server_output_tokens(ok: Sequence[Sample]) -> int | None:
    """Output tokens by the server's count = the sum of the requests' usage output tokens; None when any request
    lacks it (a sum over some would pass for a lower throughput)."""
    counts = [s.metrics.provider_output_tokens for s in ok]
    return None if not counts or None in counts else sum(c or 0 for c in counts)


def request_itl_ms(s: Sample) -> list[float]:
    """ITL values of one request = waits between consecutive chunk arrivals (events read together are one chunk)."""
    return itl_ms(chunk_times(s.timeline.token_events))


def wait_ms(d: Done) -> float:
    """Wait = request sent - released by the schedule, ms: how late the client itself was."""
    return (d.sample.timeline.t_sent_ns - d.asked_ns) / NS_PER_MS


def from_schedule_ms(d: Done, ms_from_send: float | None) -> float | None:
    """A latency from the scheduled start = the latency from the send + the dispatch delay, ms."""
    return None if ms_from_send is None else ms_from_send + wait_ms(d)


def dispatch_problem(f: Figures, bound_ms: float | None) -> str:
    """Why a level is invalid: its dispatch delay P99 > ``bound_ms``; "" when within it (or no bound)."""
    p99 = f.wait.p99
    if bound_ms is None or p99 is None or p99 <= bound_ms:
        return ""
    delay = metric("wait_ms").noun
    return f"{delay} P99 {p99:.0f} ms > {bound_ms:g} ms: the client sent late, the load was not the one asked"


def _from_schedule(done: Sequence[Done], name: str) -> list[float]:
    return [v for d in done if (v := from_schedule_ms(d, getattr(d.sample.metrics, name))) is not None]


def window_s(done: Sequence[Done]) -> float:
    """Measured window = last end - first send over the requests, seconds (0 with none)."""
    if not done:
        return 0.0
    start = min(d.sample.timeline.t_sent_ns for d in done)
    return (max(d.sample.timeline.t_end_ns for d in done) - start) / 1e9


def meets(s: Sample, slo: Slo) -> bool:
    """Good = ok and, for every bound the SLO sets, the request's figure <= the bound (a missing figure fails)."""
    if not s.ok:
        return False
    m = s.metrics
    mine = {"ttft": m.ttft_ms, "tpot": tpot_ms(s), "itl": m.gap_max_ms, "e2e": m.e2e_ms}
    return all((v := mine[name]) is not None and v <= bound for name, bound in slo.items())


def per_second(count: float, window: float) -> float:
    """A rate = count / window; 0 when the window is empty (no request, or all at one instant)."""
    return count / window if window > 0 else 0.0


def _ok_values(ok: Sequence[Sample]) -> tuple[list[float], list[float], list[float]]:
    """TTFT, TPOT and E2E of the ok requests that have each, in EARLY_STOPPED's order."""
    ttft = [m for s in ok if (m := s.metrics.ttft_ms) is not None]
    tpot = [t for s in ok if (t := tpot_ms(s)) is not None]
    e2e = [m for s in ok if (m := s.metrics.e2e_ms) is not None]
    return ttft, tpot, e2e


def _ok_latencies(ok: Sequence[Sample]) -> tuple[Figure, Figure, Figure]:
    ttft, tpot, e2e = _ok_values(ok)
    return latency(ttft), latency(tpot), latency(e2e)


def tag_figures(tag: str, done: Sequence[Done]) -> TagFigures:
    """One tag's request count, ok count, and TTFT, TPOT and E2E over its ok requests."""
    ok = [d.sample for d in done if d.sample.ok]
    return TagFigures(tag, len(done), len(ok), *_ok_latencies(ok))


def figures(done: Sequence[Done], slo: Slo | None = None, offered_rate: float | None = None) -> Figures:
    """A load level's figures over its measured (non-warm-up) requests; see the module docstring for each formula.

    Latencies (TTFT, TPOT, ITL, E2E, output speed) are over ok requests; ``wait`` and ``concurrency_held`` over
    every measured request, ok or not: both are about the load offered, not the answers.
    """
    measured = [d for d in done if not d.warmup]
    ok_done = [d for d in measured if d.sample.ok]
    ok = [d.sample for d in ok_done]
    window = window_s(measured)
    errors = Counter(str(d.sample.error_kind) for d in measured if not d.sample.ok)
    values = _ok_values(ok)
    ttft, tpot, e2e = (latency(v) for v in values)
    good = None if slo is None else sum(meets(d.sample, slo) for d in measured)
    server_tokens = server_output_tokens(ok)
    tags = sorted({d.tag for d in measured})
    return Figures(
        requests=len(measured),
        ok=len(ok),
        errors=dict(sorted(errors.items())),
        duration_s=window,
        request_rate=per_second(len(ok), window),
        output_tokens_per_s=per_second(sum(s.metrics.output_tokens for s in ok), window),
        input_tokens_per_s=per_second(sum(s.input_tokens or 0 for s in ok), window),
        concurrency_held=per_second(sum((d.sample.metrics.e2e_ms or 0.0) / 1000 for d in measured), window),
        ttft=ttft,
        tpot=tpot,
        itl=latency([g for s in ok for g in request_itl_ms(s)]),
        e2e=e2e,
        wait=latency([wait_ms(d) for d in measured]),
        output_speed=latency([v for s in ok if (v := s.metrics.output_speed) is not None]),
        goodput=None if good is None else per_second(good, window),
        slo_attainment=None if good is None or not measured else good / len(measured),
        by_tag=tuple(tag_figures(t, [d for d in measured if d.tag == t]) for t in tags) if tags != [""] else (),
        offered_rate=offered_rate,
        ttft_from_schedule=latency(_from_schedule(ok_done, "ttft_ms")),
        e2e_from_schedule=latency(_from_schedule(ok_done, "e2e_ms")),
        tpot_server=latency([t for s in ok if (t := server_tpot_ms(s)) is not None]),
        output_tokens_per_s_server=None if server_tokens is None else per_second(server_tokens, window),
        early_stopping={name: early_stop(sorted(v), TAIL_Q) for name, v in zip(EARLY_STOPPED, values, strict=True)},
    )
