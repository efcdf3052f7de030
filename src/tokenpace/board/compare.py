"""Two load-test results side by side: per load level, each figure's change from run A to run B, and a verdict.

Points pair by their load: the same concurrency (closed loop) or the same rate (open loop); the arrival
process is not part of the key, and points of one run that the other lacks are listed, never compared.

The figures (SPECS), each a row of the figure catalogue (measure/catalogue.py: its label, unit and which way is
better): request rate, output throughput, goodput, SLO attainment and output speed P50 (higher is better); TTFT,
TPOT and E2E P50 and P99, ITL P99 and errors, the share of requests that failed (lower is better).
Per figure, change = (B - A) / |A|. A figure is *worse* when it moved the wrong way (down for a higher-better
figure, up for a lower-better one) by more than the threshold **and** by more than its unit's noise floor
(NOISE_FLOOR: 1 ms for latencies and TPOT, 0.1 tok/s, 0.01 req/s, half a percentage point for shares): a P99 TTFT from
2 ms to 2.5 ms is +25 % but says nothing about the server. *Better* mirrors it; anything else is *same*;
*n/a* when either run lacks the figure. The comparison *regressed* when any headline figure is worse; ITL P99
(one slow gap in thousands moves it), output speed (TPOT's inverse: the same change twice) and TPOT P50 and
output throughput in the server's own tokens (the o200k figures' change again, in another count) are shown but
never decide the verdict.

Noise. A run's figure is one draw: a second run of the same server moves a P99 of 100 requests by more than
any threshold worth setting. So each figure also gets a 95 % interval per run, and a move past the threshold
is *worse* (or *better*) only when A's and B's intervals do not overlap (:func:`judge`):

- over the requests, from the rows each point keeps: for a latency percentile, the distribution-free interval
  of that quantile between two order statistics (measure/stats.py's :func:`quantile_interval`); for the error
  share, the Wilson interval;
- over the repeats (``bench --repeat N``, every point of a load level): the range of the repeats' figures (it
  holds the median of the repeats' distribution with probability 1 - 2 / 2^N: 75 % at 3, 94 % at 5). This is
  the only interval of the rates, whose noise is run to run;
- a figure's interval is the widest of those it has; without any (a rate of one run) the threshold alone
  decides, as before. A figure's value with repeats is the median of the repeats' values.

Two 95 % intervals that do not overlap differ at about the 0.5 % level: a CI gate that fails only then (and
past the threshold) fails on the server, not on the noise. A repeat whose level was invalid (its dispatch delay
passed ``--max-dispatch-p99``: the client did not give the load asked) is left out, with a note; a level left
with no valid repeat in either run is not compared.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tokenpace.config.traffic import Load
from tokenpace.load.figures import Figures, tpot_from
from tokenpace.load.results import BenchPoint, BenchResult, Row
from tokenpace.measure.catalogue import UNIT_TEXT, Metric, Unit, metric
from tokenpace.measure.stats import Figure, quantile_interval, share_interval

Verdict = Literal["better", "worse", "same", "n/a"]
NOISE_FLOOR: dict[Unit, float] = {"ms": 1.0, "ms/tok": 1.0, "tok/s": 0.1, "req/s": 0.01, "share": 0.005}
Interval = tuple[float, float]


def error_share(f: Figures) -> float | None:
    """Error share = (requests - ok) / requests; None with no requests."""
    return (f.requests - f.ok) / f.requests if f.requests else None


@dataclass(frozen=True, slots=True)
class Spec:
    """One compared figure: its catalogue row (label, unit, which way is better) and statistic ("P99"; "" for
    a rate), whether it decides the verdict, its getter; for a latency percentile, the quantile and each
    request's value of it (from the point's rows); for any percentile, the Figure it is one of (``of``: whose n
    it was computed over)."""

    metric: Metric
    stat: str
    headline: bool
    get: Callable[[Figures], float | None]
    q: float | None = None
    per_request: Callable[[Row], float | None] | None = None
    of: Callable[[Figures], Figure] | None = None

    @property
    def name(self) -> str:
        """The label and statistic: "TTFT P99", "Request rate"."""
        return f"{self.metric.label} {self.stat}".strip()

    @property
    def unit(self) -> Unit:
        return self.metric.unit

    @property
    def higher_better(self) -> bool:
        return self.metric.higher_better


def row_ttft(r: Row) -> float | None:
    return r.ttft_ms


def row_tpot(r: Row) -> float | None:
    """A row's TPOT, by load/figures.py's formula (:func:`tpot_from`)."""
    return tpot_from(r.ttft_ms, r.e2e_ms, r.output_tokens)


def row_e2e(r: Row) -> float | None:
    return r.e2e_ms


SPECS: tuple[Spec, ...] = (
    Spec(metric("request_rate"), "", True, lambda f: f.request_rate),
    Spec(metric("output_tokens_per_s"), "", True, lambda f: f.output_tokens_per_s),
    Spec(metric("goodput"), "", True, lambda f: f.goodput),
    Spec(metric("slo_attainment"), "", True, lambda f: f.slo_attainment),
    Spec(metric("output_speed"), "P50", False, lambda f: f.output_speed.p50, of=lambda f: f.output_speed),
    Spec(metric("ttft_ms"), "P50", True, lambda f: f.ttft.p50, 0.5, row_ttft, lambda f: f.ttft),
    Spec(metric("ttft_ms"), "P99", True, lambda f: f.ttft.p99, 0.99, row_ttft, lambda f: f.ttft),
    Spec(metric("tpot_ms"), "P50", True, lambda f: f.tpot.p50, 0.5, row_tpot, lambda f: f.tpot),
    Spec(metric("tpot_ms"), "P99", True, lambda f: f.tpot.p99, 0.99, row_tpot, lambda f: f.tpot),
    Spec(metric("itl_ms"), "P99", False, lambda f: f.itl.p99, of=lambda f: f.itl),
    Spec(metric("e2e_ms"), "P50", True, lambda f: f.e2e.p50, 0.5, row_e2e, lambda f: f.e2e),
    Spec(metric("e2e_ms"), "P99", True, lambda f: f.e2e.p99, 0.99, row_e2e, lambda f: f.e2e),
    Spec(metric("error_share"), "", True, error_share),
    Spec(metric("tpot_server_ms"), "P50", False, lambda f: f.tpot_server.p50, of=lambda f: f.tpot_server),
    Spec(metric("output_tokens_per_s_server"), "", False, lambda f: f.output_tokens_per_s_server),
)


@dataclass(frozen=True, slots=True)
class LevelChange:
    """One figure of one load level in both runs: A, B, the relative change (None: A is 0 or missing), each
    run's 95 % interval of it (None: none to give) and, for a percentile, each run's n: the values it was
    computed over, one per repeat (() for a figure that is no percentile)."""

    figure: str
    unit: Unit
    a: float | None
    b: float | None
    change: float | None
    verdict: Verdict
    headline: bool
    a_interval: Interval | None = None
    b_interval: Interval | None = None
    a_n: tuple[int, ...] = ()
    b_n: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class PointComparison:
    """One load level both runs measured."""

    load: str
    changes: tuple[LevelChange, ...]
    notes: tuple[str, ...] = ()  # e.g. one run was client-bound there
    repeats: tuple[int, int] = (1, 1)  # valid repeats of the level compared in A and in B


@dataclass(frozen=True, slots=True)
class Comparison:
    """Run B against run A: compared load levels, those only one run has, and what regressed."""

    threshold: float
    points: tuple[PointComparison, ...]
    only_a: tuple[str, ...] = ()
    only_b: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # the runs differ in endpoint, dataset or SLO
    regressions: tuple[str, ...] = ()  # "concurrency 8: TTFT P99 +35%", one per headline figure worse

    @property
    def verdict(self) -> Literal["regressed", "improved", "same", "incomparable"]:
        if not self.points:
            return "incomparable"
        if self.regressions:
            return "regressed"
        better = any(c.verdict == "better" and c.headline for p in self.points for c in p.changes)
        return "improved" if better else "same"


def relative(a: float, b: float) -> float | None:
    """Relative change = (b - a) / |a|; None when a is 0."""
    return (b - a) / abs(a) if a else None


def judge(
    spec: Spec, a: float | None, b: float | None, threshold: float,
    a_interval: Interval | None = None, b_interval: Interval | None = None,
) -> Verdict:  # fmt: skip
    """better / worse when B moved past the threshold (relative), the unit's noise floor (absolute) and, when
    both runs have an interval, outside A's (the intervals do not overlap)."""
    if a is None or b is None:
        return "n/a"
    diff = b - a
    rel = relative(a, b)
    if abs(diff) <= NOISE_FLOOR[spec.unit] or (rel is not None and abs(rel) <= threshold):
        return "same"
    if a_interval is not None and b_interval is not None and overlap(a_interval, b_interval):
        return "same"
    return "better" if (diff > 0) == spec.higher_better else "worse"


def overlap(a: Interval, b: Interval) -> bool:
    """Two closed intervals overlap when each starts no later than the other ends."""
    return a[0] <= b[1] and b[0] <= a[1]


def load_key(load: Load) -> tuple[str, float]:
    """What pairs points: ("rate", R) for an open loop, ("concurrency", N) for a closed one."""
    return ("rate", load.rate) if load.rate is not None else ("concurrency", float(load.concurrency or 0))


def repeat_values(spec: Spec, points: Sequence[BenchPoint]) -> list[float]:
    """The figure's value in each repeat of a level that has it."""
    return [v for p in points if (v := spec.get(p.figures)) is not None]


def counts(spec: Spec, points: Sequence[BenchPoint]) -> tuple[int, ...]:
    """A percentile's n in each repeat of a level that has it; () for a figure that is no percentile."""
    of = spec.of
    return () if of is None else tuple(of(p.figures).n for p in points if spec.get(p.figures) is not None)


def value(spec: Spec, points: Sequence[BenchPoint]) -> float | None:
    """A figure of a level's repeats = the median of its repeats' values (the value itself for one run)."""
    values = repeat_values(spec, points)
    return statistics.median(values) if values else None


PerRequest = Callable[[Row], float | None]


def request_values(points: Sequence[BenchPoint]) -> dict[PerRequest, list[float]]:
    """Each per-request figure's values over the points' ok rows, sorted: once for every spec that reads them."""
    rows = [r for p in points for r in p.rows if r.ok]
    getters = dict.fromkeys(s.per_request for s in SPECS if s.per_request is not None)
    return {get: sorted(v for r in rows if (v := get(r)) is not None) for get in getters}


def figure_interval(
    spec: Spec, points: Sequence[BenchPoint], ordered: Mapping[PerRequest, Sequence[float]]
) -> Interval | None:
    """The widest of: the range over the repeats (two or more), and the interval over the requests' rows
    (a latency quantile's order statistics over ``ordered``, the points' :func:`request_values`, or the error
    share's Wilson interval); None with neither."""
    found: list[Interval] = []
    values = repeat_values(spec, points)
    if len(values) >= 2:
        found.append((min(values), max(values)))
    if spec.per_request is not None and spec.q is not None:
        lo, hi = quantile_interval(ordered[spec.per_request], spec.q)
        if lo is not None and hi is not None:
            found.append((lo, hi))
    elif spec.get is error_share:
        rows = [r for p in points for r in p.rows]
        if rows and (share := share_interval(sum(not r.ok for r in rows), len(rows))):
            found.append(share)
    return (min(i[0] for i in found), max(i[1] for i in found)) if found else None


def compare_point(
    a: BenchPoint | Sequence[BenchPoint], b: BenchPoint | Sequence[BenchPoint], threshold: float
) -> PointComparison:
    """Every figure of SPECS at one load level, A's repeats against B's (a point each, or one point)."""
    a_points = [a] if isinstance(a, BenchPoint) else list(a)
    b_points = [b] if isinstance(b, BenchPoint) else list(b)
    a_ordered, b_ordered = request_values(a_points), request_values(b_points)
    changes = []
    for spec in SPECS:
        va, vb = value(spec, a_points), value(spec, b_points)
        ia, ib = figure_interval(spec, a_points, a_ordered), figure_interval(spec, b_points, b_ordered)
        change = None if va is None or vb is None else relative(va, vb)
        verdict = judge(spec, va, vb, threshold, ia, ib)
        ns = counts(spec, a_points), counts(spec, b_points)
        changes.append(LevelChange(spec.name, spec.unit, va, vb, change, verdict, spec.headline, ia, ib, *ns))
    notes = tuple(
        f"run {name} was client-bound here" for name, ps in (("A", a_points), ("B", b_points))
        if any(p.client_bound for p in ps)
    )  # fmt: skip
    return PointComparison(a_points[0].load.describe(), tuple(changes), notes, (len(a_points), len(b_points)))


def _differences(a: BenchResult, b: BenchResult) -> tuple[str, ...]:
    notes = []
    for label, va, vb in (
        ("endpoint", a.endpoint, b.endpoint),
        ("dataset", a.dataset, b.dataset),
        ("SLO", a.slo.describe() if a.slo else "none", b.slo.describe() if b.slo else "none"),
    ):
        if va != vb:
            notes.append(f"the runs differ in {label}: A {va}, B {vb}")
    return tuple(notes)


def _levels(r: BenchResult, run: str, notes: list[str]) -> dict[tuple[str, float], list[BenchPoint]]:
    """A run's valid points by load level, in order; each invalid one left out with a note."""
    grouped: dict[tuple[str, float], list[BenchPoint]] = {}
    for p in r.points:
        if p.invalid:
            which = f" (repeat {p.repeat})" if p.repeat else ""
            notes.append(f"run {run}, {p.load.describe()}{which} left out: {p.invalid}")
            continue
        grouped.setdefault(load_key(p.load), []).append(p)
    return grouped


def compare(a: BenchResult, b: BenchResult, threshold: float) -> Comparison:
    """B against A at each load level both measured (all its valid repeats); ``threshold``: relative (0.1: 10 %)."""
    notes = list(_differences(a, b))
    in_a, in_b = _levels(a, "A", notes), _levels(b, "B", notes)
    compared = [compare_point(ps, in_b[key], threshold) for key, ps in in_a.items() if key in in_b]
    only_a = tuple(ps[0].load.describe() for key, ps in in_a.items() if key not in in_b)
    only_b = tuple(ps[0].load.describe() for key, ps in in_b.items() if key not in in_a)
    regressions = tuple(
        f"{pc.load}: {c.figure} {describe_change(c)}"
        for pc in compared
        for c in pc.changes
        if c.headline and c.verdict == "worse"
    )
    return Comparison(threshold, tuple(compared), only_a, only_b, tuple(notes), regressions)


def describe_change(c: LevelChange) -> str:
    """ "+35%", or the absolute move where there is no relative one (from 0): "+2.5 pt", "+12 ms"."""
    if c.a is None or c.b is None:
        return "n/a"
    if c.change is not None:
        return f"{c.change:+.1%}"
    diff = c.b - c.a
    return f"{diff * 100:+.1f} pt" if c.unit == "share" else f"{diff:+.3g} {UNIT_TEXT[c.unit]}"


def comparison_dict(c: Comparison) -> dict[str, Any]:
    """The comparison as JSON-ready data: every field, plus the verdict."""
    return {"verdict": c.verdict, **dataclasses.asdict(c)}
