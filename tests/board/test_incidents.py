"""Incidents by written rules (board/incidents.py) on scripted sample sequences with an injected clock: each opens
and closes at the sample its rule names, and a steady endpoint opens none over a simulated month."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from tokenpace.board.incidents import RULES, Incident, derive, of_endpoint
from tokenpace.config.incidents import IncidentsTable, Thresholds, thresholds
from tokenpace.measure.failures import ErrorKind
from tokenpace.store.series import Placed, SamplePoint

T0 = datetime(2026, 11, 1, tzinfo=UTC)
STEP = timedelta(minutes=10)  # the uncapped cadence
DAY = 144  # samples a day at that cadence
WEEK = 7 * DAY + 8  # a baseline's worth, and then some
RULE = Thresholds()  # issue 33's defaults


def sample(i: int, ok: bool = True, ttft: float = 100.0, workload: str = "1k", canary: bool | None = True,
           kind: str | None = None, region: str = "", minute: int = 0) -> Placed:  # fmt: skip
    """The i-th sample of a scripted endpoint (id 1000 + i), ``STEP`` apart from T0 (``minute`` later)."""
    point = SamplePoint(
        T0 + i * STEP + timedelta(minutes=minute), workload, ok, None if ok else kind or ErrorKind.HTTP_ERROR.value,
        300.0 if ok else None, ttft if ok else None, 500.0 if ok else None, canary_ok=canary if ok else None,
    )  # fmt: skip
    return Placed(str(1000 + i + 100_000 * minute), "groq", "free", "llama", region, point)


def script(oks: Sequence[bool], start: int = 0, **kw: object) -> list[Placed]:
    return [sample(start + i, ok, **kw) for i, ok in enumerate(oks)]  # type: ignore[arg-type]


def found(incidents: Sequence[Incident], rule: str) -> list[tuple[int, int | None]]:
    """(opening sample, closing sample) of a rule's incidents, as the scripts index them."""
    return [(int(c.opened_by[-1]) - 1000, None if c.closed_by is None else int(c.closed_by) - 1000)
            for c in incidents if c.rule == rule]  # fmt: skip


def test_an_outage_opens_critical_at_its_fifth_failure_and_closes_at_the_third_success() -> None:
    f = WEEK  # the first failure, after a clean week
    samples = script([True] * f + [False] * 8 + [True] * 120)
    incidents = of_endpoint(samples, RULE)
    assert found(incidents, "outage") == [(f + 4, f + 10)]
    (outage,) = [c for c in incidents if c.rule == "outage"]
    assert outage.severity == "critical" and outage.opened_by == tuple(map(str, range(1000 + f, 1000 + f + 5)))
    assert outage.opened_at == T0 + (f + 4) * STEP and outage.closed_at == T0 + (f + 10) * STEP
    # The success rate of the last 100 falls under 95% at the sixth failure, after a clean 7 days: major. It is
    # back at 95% once only the last 5 failures are among the last 100.
    assert found(incidents, "success-drop") == [(f + 5, f + 3 + 99)]
    assert {c.severity for c in incidents if c.rule == "success-drop"} == {"major"}
    assert found(incidents, "slowdown") == found(incidents, "wrong-answers") == []


def test_an_outage_without_a_clean_baseline_is_critical_only() -> None:
    incidents = of_endpoint(script([True] * 30 + [False] * 8 + [True] * 40), RULE)
    assert [c.rule for c in incidents] == ["outage"]  # 30 samples are no 7-day baseline of 50


def spaced(oks: Sequence[bool], minutes: float) -> list[Placed]:
    """Samples ``minutes`` apart, ids 1000 + i: several workloads' samples pooled, as the outage rule reads them."""
    return [
        Placed(str(1000 + i), "groq", "free", "llama", "", SamplePoint(
            T0 + timedelta(minutes=minutes * i), "1k", ok, None if ok else "http_error", None, 100.0 if ok else None,
            None))
        for i, ok in enumerate(oks)
    ]  # fmt: skip


def test_more_than_half_failing_over_15_minutes_opens_where_the_window_says_so() -> None:
    # 2.5 minutes apart: the 15 minutes up to a sample hold it and the 5 before. Alternating failures are half of
    # them, not more: nothing opens.
    assert found(of_endpoint(spaced([True] * 40 + [False, True] * 6 + [True] * 12, 2.5), RULE), "outage") == []
    # 40, 41, 43 and 44 fail: 4 of the 6 up to 44 (3 of 6 up to 43 is half). Never 5 failures in a row, nor 3
    # successes until 51, 52, 53, when 48..53 hold 2 failures.
    oks = [True] * 40 + [False, False, True] * 4 + [True] * 12
    assert found(of_endpoint(spaced(oks, 2.5), RULE), "outage") == [(44, 53)]
    # Ten minutes apart, the window never holds the 4 samples it needs: the run of 5 is what opens.
    assert found(of_endpoint(spaced(oks, 10), RULE), "outage") == []


def test_a_flapping_endpoint_opens_and_closes_at_each_named_sample() -> None:
    f = WEEK
    burst = [False] * 5 + [True] * 3
    # Two successes between failures do not close it (three in a row do), and four failures do not open it.
    oks = [True] * f + burst * 3 + [False] * 5 + [True] * 2 + [False] + [True] * 3 + [False] * 4 + [True] * 120
    incidents = of_endpoint(script(oks), RULE)
    assert found(incidents, "outage") == [(f + 4, f + 7), (f + 12, f + 15), (f + 20, f + 23), (f + 28, f + 34)]
    # 6 failures of the last 100 at f + 8; back to 5 once f + 28 has left them (f + 31 and f + 35..38 remain).
    assert found(incidents, "success-drop") == [(f + 8, f + 29 + 99)]


def test_a_slowdown_opens_minor_where_the_hours_median_passes_3x_the_same_hour_last_week() -> None:
    s = WEEK
    ttfts = [100.0] * s + [1000.0] * 12 + [100.0] * 20
    samples = [sample(i, ttft=v) for i, v in enumerate(ttfts)]
    incidents = of_endpoint(samples, RULE)
    # The hour up to a sample holds 6 of them: 3 slow make its median 550 ms, over 3 x 100; 2 make it 100.
    assert found(incidents, "slowdown") == [(s + 2, s + 12 + 3)]
    (slow,) = incidents
    assert (slow.severity, slow.workload) == ("minor", "1k")
    assert slow.opened_by == tuple(map(str, range(1000 + s - 3, 1000 + s + 3)))  # the hour up to it


def test_a_slowdown_needs_its_same_hour_baseline() -> None:
    ttfts = [100.0] * 100 + [1000.0] * 12  # no day before: nothing to compare with
    assert of_endpoint([sample(i, ttft=v) for i, v in enumerate(ttfts)], RULE) == []


def test_wrong_answers_open_major_at_the_fifth_failed_canary_of_twenty() -> None:
    verdicts = [True] * 20 + [False] * 5 + [True] * 30
    samples = [sample(i, canary=v) for i, v in enumerate(verdicts)]
    # 15 of 20 passed is under 80%; 16 of 20 (4 failures) is not, once 20 has left the last 20.
    assert found(of_endpoint(samples, RULE), "wrong-answers") == [(24, 40)]


def test_cancelled_and_unpublished_samples_are_not_judged() -> None:
    oks = [True] * 10 + [False] * 6 + [True] * 5
    cancelled = script(oks, kind=ErrorKind.CANCELLED.value)
    assert of_endpoint(cancelled, RULE) == []


def test_each_region_is_its_own_endpoint() -> None:
    here = script([True] * 10 + [False] * 6 + [True] * 5)
    there = script([True] * 21, region="eu-west")
    incidents = derive(sorted(here + there, key=lambda s: s.point.started_at), RULE)
    assert [(c.region, c.rule) for c in incidents] == [("", "outage")]


def test_a_steady_endpoint_opens_none_over_a_simulated_month() -> None:
    rng = random.Random(33)
    samples = []
    for i in range(31 * DAY):
        for w, (level, minute) in {"1k": (150.0, 0), "10k": (900.0, 1)}.items():
            ok = rng.random() > 0.005  # one failure in 200, at random
            ttft = level * rng.uniform(0.7, 1.4)
            samples.append(sample(i, ok, ttft, w, canary=rng.random() > 0.01, minute=minute))
    assert sum(not s.point.ok for s in samples) > 30  # failures there were: none made an incident
    assert derive(samples, RULE) == []


def test_every_rule_states_its_thresholds_on_methodology() -> None:
    texts = {r.name: r.text(RULE) for r in RULES}
    assert texts["outage"].startswith("Opens at the judged sample that makes the last 5 all failures")
    assert "more than 50%" in texts["outage"] and "15 min" in texts["outage"]
    assert "under 95%" in texts["success-drop"] and "7 d" in texts["success-drop"] and "99%" in texts["success-drop"]
    assert "3x" in texts["slowdown"] and "under 80%" in texts["wrong-answers"] and "last 100" in texts["success-drop"]
    assert not any("{" in t for t in texts.values())


def test_thresholds_come_from_the_config_table_and_are_checked() -> None:
    t = thresholds(IncidentsTable.model_validate({"outage_run": 3, "outage_window": "30m", "baseline": "3d"}))
    assert (t.outage_run, t.outage_window_s, t.baseline_s, t.drop_below) == (3, 1800.0, 3 * 86_400.0, 0.95)
    for bad in ({"outage_share": 1.5}, {"outage_run": 0}, {"baseline": "400d"}, {"nope": 1}, {"slow_factor": 1}):
        with pytest.raises(ValueError):
            IncidentsTable.model_validate(bad)
    samples = script([True] * 10 + [False] * 3 + [True] * 5)
    assert found(of_endpoint(samples, t), "outage") == [(12, 15)]
