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
    ("b", -30, 180),  # the hour before T0: only b
    ("a", 10, 100), ("a", 40, 100), ("b", 10, 40), ("b", 40, 250), ("c", 10, 50),  # hour 1
    ("a", 70, 100), ("b", 70, 50), ("c", 70, 150), ("c", 100, 90),  # hour 2
    ("a", 130, 100), ("b", 130, 200),  # hour 3: c has no sample
]  # fmt: skip


def placed(provider: str, minutes: int, speed: float, region: str = "") -> Placed:
    point = SamplePoint(T0 + minutes * MIN, "1k", True, None, speed, None, None)
    return Placed(f"{provider}{minutes}", provider, "free", "m", region, point)


SAMPLES = [placed(*s) for s in sorted(SPEEDS, key=lambda s: s[1])]
HOURS_RULE = whole_hours(T0, T0 + timedelta(hours=3))


def by_name(scores: list[Score]) -> dict[str, Score]:
    return {s.policy: s for s in scores}


def test_the_worked_example() -> None:
    """Output speed, higher is better: regret = best / chosen. Medians per hour (the hindsight):
    hour 1: a 100, b (40+250)/2 = 145, c 50 -> best b 145; hour 2: a 100, b 50, c (150+90)/2 = 120 -> best c 120;
    hour 3: a 100, b 200, c none -> best b 200.

    Cheapest first picks a every hour: 145/100 = 1.45, 120/100 = 1.2, 200/100 = 2.0; mean 1.55.
    Fastest over the last 24 h, medians of the day before each hour: at T0 a 100, b (60+180)/2 = 120, c 110 -> b,
    the best: 1.0. At 1 h: a 100, b median of 60 180 40 250 = 120, c median of 110 50 = 80 -> b: 120/50 = 2.4.
    At 2 h: a 100, b median of 60 180 40 250 50 = 60, c median of 110 50 150 90 = 100: a and c tie at 100, a
    comes first A to Z -> a: 200/100 = 2.0. Mean 5.4/3 = 1.8.
    The feed at P50, the median of the last hour: at T0 only b (180) -> 1.0; at 1 h a 100, b 145, c 50 -> b:
    2.4; at 2 h a 100, b 50, c 120 -> c, which has no sample in hour 3: left out, counted. Mean 1.7 over 2 hours.
    The feed at P90 of a speed is its 10th percentile: at T0 b -> 1.0; at 1 h a 100, b 40 + 0.1 * 210 = 61,
    c 50 -> a: 120/100 = 1.2; at 2 h a 100, b 50, c 90 + 0.1 * 60 = 96 -> a: 200/100 = 2.0. Mean 4.2/3 = 1.4.

    Intervals: mean ± 1.96·s/√n. Cheapest: deviations -0.1, -0.35, 0.45, s² = 0.335/2, half = 1.96·√(0.1675/3) =
    0.4631 -> (1.0869, 2.0131). The feed at P90: s² = (0.16 + 0.04 + 0.36)/2 = 0.28, half = 1.96·√(0.28/3) =
    0.5988 -> (0.8012, 1.9988), its low end cut at 1, under which no regret lies.
    """
    found = by_name(score(SAMPLES, policies(PRICES), T0, T0 + timedelta(hours=3)))
    assert list(found) == ["cheapest first", "fastest over the last 24 h", "the feed at P50", "the feed at P90"]
    expected = {  # mean, hours, share of them at the best, unmeasured
        "cheapest first": (1.55, 3, 0.0, 0),
        "fastest over the last 24 h": (1.8, 3, 1 / 3, 0),
        "the feed at P50": (1.7, 2, 1 / 2, 1),
        "the feed at P90": (1.4, 3, 1 / 3, 0),
    }
    for name, (mean, hours, share, unmeasured) in expected.items():
        s = found[name]
        assert (s.model, s.region, s.key, s.no_pick) == ("m", "", "output_speed", 0)
        assert s.mean == pytest.approx(mean) and s.hours == hours and s.unmeasured == unmeasured, name
        assert s.best_share == pytest.approx(share), name
    cheap, p90 = found["cheapest first"], found["the feed at P90"]
    assert cheap.lo == pytest.approx(1.08688, abs=1e-4) and cheap.hi == pytest.approx(2.01312, abs=1e-4)
    assert p90.lo == 1.0 and p90.hi == pytest.approx(1.99879, abs=1e-4)
    assert found["the feed at P50"].hi == pytest.approx(1.7 + 1.959964 * math.sqrt(0.98 / 2), abs=1e-4)


def test_each_hour_of_the_worked_example() -> None:
    (fastest,) = [p for p in policies(PRICES) if p.name.startswith("fastest")]
    series = r.tracks(SAMPLES, "output_speed")
    past = Past("output_speed", T0, series, SAMPLES, [s.point.started_at.timestamp() for s in SAMPLES])
    hours = r.score_hours(past, fastest, r.hindsight(series, "output_speed", HOURS_RULE))
    assert hours == [
        HourRegret(HOURS_RULE[0], "b:free/m", "b:free/m", 1.0),
        HourRegret(HOURS_RULE[1], "b:free/m", "c:free/m", pytest.approx(2.4)),  # type: ignore[arg-type]
        HourRegret(HOURS_RULE[2], "a:free/m", "b:free/m", 2.0),
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
    assert seen[2] == (T0 + timedelta(hours=2), [60, 180, 40, 250, 50], 13)  # at most 24 h back


def test_each_model_and_region_is_scored_apart_and_partial_hours_are_not() -> None:
    there = [placed(p, m, v, region="eu-west") for p, m, v in SPEEDS]
    scores = score(SAMPLES + there, policies(PRICES), T0, T0 + timedelta(hours=3, minutes=59))
    assert {(s.region, s.hours) for s in scores if s.policy == "cheapest first"} == {("", 3), ("eu-west", 3)}
    assert whole_hours(T0 + MIN, T0 + timedelta(hours=3)) == HOURS_RULE[1:]
    summary = summed("p", "m", "", "ttft_ms", [HourRegret(T0, "a:free/m", "a:free/m", 1.0)])
    assert (summary.mean, summary.lo, summary.hi, summary.best_share) == (1.0, None, None, 1.0)
