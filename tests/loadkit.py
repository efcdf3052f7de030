"""Load-test results built by hand: requests with known timelines, their points and result documents."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from tokenpace.config.endpoints import Endpoint
from tokenpace.config.traffic import Load, Slo
from tokenpace.load.figures import Done
from tokenpace.load.results import BenchPoint, BenchResult, rows_of
from tokenpace.load.running import figures
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.sample import make_sample
from tokenpace.measure.timing import Event, EventKind, Timeline, Usage

MS = 1_000_000
T0 = 10**12  # a perf_counter_ns origin far from 0: every formula must use differences
ENDPOINT = Endpoint("sim", "m", "http://127.0.0.1:1")


def done(
    sent_ms: float,
    end_ms: float,
    chunks: tuple[tuple[float, int], ...] = (),
    *,
    failure: ErrorKind | None = None,
    tag: str = "",
    warmup: bool = False,
    asked_ms: float | None = None,
    input_tokens: int | None = None,
    server_tokens: int | None = None,
) -> Done:
    """A request sent at ``sent_ms`` whose chunks (time ms, tokens) arrive as given; ' a' is one o200k token;
    ``server_tokens``: the output tokens its usage reports (None: no usage)."""
    events = tuple(Event(T0 + round(t * MS), EventKind.CONTENT, " a" * n) for t, n in chunks)
    timeline = Timeline(
        t_sent_ns=T0 + round(sent_ms * MS),
        t_headers_ns=None,
        t_end_ns=T0 + round(end_ms * MS),
        events=events,
        usage=None if server_tokens is None else Usage(output_tokens=server_tokens),
        failure=None if failure is None else Failure(failure, "boom"),
    )
    sample = make_sample("run", ENDPOINT, "load", datetime(2026, 1, 1, tzinfo=UTC), timeline)
    sample = dataclasses.replace(sample, input_tokens=input_tokens)
    asked = T0 + round((sent_ms if asked_ms is None else asked_ms) * MS)
    return Done(sample, tag=tag, warmup=warmup, asked_ns=asked)


def steady(
    n: int, ttft_ms: float, gap_ms: float, chunks: int = 10, failed: int = 0, tag: str = "",
    server_tokens: int | None = None,
) -> list[Done]:  # fmt: skip
    """n requests one after another, each TTFT then ``chunks`` one-token chunks ``gap_ms`` apart; the last
    ``failed`` of them rate-limited; ``server_tokens``: what each ok one's usage reports (None: no usage)."""
    out, t = [], 0.0
    for i in range(n):
        if i >= n - failed:
            out.append(done(t, t + 5, failure=ErrorKind.RATE_LIMITED, tag=tag))
            t += 5
            continue
        times = tuple((t + ttft_ms + k * gap_ms, 1) for k in range(chunks))
        end = times[-1][0]
        out.append(done(t, end, times, tag=tag, input_tokens=100, server_tokens=server_tokens))
        t = end
    return out


def point(load: Load, requests: list[Done], slo: Slo | None = None, client_bound: bool = False) -> BenchPoint:
    """A point as the engine would make it: figures and rows of these requests."""
    return BenchPoint(
        load, figures(requests, slo, load.rate), run_id="run-" + load.describe(), client_bound=client_bound,
        rows=rows_of(requests, T0),
    )  # fmt: skip


def result(
    *points: BenchPoint, slo: Slo | None = None, endpoint: str = "sim/m", sweep: str | None = None
) -> BenchResult:
    return BenchResult(
        endpoint=endpoint, model="m", protocol="openai-chat", dataset="fresh", started_at="2026-01-01T00:00:00Z",
        tool_version="0.0.0", command="tokenpace bench sim/m", slo=slo, sweep=sweep, points=points,
    )  # fmt: skip
