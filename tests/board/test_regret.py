"""Regret of routing policies (board/regret.py, board/policies.py) on a hand-worked example: three endpoints of one
model, three hours, every pick and every regret worked out below."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from tokenpace.board import regret as r
from tokenpace.board.policies import policies
from tokenpace.board.regret import HourRegret, Past, Policy, Score, regret, score, summed, whole_hours
from tokenpace.store.series import Placed, SamplePoint

T0 = datetime(2026, 11, 2, tzinfo=UTC)
PRICES = {"a:free/m": 1.0, "b:free/m": 2.0, "c:free/m": 3.0}  # blended $ per 1M tokens: a is the cheapest
MIN = timedelta(minutes=1)
# (endpoint's provider, minutes from T0, output speed in tok/s)
SPEEDS = [
    ("a", -12 * 60, 100), ("b", -12 * 60, 60), ("c", -12 * 60, 110),  # the day before: only these
    ("b", -20, 180),  # the hour before T0: only b
    ("a", 10, 100), ("a", 40, 100), ("b", 10, 40), ("b", 40, 260), ("c", 10, 50), ("c", 40, 350),  # hour 1
    ("a", 70, 100), ("b", 70, 50), ("c", 70, 150), ("c", 100, 90),  # hour 2
    ("a", 130, 100), ("b", 130, 200),  # hour 3: c has no sample
]  # fmt: skip


def placed(provider: str, minutes: int, speed: float, region: str = "") -> Placed:
    point = SamplePoint(T0 + minutes * MIN, "1k", True, None, speed, None, None)
    return Placed(f"{provider}{minutes}", provider, "free", "m", region, point)


SAMPLES = [placed(*s) for s in sorted(SPEEDS, key=lambda s: s[1])]
HOURS = whole_hours(T0, T0 + timedelta(hours=3))


def by_name(scores: list[Score]) -> dict[str, Score]:
    return {s.policy: s for s in scores}


def test_the_worked_example() -> None:
    """Output speed, higher is better: regret = best / chosen. Medians per hour (the hindsight): hour 1: a 100,
    b (40+260)/2 = 150, c (50+350)/2 = 200 -> best c; hour 2: a 100, b 50, c (150+90)/2 = 120 -> best c; hour 3:
    a 100, b 200, c none -> best b.

    Cheapest first picks a every hour: 200/100 = 2.0, 120/100 = 1.2, 200/100 = 2.0; mean 5.2/3 = 1.7333.
    Fastest over the last 24 h, medians of the day before each hour: at T0 a 100, b (60+180)/2 = 120, c 110 -> b:
    200/150 = 1.3333. At 1 h: a 100, b median of 60 180 40 260 = 120, c median of 110 50 350 = 110 -> b: 120/50 =
    2.4. At 2 h: a 100, b median of 60 180 40 260 50 = 60, c median of 110 50 350 150 90 = 110 -> c, which has no
    sample in hour 3: left out, counted. Mean (1.3333 + 2.4)/2 = 1.8667 over 2 hours.
    The feed at P50 (route.rank, at least 1 sample): each endpoint's median over the freshest of the last 30 min,
    the last hour and 72 h that holds a sample. At T0: a 100 (72 h), b 180 (30 min), c 110 (72 h) -> b: 1.3333.
    At 1 h: over the last 30 min a 100, b 260, c 350 -> c, the best: 1.0. At 2 h: a 100 (1 h), b 50 (1 h), c 90
    (30 min) -> a: 200/100 = 2.0. Mean (1.3333 + 1 + 2)/3 = 1.4444: below both.
    The feed at P90 needs 44 samples in a window (sufficiency.samples_needed): no endpoint has them, none is in,
    and it picks nothing in any hour.

    Intervals: mean ± 1.96·s/√n. Cheapest: deviations 0.2667, -0.5333, 0.2667, s² = 0.42667/2, half =
    1.96·√(0.21333/3) = 0.5227 -> (1.2107, 2.2560). The feed at P50: s² = (0.01235 + 0.19753 + 0.30864)/2 =
    0.25926, half = 1.96·√(0.25926/3) = 0.5762 -> (0.8683, 2.0206), its low end cut at 1, under which no regret
    lies.
    """
    found = by_name(score(SAMPLES, policies(PRICES, min_samples=1), T0, T0 + timedelta(hours=3)))
    assert list(found) == ["cheapest first", "fastest over the last 24 h", "the feed at P50", "the feed at P90"]
    expected = {  # mean, hours, share of them at the best, no pick, unmeasured
        "cheapest first": (5.2 / 3, 3, 0.0, 0, 0),
        "fastest over the last 24 h": (28 / 15, 2, 0.0, 0, 1),
        "the feed at P50": (13 / 9, 3, 1 / 3, 0, 0),
        "the feed at P90": (None, 0, None, 3, 0),
    }
    for name, (mean, hours, share, no_pick, unmeasured) in expected.items():
        s = found[name]
        assert (s.model, s.region, s.key) == ("m", "", "output_speed")
        assert s.mean == pytest.approx(mean) and s.best_share == pytest.approx(share), name
        assert (s.hours, s.no_pick, s.unmeasured) == (hours, no_pick, unmeasured), name
    cheap, feed = found["cheapest first"], found["the feed at P50"]
    assert cheap.lo == pytest.approx(1.21068, abs=1e-4) and cheap.hi == pytest.approx(2.25599, abs=1e-4)
    assert feed.lo == 1.0 and feed.hi == pytest.approx(2.02062, abs=1e-4)
    day = found["fastest over the last 24 h"]  # s = 0.7542 over 2 hours: half = 1.96 * 0.7542 / 1.4142
    assert day.hi == pytest.approx(28 / 15 + 1.959964 * math.sqrt(128 / 225 / 2), abs=1e-4)


def test_each_hour_of_the_worked_example() -> None:
    (fastest,) = [p for p in policies(PRICES) if p.name.startswith("fastest")]
    series = r.tracks(SAMPLES, "output_speed")
    past = Past("output_speed", T0, series, SAMPLES, [s.point.started_at.timestamp() for s in SAMPLES])
    (hours,) = r.score_hours(past, [fastest], r.hindsight(series, "output_speed", HOURS))
    assert hours == [
        HourRegret(HOURS[0], "b:free/m", "c:free/m", pytest.approx(4 / 3)),  # type: ignore[arg-type]
        HourRegret(HOURS[1], "b:free/m", "c:free/m", pytest.approx(2.4)),  # type: ignore[arg-type]
        HourRegret(HOURS[2], "c:free/m", "b:free/m", None),
    ]


def test_regret_is_one_at_the_best_and_grows_the_worse_the_choice() -> None:
    assert regret(100, 100, higher_better=True) == regret(80, 80, higher_better=False) == 1.0
    assert regret(50, 200, higher_better=True) == 4.0  # a quarter of the speed: 4x the time per token
    assert regret(300, 200, higher_better=False) == 1.5  # a TTFT half as long again


def test_hours_without_a_pick_or_without_the_choice_are_counted_not_scored() -> None:
    nobody = Policy("never", "", lambda candidates, past: None)
    gone = Policy("gone", "", lambda candidates, past: "z:free/m")  # measured nowhere
    scores = score(SAMPLES, [nobody, gone], T0, T0 + timedelta(hours=3))
    assert [(s.policy, s.hours, s.mean, s.no_pick, s.unmeasured) for s in scores] == [
        ("never", 0, None, 3, 0),
        ("gone", 0, None, 0, 3),
    ]
    unpriced = by_name(score(SAMPLES, policies({}), T0, T0 + timedelta(hours=3)))["cheapest first"]
    assert (unpriced.hours, unpriced.no_pick, unpriced.lo) == (0, 3, None)


def test_a_policy_sees_nothing_at_or_after_the_hour_it_picks_for() -> None:
    seen: list[tuple[datetime, list[float], int]] = []

    def spy(candidates: object, past: Past) -> str | None:
        seen.append((past.t, past.values("b:free/m", 10**9), len(past.placed())))
        return None

    score(SAMPLES, [Policy("spy", "", spy)], T0, T0 + timedelta(hours=3))
    assert seen[0] == (T0, [60, 180], 4)  # the day before T0, never hour 1's samples
    assert seen[2] == (T0 + timedelta(hours=2), [60, 180, 40, 260, 50], 14)  # never hour 3's


def test_each_model_and_region_is_scored_apart_and_partial_hours_are_not() -> None:
    there = [placed(p, m, v, region="eu-west") for p, m, v in SPEEDS]
    scores = score(SAMPLES + there, policies(PRICES), T0, T0 + timedelta(hours=3, minutes=59))
    assert {(s.region, s.hours) for s in scores if s.policy == "cheapest first"} == {("", 3), ("eu-west", 3)}
    assert whole_hours(T0 + MIN, T0 + timedelta(hours=3)) == HOURS[1:]
    summary = summed("p", "m", "", "ttft_ms", [HourRegret(T0, "a:free/m", "a:free/m", 1.0)])
    assert (summary.mean, summary.lo, summary.hi, summary.best_share) == (1.0, None, None, 1.0)
