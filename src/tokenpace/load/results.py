"""A load test's result document: what ``tokenpace bench`` writes, and what its report and ``compare`` read.

One document per bench command: one point for a single load level, one point per level for a sweep. Every
figure is derived (load/figures.py) from samples that are also stored in the database under the point's
``run_id``; the document adds, per point, a bounded list of per-request rows for the report's charts.

The file is JSON (:func:`to_json`), read back by :func:`from_json` / :func:`read_result` as hostile input: at most
MAX_BYTES, a known ``format``, every field of its type (strict: no "5" for 5), every number finite and in
0..MAX_NUMBER, every text at most MAX_TEXT characters, at most MAX_BENCH_POINTS points and MAX_ROWS items in any list.
Anything else is one ConfigError naming the field. Fields added since format 1 (a point's ``repeat``, ``invalid``
and ``workers``, figures from schedule, the auto sweep's ``bracket``, TPOT and throughput in the server's tokens)
have defaults, so a document written before them still reads, and a tokenpace that predates them reads a newer one
as a document of one run per point (and its ``saturation``, the bracket's lower end, as the highest rate kept up
with).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pydantic

from tokenpace.config.traffic import Load, Slo
from tokenpace.errors import ConfigError
from tokenpace.load.figures import Done, Figures
from tokenpace.measure.metrics import NS_PER_MS

Item = TypeVar("Item")

MAX_ROWS = 20_000  # per-request rows kept per point (the charts' dots); figures always cover every request
FORMAT = 1  # the document's version: bump when a field changes meaning or goes; readers refuse others
MAX_BYTES = 64 * 1024 * 1024  # ~90 bytes a row: 32 points of MAX_ROWS rows fit; to_json thins rows beyond
MAX_BENCH_POINTS = 256  # far above any sweep (32 listed values; an auto sweep doubles then bisects)
MAX_TEXT = 65_536  # characters in any one text field (the command line is the longest)
MAX_NUMBER = 1e12  # every figure is a count, a time, a rate or a share: none is negative or this large


@dataclass(frozen=True, slots=True)
class Row:
    """One measured request, for charts: seconds since the point began, TTFT, E2E (ms), tokens out, ok, tag."""

    t_s: float
    ttft_ms: float | None
    e2e_ms: float
    output_tokens: int
    ok: bool
    tag: str = ""


@dataclass(frozen=True, slots=True)
class WorkerVerdict:
    """One worker process of a level shared by several (``bench --workers``): its part and the client's health in it."""

    worker: int  # 0..N-1
    concurrency: int | None  # its streams (closed loop) or its cap (open loop, if any)
    rate: float | None  # its share of an open loop's rate, req/s
    requests: int  # requests it sent that ended, warm-up included
    events: int  # events it read: its CPU per event's denominator
    client_bound: bool
    loop_lag_p99_ms: float | None
    cpu_us_per_event: float | None


@dataclass(frozen=True, slots=True)
class BenchPoint:
    """One load level: how it was loaded, its figures, and the client's health while it ran."""

    load: Load
    figures: Figures
    run_id: str
    client_bound: bool = False
    cpu_us_per_event: float | None = None
    loop_lag_p99_ms: float | None = None
    rows: tuple[Row, ...] = ()
    released_rate: float | None = None  # an open loop's rate as its schedule really released it, req/s
    repeat: int = 0  # which run of ``bench --repeat N`` this is (1..N); 0 when the level ran once
    invalid: str = ""  # why the level's figures are not the load asked for (dispatch delay); "" valid
    workers: tuple[WorkerVerdict, ...] = ()  # ``bench --workers N``: each worker's own verdict; () in one process


@dataclass(frozen=True, slots=True)
class Bracket:
    """Where an auto sweep left saturation: it kept up with ``low`` req/s offered, not with ``high``, and why it
    stopped there (``high`` None: it never saturated; ``low`` None: nothing succeeded at concurrency 1)."""

    low: float | None
    high: float | None
    stopped: str  # "the bracket is within 5%", "the limit of 16 levels", an invalid level...


@dataclass(frozen=True, slots=True)
class BenchResult:
    """One bench command's result: what was measured, against which endpoint, and its points."""

    endpoint: str  # the endpoint's name (provider/model or provider:plan/model); never its URL or key
    model: str
    protocol: str
    dataset: str
    started_at: str  # ISO 8601, UTC
    tool_version: str
    command: str  # as stored with the runs: header values and the database password masked
    slo: Slo | None = None
    sweep: str | None = None  # "concurrency", "rate", "auto" or None for one level
    saturation: float | None = None  # auto sweep: the highest rate kept up with, below one not kept up with
    points: tuple[BenchPoint, ...] = field(default_factory=tuple)
    format: int = FORMAT
    max_dispatch_p99_ms: float | None = None  # the bound a level's dispatch delay P99 was held to
    repeat: int = 1  # runs of each level, back to back (``--repeat``): a point each
    bracket: Bracket | None = None  # auto sweep: saturation between two rates, and why it stopped


@dataclass(frozen=True, slots=True)
class _Head:
    """What is read first: the version, so a newer document is refused as such, not as a wrong field."""

    format: int = FORMAT


@functools.cache
def _adapter(kind: type[Any]) -> pydantic.TypeAdapter[Any]:
    return pydantic.TypeAdapter(kind)


def to_json(result: BenchResult) -> str:
    """The document as compact JSON; over MAX_BYTES, every point's rows thinned alike until it fits.

    A document is only written to be read, so it is never written too large to read back; rows are only the
    charts' dots (each point's figures cover every request), so they give way.
    """
    text = _adapter(BenchResult).dump_json(result)
    while len(text) > MAX_BYTES and any(p.rows for p in result.points):
        share = MAX_BYTES / len(text) * 0.95
        points = tuple(
            dataclasses.replace(p, rows=thin_evenly(p.rows, int(len(p.rows) * share))) for p in result.points
        )
        result = dataclasses.replace(result, points=points)
        text = _adapter(BenchResult).dump_json(result)
    return text.decode()


def from_json(text: str | bytes) -> BenchResult:
    """A document written by :func:`to_json`, checked as the module docstring says; ConfigError otherwise."""
    if len(text) > MAX_BYTES:
        raise ConfigError(f"result document: over {MAX_BYTES // 2**20} MiB; not one tokenpace wrote")
    try:
        head = _adapter(_Head).validate_json(text, strict=True)
    except pydantic.ValidationError as exc:
        raise _validation_error(exc) from None
    if head.format != FORMAT:
        raise ConfigError(
            f"result document format {head.format}: this tokenpace reads format {FORMAT}; "
            "use the tokenpace version that wrote it"
        )
    try:
        result: BenchResult = _adapter(BenchResult).validate_json(text, strict=True)
    except pydantic.ValidationError as exc:
        raise _validation_error(exc) from None
    if len(result.points) > MAX_BENCH_POINTS:
        raise ConfigError(f"result document: points: {len(result.points)} points, at most {MAX_BENCH_POINTS}")
    _check_rows(result)
    _check(dataclasses.replace(result, points=tuple(dataclasses.replace(p, rows=()) for p in result.points)), "")
    return result


def read_result(path: Path) -> BenchResult:
    """The document in a file, read no further than MAX_BYTES (ConfigError names the file)."""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        why = exc.strerror or exc
        raise ConfigError(f"{path}: cannot read it ({why}); give a file tokenpace bench wrote") from None
    try:
        return from_json(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _validation_error(exc: pydantic.ValidationError) -> ConfigError:
    first = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in first["loc"])
    if first["type"] == "json_invalid":
        return ConfigError(f"result document: not JSON ({first['msg']})")
    if not where:
        return ConfigError("result document: not a tokenpace result (a JSON object with endpoint, points...)")
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return ConfigError(f"result document: {where}: {first['msg']}{more}")


def _check_rows(result: BenchResult) -> None:
    """:func:`_check` of every row, in a tight loop (rows are nearly all of a document); _check names the field."""
    for i, p in enumerate(result.points):
        if len(p.rows) > MAX_ROWS:
            raise ConfigError(f"result document: points.{i}.rows: {len(p.rows)} items, at most {MAX_ROWS}")
        top = MAX_NUMBER
        for j, r in enumerate(p.rows):
            # Comparisons are False for NaN, so a chain of them also refuses it.
            if not (
                0 <= r.t_s <= top
                and 0 <= r.e2e_ms <= top
                and 0 <= r.output_tokens <= top
                and (r.ttft_ms is None or 0 <= r.ttft_ms <= top)
                and len(r.tag) <= MAX_TEXT
            ):
                _check(r, f"points.{i}.rows.{j}")


def _check(value: object, where: str) -> None:
    """Every number finite and in 0..MAX_NUMBER, every text and list bounded, each load set: else ConfigError."""
    name = where or "document"
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float):
        if not (math.isfinite(value) and 0 <= value <= MAX_NUMBER):
            raise ConfigError(f"result document: {name}: {value!r} is not a figure (0 to {MAX_NUMBER:g})")
    elif isinstance(value, str):
        if len(value) > MAX_TEXT:
            raise ConfigError(f"result document: {name}: over {MAX_TEXT} characters")
    elif isinstance(value, tuple | dict):
        if len(value) > MAX_ROWS:
            raise ConfigError(f"result document: {name}: {len(value)} items, at most {MAX_ROWS}")
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            _check(key, f"{where}.{key}".lstrip("."))
            _check(item, f"{where}.{key}".lstrip("."))
    elif dataclasses.is_dataclass(value):
        if isinstance(value, Load) and value.concurrency is None and value.rate is None:
            raise ConfigError(f"result document: {name}: set concurrency or rate")
        for f in dataclasses.fields(value):
            _check(getattr(value, f.name), f"{where}.{f.name}".lstrip("."))


def rows_of(done: Sequence[Done], t0_ns: int, limit: int = MAX_ROWS) -> tuple[Row, ...]:
    """The measured requests as rows in send order, t_s = (sent - t0) / 1e9; above ``limit``, evenly thinned.

    Thinning keeps request floor(i * n / limit) for i < limit: every part of the run keeps its share of dots,
    so a chart's shape survives; the figures never thin (they are computed from every request).
    """
    measured = sorted((d for d in done if not d.warmup), key=lambda d: d.sample.timeline.t_sent_ns)
    return tuple(
        Row(
            t_s=(d.sample.timeline.t_sent_ns - t0_ns) / 1e9,
            ttft_ms=d.sample.metrics.ttft_ms,
            e2e_ms=(d.sample.timeline.t_end_ns - d.sample.timeline.t_sent_ns) / NS_PER_MS,
            output_tokens=d.sample.metrics.output_tokens,
            ok=d.sample.ok,
            tag=d.tag,
        )
        for d in thin_evenly(measured, limit)
    )


def thin_evenly(items: Sequence[Item], limit: int) -> tuple[Item, ...]:
    """At most ``limit`` items, evenly spread: item floor(i * n / limit) for i < limit (all when n <= limit)."""
    n = len(items)
    return tuple(items) if n <= limit else tuple(items[i * n // limit] for i in range(max(limit, 0)))
