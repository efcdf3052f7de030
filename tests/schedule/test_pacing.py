"""Plan limits: the densest cadence that fits every window (against a brute force), and a month on a virtual
clock that never spends past its share of any window, with the real store."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import operator
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import pytest

from tests.schedule.test_sampler import DAY, T0, FakeClock, fake_sample
from tokenpace.config.endpoints import Config, read_config
from tokenpace.config.settings import Spend
from tokenpace.errors import ConfigError
from tokenpace.schedule import sampler as sampling
from tokenpace.schedule.cadence import Job, jobs
from tokenpace.schedule.pacing import candidate, window_text
from tokenpace.schedule.sampler import Sampler
from tokenpace.store.database import Store, open_store

# OpenCode Go: a $10 a month subscription whose limits are dollars of use at the models' prices.
GO = """
[providers.go]
base_url = "https://opencode.ai/zen/go/v1"
api_key_env = "GO_KEY"
models = ["glm", "kimi"]
limits = [ { dollars = 12, per = "5h" }, { dollars = 30, per = "7d" }, { dollars = 60, per = "30d" } ]
price = { input = 0.60, output = 2.20, as_of = "2026-01-01" }
"""


def config(tmp_path: Path, text: str) -> Config:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return read_config(path)


def brute_force(cfg: Config, plan_jobs: Sequence[Job], every_s: float) -> bool:
    """Whether the plan's jobs at plan cadence every_s fit each window: runs laid out at their shortest gaps from
    the window's start, counted one by one, each at its worst case."""
    for budget in cfg.plan_of(plan_jobs[0].endpoint).budgets:
        total = Spend()
        for j in plan_jobs:
            own = cfg.schedule.cadence(j.workload.name).every_s or 0.0
            gap = max(every_s, own) * (1 - j.jitter)
            starts = itertools.takewhile(partial(operator.ge, budget.window_s), (k * gap for k in itertools.count()))
            total += j.worst_case() * sum(1 for _ in starts)
        if not total.fits(budget):
            return False
    return True


def densest_by_brute_force(cfg: Config, plan_jobs: Sequence[Job]) -> float:
    return next(candidate(k) for k in itertools.count() if brute_force(cfg, plan_jobs, candidate(k)))


FIVE_HOURS_ONLY = GO.replace("dollars = 12", "requests = 60").replace(
    ', { dollars = 30, per = "7d" }, { dollars = 60, per = "30d" }', ""
)


@pytest.mark.parametrize(
    ("text", "paced_h"),
    [
        (GO, 63.0),  # the default workloads at $0.60 / $2.20 per 1M tokens: the 30 d window binds at 10 %
        (GO + "budget_share = 0.5\n", 7.0),
        (GO + '[schedule]\nworkloads = ["1k"]\n', 3.0),
        (GO + '[schedule]\nworkloads = ["1k", "parallel"]\njitter = 0.3\n', 28.0),
        (GO + 'budget_share = 1\n[schedule]\nworkloads = ["1k", "10k"]\n', 19 / 60),  # whole minutes below 2 h
        # 8 requests a round (two models, each 1k run and its wake, each maybe resent): 7 rounds in 5 h
        (FIVE_HOURS_ONLY + 'budget_share = 1\n[schedule]\nworkloads = ["1k"]\n', 48 / 60),
    ],
)
def test_a_plans_cadence_is_the_densest_that_fits_every_window(tmp_path: Path, text: str, paced_h: float) -> None:
    cfg = config(tmp_path, text)
    found = jobs(cfg, cfg.endpoints)
    paced = {j.plan_every_s for j in found}
    assert paced == {densest_by_brute_force(cfg, found)} == {paced_h * 3600}
    for j in found:  # every job at the longer of the plan's pace and its workload's own cadence
        assert j.every_s == max(paced_h * 3600, cfg.schedule.cadence(j.workload.name).every_s or 0.0)


def test_billing_cadences_stay_where_no_limit_is_given_and_a_given_every_must_fit(tmp_path: Path) -> None:
    no_limits = GO.replace("limits = [", "# limits = [")
    cfg = config(tmp_path, no_limits)
    assert {j.every_s for j in jobs(cfg, cfg.endpoints) if j.workload.name == "1k"} == {4 * 3600}  # per-token
    cfg = config(tmp_path, GO + 'every = "70h"\n')
    assert {j.plan_every_s for j in jobs(cfg, cfg.endpoints)} == {70 * 3600}  # sparser than the pace: kept
    cfg = config(tmp_path, GO + 'every = "10m"\n')
    with pytest.raises(ConfigError) as err:
        jobs(cfg, cfg.endpoints)
    assert str(err.value) == (
        f'{cfg.source}: providers.go: every = "10m" spends up to $1.31 per 5h, over 10% of $12 per 5h: '
        'every = "63h" or longer fits'
    )


def test_limits_no_cadence_can_fit_are_one_line(tmp_path: Path) -> None:
    cfg = config(tmp_path, GO.replace("dollars = 12,", "dollars = 3,"))  # 10 %: 30 cents per 5 h
    with pytest.raises(ConfigError) as err:
        jobs(cfg, cfg.endpoints)
    assert str(err.value) == (
        f"{cfg.source}: providers.go: one run of each scheduled workload spends up to $0.55 per 5h, over 10% of "
        "$3 per 5h: raise the limit or budget_share, or leave workloads out of schedule.workloads"
    )
    cfg = config(tmp_path, GO.replace("dollars = 12,", "dollars = 1,") + '[schedule]\nworkloads = ["100k"]\n')
    with pytest.raises(ConfigError) as err:  # one workload alone over the window: it is named
        jobs(cfg, cfg.endpoints)
    assert str(err.value) == (
        f"{cfg.source}: providers.go: limits: 10% of $1 per 5h is less than one run of workload 100k and its wake"
        " request need ($0.14): raise it, set wake = false or leave 100k out of schedule.workloads"
    )


class SpendingRuns:
    """A run_job that stores each request as a sample billed its workload's whole prompt and output cap."""

    def __init__(self, store: Store, clock: FakeClock) -> None:
        self.store, self.clock, self.runs = store, clock, 0

    async def __call__(self, job: Job) -> None:
        self.runs += 1
        for _ in range(job.requests):
            w = job.workload
            self.store.add_sample(fake_sample(job, self.clock.now(), w.input_tokens, w.max_tokens))
        await self.clock.sleep(30)


def _most_in_any_window(store: Store, cfg: Config, window_s: float) -> float:
    """The most dollars the plan's samples spent in any window of window_s ending at a sample."""
    price = cfg.price_of("go", "default", "glm")
    assert price is not None
    rows = store.query("SELECT started_at, provider_input_tokens, provider_output_tokens FROM samples")
    spent = sorted((float(at), (i * price.input + o * price.output) / 1e6) for at, i, o in rows)
    most, total, first = 0.0, 0.0, 0
    for at, dollars in spent:  # a window sliding over the samples in time order
        total += dollars
        while spent[first][0] < at - window_s:
            total -= spent[first][1]
            first += 1
        most = max(most, total)
    return most


@pytest.mark.parametrize("dense", [False, True])
async def test_a_month_never_spends_past_its_share_of_any_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dense: bool
) -> None:
    """Go's three windows for 31 days: at the pace (it never needs to skip) and forced to hourly (it skips, and
    still stays within each window's 10 %)."""
    monkeypatch.setattr(sampling, "MAX_NAP_S", 3600.0)  # no wall clock to watch: a month in fewer loop turns
    cfg = config(tmp_path, GO)
    plan = jobs(cfg, cfg.endpoints)
    if dense:  # as a hand-built job would run: the runtime check alone holds the line
        plan = [dataclasses.replace(j, every_s=3600.0) for j in plan if j.workload.name in ("1k", "10k")]
    clock = FakeClock()
    with open_store(str(tmp_path / "s.db")) as store:
        runs = SpendingRuns(store, clock)
        sampler = Sampler(plan, store, clock=clock, run_job=runs, inline_reads=True)
        task = asyncio.ensure_future(sampler.run())
        await clock.advance(T0 + 31 * DAY)
        sampler.stop()
        await clock.advance(done=task.done)
        await task
        (status,) = sampler.status().budgets
        assert [window_text(b.window_s) for b in status.budgets] == ["5h", "7d", "30d"]
        for budget in status.budgets:
            assert budget.dollars is not None
            assert _most_in_any_window(store, cfg, budget.window_s) <= budget.dollars * 0.1
        if dense:
            assert status.skipped > 50 and _most_in_any_window(store, cfg, 30 * DAY) > 6 - 0.1  # to the share
        else:
            assert (
                status.skipped == 0 and runs.runs >= 2 * 4 * 31 * 24 / 63 / 1.1
            )  # two models, 4 workloads at the pace
