"""The incident log walks on over new samples (board/tracking.py) and finds what deriving every sample again finds:
a scripted month in a real SQLite store, refreshed every two hours, compared with a derivation from scratch at
each checkpoint (one with an outage open across the horizon); samples stored after later ones began, and samples
stored days late, published or not."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from tests.store.test_windows import stream
from tokenpace.board import outages, tracking
from tokenpace.board.incidents import Incident, derive
from tokenpace.board.tracking import RESUME_MARGIN_S, IncidentLog, read_start
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.incidents import Thresholds
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.sample import Origin, make_sample
from tokenpace.store.database import Store, open_store
from tokenpace.store.series import EndpointRegion, placed_series

T0 = datetime(2026, 11, 1, tzinfo=UTC)
STEP = timedelta(minutes=10)
DAY = 144  # steps a day
GROQ = Endpoint("groq", "llama", "http://groq.invalid/v1", plan="free")
RULE = Thresholds()
OUTAGE = range(9 * DAY + 30, 9 * DAY + 48)  # three hours failing, here, on both workloads
SLOW = range(12 * DAY + 60, 12 * DAY + 72)  # two hours of 10x TTFT on 1k
WRONG = range(15 * DAY + 10, 15 * DAY + 20)  # canaries failing on 1k
THERE = range(20 * DAY + 5, 20 * DAY + 13)  # an outage seen from eu-west only
FLAPS = {25 * DAY + k for k in (0, 1, 2, 3, 4, 8, 9, 10, 11, 12, 13, 20, 21, 22, 23, 24)}
OPEN_ACROSS = OUTAGE.start + 16  # a checkpoint while the outage is open, its opening sample behind the horizon


def put(store: Store, step: int, workload: str, region: str, ok: bool, ttft: float, canary: bool,
        minute: int = 0, published: bool = True) -> None:  # fmt: skip
    failure = None if ok else Failure(ErrorKind.HTTP_ERROR, "down", 503)
    at = T0 + step * STEP + timedelta(minutes=minute)
    origin = Origin(region, f"{region}-1" if region else None)
    sample = make_sample(
        "run", GROQ, workload, at, stream(ttft, 10, failure=failure), origin=origin, published=published
    )
    store.add_sample(dataclasses.replace(sample, canary="c", canary_ok=canary if ok else None))


def write_step(store: Store, step: int, rng: random.Random) -> None:
    """Step ``step``'s samples: 1k here, eu-west's 1k, and here the 10k of the step before (stored after later
    samples began, as a long request ends after a short one started)."""
    down = step in OUTAGE or step in FLAPS
    put(store, step, "1k", "", not down and rng.random() > 0.003, 1000.0 if step in SLOW else 100.0,
        step not in WRONG and rng.random() > 0.005)  # fmt: skip
    put(store, step, "1k", "eu-west", step not in THERE and rng.random() > 0.005, 120.0, True, minute=2)
    if step > 0:
        put(store, step - 1, "10k", "", step - 1 not in OUTAGE and rng.random() > 0.003, 900.0, True, minute=3)


def from_scratch(
    store: Store, now: datetime, days: int = outages.SPAN_DAYS
) -> tuple[list[Incident], dict[EndpointRegion, Counter[date]]]:
    """What a derivation from every sample finds at ``now``: board/incidents.py's pure walk over the same read."""
    placed = placed_series(store, since=read_start(now, days, RULE))
    first = now - timedelta(days=days)
    found = [c for c in derive(placed, RULE) if (c.closed_at or now) >= first and c.opened_at <= now]
    counted: dict[EndpointRegion, Counter[date]] = {}
    for s in placed:
        counted.setdefault((s.provider, s.plan, s.model, s.region), Counter())[s.point.started_at.date()] += 1
    return found, counted


def test_a_month_walked_on_every_two_hours_finds_what_a_derivation_from_scratch_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tracks drop what no rule reads any more past 64 samples, not 4,096: a month then drops some at each refresh.
    monkeypatch.setattr(tracking, "TRIM_AT", 64)
    rng = random.Random(7)
    checkpoints = {OPEN_ACROSS, OUTAGE.stop + 20, SLOW.start + 8, WRONG.stop + 5, THERE.stop + 2, 25 * DAY + 30}
    checkpoints |= {d * DAY for d in (3, 7, 8, 14, 21, 28, 31)}  # 2026-11-05 and -12 (Thursdays): new weeks
    seen: set[str] = set()
    with open_store(str(tmp_path / "month.db")) as store:
        log = IncidentLog(store, RULE, outages.SPAN_DAYS)
        for step in range(31 * DAY + 1):
            write_step(store, step, rng)
            if step % 12 == 0 or step in checkpoints:
                store.flush()
                now = T0 + step * STEP + timedelta(minutes=5)
                derived = log.refresh(now)
                if step in checkpoints:
                    found, counted = from_scratch(store, now)
                    assert derived.found == found, f"step {step}"
                    assert derived.days == counted
                    assert outages.read_incidents(store, RULE, now) == derived
                    seen |= {f"{c.rule} {c.region} {'open' if c.closed_at is None else 'closed'}" for c in found}
                if step == OPEN_ACROSS:
                    (outage,) = [c for c in derived.found if c.rule == "outage" and c.closed_at is None]
                    assert outage.opened_at < now - timedelta(seconds=RESUME_MARGIN_S)  # behind the horizon
        assert log.rederived == 0  # nothing arrived later than the margin
        # Every rule opened, the outage was seen open, and a refresh read each sample about once (the last hour's
        # again at each refresh, and all once more at each of the 4 new weeks), not the whole span each time.
        assert {"outage  open", "outage  closed", "success-drop  closed", "slowdown  closed"} <= seen
        assert {"wrong-answers  closed", "outage eu-west closed"} <= seen
        total = len(placed_series(store, since=T0))
        assert log.read < 8 * total


def test_a_sample_stored_days_late_derives_its_endpoint_again_and_no_other(any_store: Store) -> None:
    rng = random.Random(8)
    store = any_store  # SQLite and PostgreSQL
    for step in range(10 * DAY):
        write_step(store, step, rng)
    store.flush()
    now = T0 + 10 * DAY * STEP
    log = IncidentLog(store, RULE, outages.SPAN_DAYS)
    before = log.refresh(now)
    assert [c.rule for c in before.found if c.region == "eu-west"] == []
    # An agent's writes held two days while its database was away: five failures, a minute apart; the third
    # makes 3 of the 4 samples in the 15 minutes up to it failures, and the outage rule opens there.
    late = 8 * DAY + 50
    for k in range(8):
        put(store, late, "1k", "eu-west", k >= 5, 120.0, True, minute=3 + k)
    store.flush()
    after = log.refresh(now + timedelta(minutes=1))
    assert after.found == from_scratch(store, now + timedelta(minutes=1))[0]
    (outage,) = [c for c in after.found if c.region == "eu-west" and c.rule == "outage"]
    assert (outage.rule, outage.opened_at) == ("outage", T0 + late * STEP + timedelta(minutes=5))
    assert log.rederived == 1  # eu-west's samples only: here walked on
    for k in range(3):  # then one-shot samples, unpublished, as late: counted, derived again by nobody
        put(store, late + 1, "1k", "", False, 100.0, True, minute=k, published=False)
    store.flush()
    assert log.refresh(now + timedelta(minutes=2)).found == after.found
    assert log.rederived == 1
