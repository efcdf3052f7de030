"""Burst figures by their formulas, on members whose answers are known."""

from __future__ import annotations

import pytest

from tokenpace.board.bursts import Member, aggregate_speed, bursts, grouped, ttft_spread_ms


def test_aggregate_speed_is_every_token_over_first_start_to_last_end() -> None:
    burst = [Member(100.0, 2000.0, 100, 200.0), Member(100.5, 1000.0, 50, 700.0)]  # ends at 102.0 and 101.5
    assert aggregate_speed(burst) == pytest.approx(150 / 2.0)
    assert ttft_spread_ms(burst) == pytest.approx(500.0)


def test_a_failed_member_stretches_nothing_and_adds_no_token() -> None:
    burst = [Member(10.0, 1000.0, 40, 100.0), Member(10.0, None, 0, None)]  # refused at once: no time, no token
    assert aggregate_speed(burst) == pytest.approx(40.0)
    assert ttft_spread_ms(burst) == 0.0  # one first token: no spread
    assert ttft_spread_ms([Member(1.0, None, 0, None)]) is None
    assert aggregate_speed([Member(1.0, None, 0, None)]) is None  # no time elapsed: no speed, not infinity
    assert aggregate_speed([]) is None


def test_bursts_are_figures_over_the_groups_and_loners_are_left_out() -> None:
    members = [("a", Member(0.0, 1000.0, 10, 10.0)), ("a", Member(0.0, 1000.0, 10, 30.0)),
               ("b", Member(50.0, 500.0, 10, 20.0)), (None, Member(60.0, 100.0, 99, 5.0))]  # fmt: skip
    groups = grouped(members)
    assert set(groups) == {"a", "b"} and len(groups["a"]) == 2
    found = bursts(groups)
    assert found is not None and found.count == 2
    assert found.speed.n == 2 and found.speed.p50 == pytest.approx((20.0 + 20.0) / 2)
    assert found.ttft_spread.p95 is not None and found.ttft_spread.p95 <= 20.0
    assert bursts({}) is None


def test_a_runs_bursts_kept_as_they_come_are_the_same_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    """`tokenpace run` folds each burst into its figures once whole (its size known), so a run holds the bursts
    still open, not every member; a burst left open (the run stopped) counts as it stands."""
    import random

    from tokenpace.board import bursts as module

    rng = random.Random(4)

    def drawn(i: int) -> Member:
        return Member(i // 3 + rng.random(), rng.uniform(100, 900), rng.randint(1, 50), rng.choice([None, 50.0]))

    members: list[tuple[str | None, Member]] = [(f"g{i // 3}", drawn(i)) for i in range(3 * 40 + 2)]
    members.insert(7, (None, Member(0.0, 1.0, 1, 1.0)))
    for size, most_open in ((3, 1), (None, 41)):
        tally, held = module.BurstTally(size), 0
        for group, member in members:
            tally.add(group, member)
            held = max(held, len(tally.open))
        assert tally.result() == bursts(grouped(members)) and held == most_open
    monkeypatch.setattr(module, "OPEN_BURSTS", 5)
    tally = module.BurstTally()
    for group, member in members:
        tally.add(group, member)
        assert len(tally.open) <= 5  # past it the oldest is taken as whole
    found = tally.result()
    assert found is not None and found.count == 41
