"""Two load-test results side by side: per load level, each figure's change from run A to run B, and a verdict.

Points pair by their load: the same concurrency (closed loop) or the same rate (open loop); the arrival
process is not part of the key, and points of one run that the other lacks are listed, never compared.

The figures (SPECS): request rate, output tok/s, goodput, SLO attainment and output speed P50 (higher is
better); TTFT, TPOT and E2E P50 and P99, ITL P99 and errors, the share of requests that failed (lower is better).
Per figure, change = (B - A) / |A|. A figure is *worse* when it moved the wrong way (down for a higher-better
figure, up for a lower-better one) by more than the threshold **and** by more than its unit's noise floor
(NOISE_FLOOR: 1 ms for latencies, 0.1 tok/s, 0.01 req/s, half a percentage point for shares): a P99 TTFT from
2 ms to 2.5 ms is +25 % but says nothing about the server. *Better* mirrors it; anything else is *same*;
*n/a* when either run lacks the figure. The comparison *regressed* when any headline figure is worse; ITL P99
(one slow gap in thousands moves it) and output speed (TPOT's inverse: the same change twice) are shown but
never decide the verdict.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from tokenpace.config.load import Load
from tokenpace.measure.loadstats import Figures
from tokenpace.measure.results import BenchResult, Point

Verdict = Literal["better", "worse", "same", "n/a"]
Unit = Literal["ms", "tok/s", "req/s", "share"]
NOISE_FLOOR: dict[Unit, float] = {"ms": 1.0, "tok/s": 0.1, "req/s": 0.01, "share": 0.005}


def error_share(f: Figures) -> float | None:
    """Error share = (requests - ok) / requests; None with no requests."""
    return (f.requests - f.ok) / f.requests if f.requests else None


@dataclass(frozen=True, slots=True)
class Spec:
    """One compared figure: its name, unit, which way is better, whether it decides the verdict, its getter."""

    name: str
    unit: Unit
    higher_better: bool
    headline: bool
    get: Callable[[Figures], float | None]


SPECS: tuple[Spec, ...] = (
    Spec("request rate", "req/s", True, True, lambda f: f.request_rate),
    Spec("output tok/s", "tok/s", True, True, lambda f: f.output_tokens_per_s),
    Spec("goodput", "req/s", True, True, lambda f: f.goodput),
    Spec("SLO attainment", "share", True, True, lambda f: f.slo_attainment),
    Spec("output speed P50", "tok/s", True, False, lambda f: f.output_speed.p50),
    Spec("TTFT P50", "ms", False, True, lambda f: f.ttft.p50),
    Spec("TTFT P99", "ms", False, True, lambda f: f.ttft.p99),
    Spec("TPOT P50", "ms", False, True, lambda f: f.tpot.p50),
    Spec("TPOT P99", "ms", False, True, lambda f: f.tpot.p99),
    Spec("ITL P99", "ms", False, False, lambda f: f.itl.p99),
    Spec("E2E P50", "ms", False, True, lambda f: f.e2e.p50),
    Spec("E2E P99", "ms", False, True, lambda f: f.e2e.p99),
    Spec("errors", "share", False, True, error_share),
)


@dataclass(frozen=True, slots=True)
class Change:
    """One figure of one load level in both runs: A, B, the relative change (None: A is 0 or missing)."""

    figure: str
    unit: Unit
    a: float | None
    b: float | None
    change: float | None
    verdict: Verdict
    headline: bool


@dataclass(frozen=True, slots=True)
class PointComparison:
    """One load level both runs measured."""

    load: str
    changes: tuple[Change, ...]
    notes: tuple[str, ...] = ()  # e.g. one run was client-bound there


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


def judge(spec: Spec, a: float | None, b: float | None, threshold: float) -> Verdict:
    """better / worse when B moved past both the threshold (relative) and the unit's noise floor (absolute)."""
    if a is None or b is None:
        return "n/a"
    diff = b - a
    rel = relative(a, b)
    if abs(diff) <= NOISE_FLOOR[spec.unit] or (rel is not None and abs(rel) <= threshold):
        return "same"
    return "better" if (diff > 0) == spec.higher_better else "worse"


def load_key(load: Load) -> tuple[str, float]:
    """What pairs points: ("rate", R) for an open loop, ("concurrency", N) for a closed one."""
    return ("rate", load.rate) if load.rate is not None else ("concurrency", float(load.concurrency or 0))


def compare_point(a: Point, b: Point, threshold: float) -> PointComparison:
    """Every figure of SPECS at one load level, A against B."""
    changes = []
    for spec in SPECS:
        va, vb = spec.get(a.figures), spec.get(b.figures)
        change = None if va is None or vb is None else relative(va, vb)
        changes.append(Change(spec.name, spec.unit, va, vb, change, judge(spec, va, vb, threshold), spec.headline))
    notes = tuple(f"run {name} was client-bound here" for name, p in (("A", a), ("B", b)) if p.client_bound)
    return PointComparison(a.load.describe(), tuple(changes), notes)


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


def compare(a: BenchResult, b: BenchResult, threshold: float) -> Comparison:
    """B against A at each load level both measured; ``threshold`` is a relative change (0.1: 10 %)."""
    waiting: dict[tuple[str, float], list[Point]] = {}
    for p in b.points:
        waiting.setdefault(load_key(p.load), []).append(p)
    compared, only_a = [], []
    for p in a.points:
        match = waiting.get(load_key(p.load))
        if match:
            compared.append(compare_point(p, match.pop(0), threshold))
        else:
            only_a.append(p.load.describe())
    only_b = tuple(p.load.describe() for left in waiting.values() for p in left)
    regressions = tuple(
        f"{pc.load}: {c.figure} {describe_change(c)}"
        for pc in compared
        for c in pc.changes
        if c.headline and c.verdict == "worse"
    )
    return Comparison(threshold, tuple(compared), tuple(only_a), only_b, _differences(a, b), regressions)


def describe_change(c: Change) -> str:
    """ "+35%", or the absolute move where there is no relative one (from 0): "+2.5 pt", "+12 ms"."""
    if c.a is None or c.b is None:
        return "n/a"
    if c.change is not None:
        return f"{c.change:+.1%}"
    diff = c.b - c.a
    return f"{diff * 100:+.1f} pt" if c.unit == "share" else f"{diff:+.3g} {c.unit}"


def as_dict(c: Comparison) -> dict[str, Any]:
    """The comparison as JSON-ready data: every field, plus the verdict."""
    return {"verdict": c.verdict, **dataclasses.asdict(c)}
