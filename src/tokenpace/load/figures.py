"""A load test's figures, from what each request did: throughput, latency percentiles, goodput and SLO attainment.

Pure functions over :class:`Done` records (the load engine's output), each formula in its docstring; a level's
figures over them are kept as its requests end (load/running.py). The field's
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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tokenpace.config.traffic import Slo
from tokenpace.measure.catalogue import metric
from tokenpace.measure.metrics import NS_PER_MS, chunk_times, itl_ms, percentile_sorted
from tokenpace.measure.quantiles import Quantiles
from tokenpace.measure.sample import Sample
from tokenpace.measure.stats import EarlyStop, Figure

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


def latency(values: Iterable[float]) -> Figure:
    """A latency's figure over the measured requests (ms): :func:`latency_of` the values."""
    q = Quantiles()
    q.extend(values)
    return latency_of(q)


def latency_of(q: Quantiles) -> Figure:
    """A latency's figure (ms): n, mean, P50/P90/P95/P99 (metrics.percentile: linear between closest ranks, over
    the values while held, else their ranks in the sketch: measure/quantiles.py) and max."""
    if not q.n:
        return Figure()
    ordered, hi = q.ordered(), q.hi
    p50, p90, p95, p99 = (percentile_sorted(ordered, x) for x in (50, 90, 95, 99))
    return Figure(q.n, q.mean(), p50=p50, p90=p90, p95=p95, p99=p99, max=hi)


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
