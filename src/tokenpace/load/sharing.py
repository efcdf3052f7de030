"""A load shared by worker processes: each one's part, its chains of the dataset, and the run's merged record.

Pure values and functions for load/workers.py, which runs the processes. Worker i of N takes (:func:`parts`):

- concurrency c // N, plus one for the first c % N workers (the same for an open loop's cap, the measured
  requests and the warm-up requests), an open loop's rate R / N, the same duration;
- the dataset's chains first + k N + i (:class:`Strided`): disjoint, and each worker sees the dataset's whole
  spread (a file sorted by length would give contiguous ranges different shapes), with or without a request count;
- a seed of its own for its arrivals and warm-up prompts (equal seeds would give every worker the same Poisson
  schedule and the same warm-up prompt), and with constant arrivals a start i / R later, so the workers'
  schedules interleave into one constant schedule of rate R.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from tokenpace.config.traffic import Load
from tokenpace.load.engine import RunOptions
from tokenpace.load.figures import Done
from tokenpace.load.results import WorkerVerdict
from tokenpace.measure.sample import RunRecord
from tokenpace.measure.timing import Event, EventKind
from tokenpace.prompts.chains import Chain, Dataset

Columns = tuple[list[int], str, list[str]]  # a timeline's events as columns: times, kinds (a letter each), texts
KIND_OF_LETTER = {k.value: k for k in EventKind}
SEED_STEP = 1_000_003  # worker i's seed = the run's + i x this, within a database's INTEGER
SEEDS = 1 << 31
MOST_WORKERS = 1 << 16  # an open loop with no cap and no request count splits over any number


@dataclass(frozen=True, slots=True)
class Part:
    """Worker ``worker`` of ``workers``: its load, its options (the run's id, its own seed) and its start's delay."""

    worker: int
    workers: int
    load: Load
    options: RunOptions
    offset_ns: int = 0  # after the common start: a constant schedule's workers interleave

    @property
    def requested(self) -> int:
        """Requests it was asked for, warm-up included (0 with a duration only)."""
        return 0 if self.load.requests is None else self.load.warmup + self.load.requests


@dataclass(frozen=True)
class Strided:
    """Worker ``offset`` of ``stride``'s chains of a dataset: its chain first + k is the dataset's first + k x stride
    + offset (first: where the run starts in the dataset, RunOptions.first_chain)."""

    dataset: Dataset
    first: int
    stride: int
    offset: int

    @property
    def name(self) -> str:
        return self.dataset.name

    @property
    def size(self) -> int | None:
        return self.dataset.size

    def chain(self, i: int) -> Chain:
        return self.dataset.chain(self.placed_chain(i))

    def placed_chain(self, i: int) -> int:
        """The dataset's index of this worker's chain i = first + (i - first) x stride + offset."""
        return self.first + (i - self.first) * self.stride + self.offset

    def placed(self, d: Done, run_id: str) -> Done:
        """A Done as a run in one process would have it: its chain the dataset's, and so a pair's group (named as
        load/engine.py names it: the run id's first 12 characters, p, the chain)."""
        if d.chain < 0:  # a warm-up: a prompt of its own
            return d
        chain = self.placed_chain(d.chain)
        if d.sample.prefix_turn is not None and d.sample.group_id is not None:
            d = dataclasses.replace(d, sample=dataclasses.replace(d.sample, group_id=f"{run_id[:12]}-p{chain}"))
        return dataclasses.replace(d, chain=chain)


def packed(d: Done) -> tuple[Done, Columns]:
    """A Done for the pipe to the parent: its timeline's events apart as columns, which pickle 7 times faster (and
    unpickle 3 times) than as Event objects (0.3 and 0.7 µs an event, measured)."""
    t = d.sample.timeline
    bare = dataclasses.replace(d.sample, timeline=dataclasses.replace(t, events=()))
    return dataclasses.replace(d, sample=bare), ([e.t_ns for e in t.events], "".join(e.kind for e in t.events),
                                                 [e.text for e in t.events])  # fmt: skip


def unpacked(bare: Done, columns: Columns) -> Done:
    """The Done :func:`packed` took apart, whole again."""
    times, kinds, texts = columns
    events = tuple(map(Event, times, map(KIND_OF_LETTER.__getitem__, kinds), texts))
    t = dataclasses.replace(bare.sample.timeline, events=events)
    return dataclasses.replace(bare, sample=dataclasses.replace(bare.sample, timeline=t))


def share(total: int, n: int, i: int) -> int:
    """Worker i's share of ``total`` over n = total // n, plus one for the first total % n workers."""
    return total // n + (i < total % n)


def most_workers(load: Load) -> int:
    """The most workers a load splits over: each needs a stream (its concurrency, an open loop's cap) and a
    measured request; bursts (a workload's, never a load test's) do not split."""
    if load.burst:
        return 1
    streams = load.max_concurrency if load.rate is not None else load.concurrency
    return min((b for b in (streams, load.requests) if b is not None), default=MOST_WORKERS)


def split_problem(load: Load, n: int, cpus: int) -> str:
    """Why ``n`` workers cannot share ``load`` on ``cpus`` CPUs; "" when they can."""
    if n > 2 * cpus:
        return f"{n} workers on {cpus} CPUs: at most {2 * cpus} (each worker needs most of a core to time its streams)"
    if n <= 1:
        return ""
    for what, bound, option in (
        ("concurrency", None if load.rate is not None else load.concurrency, "-c"),
        ("concurrency cap", load.max_concurrency, "--max-concurrency"),
        ("requests", load.requests, "-n"),
    ):
        if bound is not None and bound < n:
            return f"{n} workers for {what} {bound}: each needs one at least; give {option} {n} or more"
    return ""


def parts(load: Load, options: RunOptions, n: int, run_id: str) -> list[Part]:
    """Each worker's part of ``load`` (see the module docstring), all under ``run_id``."""
    seed = options.seed or 0

    def of(i: int) -> Part:
        part = dataclasses.replace(
            load,
            concurrency=None if load.concurrency is None else share(load.concurrency, n, i),
            rate=None if load.rate is None else load.rate / n,
            requests=None if load.requests is None else share(load.requests, n, i),
            warmup=share(load.warmup, n, i),
            max_concurrency=None if load.max_concurrency is None else share(load.max_concurrency, n, i),
        )
        mine = dataclasses.replace(options, run_id=run_id, seed=(seed + i * SEED_STEP) % SEEDS)
        offset = round(i / load.rate * 1e9) if load.rate is not None and load.arrival == "constant" else 0
        return Part(i, n, part, mine, offset)

    return [of(i) for i in range(n)]


def verdict(part: Part, record: RunRecord | None, requests: int, events: int) -> WorkerVerdict:
    """A worker's own verdict, from its record (None: it sent none, killed before it could)."""
    load = part.load
    return WorkerVerdict(
        worker=part.worker,
        concurrency=load.concurrency if load.rate is None else load.max_concurrency,
        rate=load.rate,
        requests=requests,
        events=events,
        client_bound=record is not None and record.client_bound,
        loop_lag_p99_ms=None if record is None else record.loop_lag_p99_ms,
        cpu_us_per_event=None if record is None else record.cpu_us_per_event,
    )


def merged_record(
    run_id: str,
    started: datetime,
    options: RunOptions,
    load: Load,
    ends: Sequence[tuple[Part, RunRecord | None, int, int]],
    parent_cpu_s: float,
) -> RunRecord:
    """The run's record from each worker's (part, record, requests ended, events): client-bound if any worker was,
    loop lag p50, p99 and max the worst worker's, CPU per event = (parent's CPU + each worker's CPU per event x its
    events) / all events."""
    records = [r for _, r, _, _ in ends if r is not None]
    events = sum(e for _, _, _, e in ends)
    cpu_s = parent_cpu_s + sum((r.cpu_us_per_event or 0.0) * e / 1e6 for _, r, _, e in ends if r is not None)

    def worst(values: Sequence[float | None]) -> float | None:
        return max((v for v in values if v is not None), default=None)

    return RunRecord(
        id=run_id,
        started_at=started,
        finished_at=datetime.now(UTC),
        command=options.command,
        concurrency=load.concurrency or load.max_concurrency or 0,
        requested=sum(r.requested if r is not None else part.requested for part, r, _, _ in ends),
        completed=sum(n for _, _, n, _ in ends),
        loop_lag_p50_ms=worst([r.loop_lag_p50_ms for r in records]),
        loop_lag_p99_ms=worst([r.loop_lag_p99_ms for r in records]),
        loop_lag_max_ms=worst([r.loop_lag_max_ms for r in records]),
        cpu_us_per_event=cpu_s * 1e6 / events if events and math.isfinite(cpu_s) else None,
        client_bound=any(r.client_bound for r in records),
        seed=options.seed,
    )
