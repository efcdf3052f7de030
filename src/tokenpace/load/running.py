"""A load level's figures kept as its requests end, in memory that does not grow with their count; mergeable.

A test of a million requests cannot keep every request to compute its figures at the end (each holds its
timeline), so :class:`RunningFigures` takes each :class:`~tokenpace.load.figures.Done` as it ends and keeps:

- exactly, whatever the count: requests, ok, errors by kind, the measured window (first send, last end), token
  sums, the sum of E2E (concurrency held), requests meeting the SLO, the release span (released rate) and the
  server's token count; so every rate, count and share is exact;
- each latency's values in a measure/quantiles.py Quantiles: exact while they fit (EXACT_VALUES), then a
  sketch within RELATIVE_ERROR beside the largest values kept exactly (the tail and MLPerf's early-stopping
  estimate stay exact to two million requests); means and maxima always exact;
- at most MAX_ROWS per-request rows for the report's charts, evenly thinned: every request while they fit,
  then every k-th in the order they ended, k doubling each time the rows reach the limit (so at least half the
  limit is kept, spread over the whole level).

:func:`figures` is the same over a list of requests. :meth:`RunningFigures.merge` adds another level's (a worker
process's) into this one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from tokenpace.config.traffic import Slo
from tokenpace.load import results
from tokenpace.load.figures import (
    EARLY_STOPPED,
    TAIL_Q,
    Done,
    Figures,
    TagFigures,
    latency_of,
    meets,
    per_second,
    request_itl_ms,
    server_tpot_ms,
    tpot_ms,
    wait_ms,
)
from tokenpace.load.results import Row, thin_evenly
from tokenpace.measure.metrics import NS_PER_MS
from tokenpace.measure.quantiles import Quantiles
from tokenpace.measure.stats import early_stop

_RowValues = tuple[int, float | None, float, int, bool, str]  # a Row with its send time in ns


@dataclass
class _Tagged:
    """One tag's requests: how many, how many ok, and their TTFT, TPOT and E2E."""

    requests: int = 0
    ok: int = 0
    ttft: Quantiles = field(default_factory=Quantiles)
    tpot: Quantiles = field(default_factory=Quantiles)
    e2e: Quantiles = field(default_factory=Quantiles)

    def merge(self, other: _Tagged) -> None:
        self.requests += other.requests
        self.ok += other.ok
        for mine, theirs in ((self.ttft, other.ttft), (self.tpot, other.tpot), (self.e2e, other.e2e)):
            mine.merge(theirs)


def release_rate(count: int, first_ns: int, last_ns: int) -> float | None:
    """Released rate = (releases - 1) / (last release - first release), req/s; None below two or over no time."""
    span = (last_ns - first_ns) / 1e9 if count > 1 else 0.0
    return (count - 1) / span if span > 0 else None


class RunningFigures:
    """A level's figures as its requests end (warm-up counted apart, left out of every figure); see the module
    docstring for what is exact. ``slo``: what goodput counts (None: no goodput)."""

    def __init__(self, slo: Slo | None = None, rows: int | None = None) -> None:
        self.slo = slo
        self.rows_limit = results.MAX_ROWS if rows is None else rows
        self.run_id = ""  # the first request's run: a level stopped in progress is written under it
        self.warmups = 0  # warm-up requests ended
        self.requests = 0  # measured requests ended, ok or not
        self.ok = 0
        self.errors: Counter[str] = Counter()
        self.first_sent_ns: int | None = None
        self.last_end_ns: int | None = None
        self.first_asked_ns: int | None = None
        self.last_asked_ns: int | None = None
        self.chains_end: int | None = None  # one past the highest chain measured
        self.output_tokens = self.input_tokens = 0
        self.server_tokens = 0
        self.server_missing = False  # an ok request without the server's count: no throughput in its tokens
        self.busy_s = 0.0  # Σ E2E of the measured requests, s
        self.good = 0
        self.ttft, self.tpot, self.itl, self.e2e = Quantiles(), Quantiles(), Quantiles(), Quantiles()
        self.wait, self.speed, self.tpot_server = Quantiles(), Quantiles(), Quantiles()
        self.ttft_scheduled, self.e2e_scheduled = Quantiles(), Quantiles()
        self.tags: dict[str, _Tagged] = {}
        self._rows: list[_RowValues] = []
        self._stride, self._seen = 1, 0

    def _own(self) -> list[Quantiles]:
        own = [self.ttft, self.tpot, self.itl, self.e2e, self.wait, self.speed, self.tpot_server]
        return [*own, self.ttft_scheduled, self.e2e_scheduled]

    def quantiles(self) -> list[Quantiles]:
        """Every Quantiles this holds, its tags' included."""
        return self._own() + [q for t in self.tags.values() for q in (t.ttft, t.tpot, t.e2e)]

    def held(self) -> int:
        """Values and rows held in memory: bounded whatever the number of requests."""
        return sum(q.held() for q in self.quantiles()) + len(self._rows)

    def add(self, d: Done) -> None:
        s = d.sample
        self.run_id = self.run_id or s.run_id
        if d.warmup:
            self.warmups += 1
            return
        m, t = s.metrics, s.timeline
        self.requests += 1
        self.first_sent_ns = t.t_sent_ns if self.first_sent_ns is None else min(self.first_sent_ns, t.t_sent_ns)
        self.last_end_ns = t.t_end_ns if self.last_end_ns is None else max(self.last_end_ns, t.t_end_ns)
        self.first_asked_ns = d.asked_ns if self.first_asked_ns is None else min(self.first_asked_ns, d.asked_ns)
        self.last_asked_ns = d.asked_ns if self.last_asked_ns is None else max(self.last_asked_ns, d.asked_ns)
        self.chains_end = max(self.chains_end or 0, d.chain + 1)
        self.busy_s += (m.e2e_ms or 0.0) / 1000
        late = wait_ms(d)
        self.wait.add(late)
        tagged = self.tags.setdefault(d.tag, _Tagged())
        tagged.requests += 1
        self.good += self.slo is not None and meets(s, self.slo)
        self._row((t.t_sent_ns, m.ttft_ms, (t.t_end_ns - t.t_sent_ns) / NS_PER_MS, m.output_tokens, s.ok, d.tag))
        if not s.ok:
            self.errors[str(s.error_kind)] += 1
            return
        self.ok += 1
        tagged.ok += 1
        self.output_tokens += m.output_tokens
        self.input_tokens += s.input_tokens or 0
        if m.ttft_ms is not None:
            self.ttft.add(m.ttft_ms)
            tagged.ttft.add(m.ttft_ms)
            self.ttft_scheduled.add(m.ttft_ms + late)  # from_schedule_ms
        if (tpot := tpot_ms(s)) is not None:
            self.tpot.add(tpot)
            tagged.tpot.add(tpot)
        if (e2e := m.e2e_ms) is not None:
            self.e2e.add(e2e)
            tagged.e2e.add(e2e)
            self.e2e_scheduled.add(e2e + late)
        self.itl.extend(request_itl_ms(s))
        if m.output_speed is not None:
            self.speed.add(m.output_speed)
        if m.provider_output_tokens is None:
            self.server_missing = True
        else:
            self.server_tokens += m.provider_output_tokens
        if (tpot_server := server_tpot_ms(s)) is not None:
            self.tpot_server.add(tpot_server)

    def _row(self, row: _RowValues) -> None:
        self._seen += 1
        if (self._seen - 1) % self._stride:
            return
        self._rows.append(row)
        if len(self._rows) > self.rows_limit:  # every other one goes: the stride doubles
            self._rows = self._rows[::2]
            self._stride *= 2

    def merge(self, other: RunningFigures) -> None:
        """Add ``other``'s requests (another worker's share of the level) to this one's figures."""
        self.run_id = self.run_id or other.run_id
        for name in ("warmups", "requests", "ok", "output_tokens", "input_tokens", "server_tokens", "good"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.busy_s += other.busy_s
        self.errors.update(other.errors)
        self.server_missing = self.server_missing or other.server_missing
        self.first_sent_ns = _least(self.first_sent_ns, other.first_sent_ns)
        self.first_asked_ns = _least(self.first_asked_ns, other.first_asked_ns)
        self.last_end_ns = _most(self.last_end_ns, other.last_end_ns)
        self.last_asked_ns = _most(self.last_asked_ns, other.last_asked_ns)
        self.chains_end = _most(self.chains_end, other.chains_end)
        for mine, theirs in zip(self._own(), other._own(), strict=True):
            mine.merge(theirs)
        for tag, tagged in other.tags.items():
            self.tags.setdefault(tag, _Tagged()).merge(tagged)
        rows = sorted(self._rows + other._rows)
        self._rows = list(thin_evenly(rows, self.rows_limit))
        self._seen += other._seen
        self._stride = max(self._stride, other._stride)

    @property
    def window_s(self) -> float:
        """Measured window = last end - first send, seconds (0 with no request)."""
        if self.first_sent_ns is None or self.last_end_ns is None:
            return 0.0
        return (self.last_end_ns - self.first_sent_ns) / 1e9

    def released_rate(self) -> float | None:
        """:func:`release_rate` of the measured requests' scheduled starts."""
        if self.first_asked_ns is None or self.last_asked_ns is None:
            return None
        return release_rate(self.requests, self.first_asked_ns, self.last_asked_ns)

    def rows(self) -> tuple[Row, ...]:
        """The rows kept, in send order, t_s from the first measured send."""
        t0 = self.first_sent_ns or 0
        ordered = sorted(self._rows, key=lambda r: r[0])
        return tuple(Row((sent - t0) / 1e9, ttft, e2e, tokens, ok, tag) for sent, ttft, e2e, tokens, ok, tag in ordered)

    def figures(self, offered_rate: float | None = None) -> Figures:
        """The level's figures (load/figures.py's Figures: each formula there); latencies over ok requests, ``wait``
        and ``concurrency_held`` over every measured request."""
        window = self.window_s
        good = None if self.slo is None else self.good
        server = None if not self.ok or self.server_missing else self.server_tokens
        tags = sorted(self.tags)
        by_tag = tuple(self._tag_figures(t) for t in tags) if tags != [""] else ()
        tails = (self.ttft, self.tpot, self.e2e)
        return Figures(
            requests=self.requests,
            ok=self.ok,
            errors=dict(sorted(self.errors.items())),
            duration_s=window,
            request_rate=per_second(self.ok, window),
            output_tokens_per_s=per_second(self.output_tokens, window),
            input_tokens_per_s=per_second(self.input_tokens, window),
            concurrency_held=per_second(self.busy_s, window),
            ttft=latency_of(self.ttft),
            tpot=latency_of(self.tpot),
            itl=latency_of(self.itl),
            e2e=latency_of(self.e2e),
            wait=latency_of(self.wait),
            output_speed=latency_of(self.speed),
            goodput=None if good is None else per_second(good, window),
            slo_attainment=None if good is None or not self.requests else good / self.requests,
            by_tag=by_tag,
            offered_rate=offered_rate,
            ttft_from_schedule=latency_of(self.ttft_scheduled),
            e2e_from_schedule=latency_of(self.e2e_scheduled),
            tpot_server=latency_of(self.tpot_server),
            output_tokens_per_s_server=None if server is None else per_second(server, window),
            early_stopping={n: early_stop(q.ordered(), TAIL_Q) for n, q in zip(EARLY_STOPPED, tails, strict=True)},
        )

    def _tag_figures(self, tag: str) -> TagFigures:
        t = self.tags[tag]
        return TagFigures(tag, t.requests, t.ok, latency_of(t.ttft), latency_of(t.tpot), latency_of(t.e2e))


def figures(done: Iterable[Done], slo: Slo | None = None, offered_rate: float | None = None) -> Figures:
    """A load level's figures over its measured (non-warm-up) requests: :class:`RunningFigures` fed each."""
    running = RunningFigures(slo)
    for d in done:
        running.add(d)
    return running.figures(offered_rate)


def _least(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _most(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)
