"""Cadence, pure: due times and their jitter, the longer of plan and workload cadence, budgets' worst cases."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from pathlib import Path

import pytest

from tests.schedule.test_sampler import DAY, SMALL, T0, job
from tokenpace.config.endpoints import read_config
from tokenpace.config.settings import Budget, Spend
from tokenpace.config.workloads import BUILTIN
from tokenpace.errors import ConfigError
from tokenpace.schedule.cadence import jobs, next_due, stale_after


def test_next_due_is_the_formula_and_its_jitter_spreads_evenly() -> None:
    j = job("m", every_s=600, jitter=0.1)
    gaps = [next_due(j, T0 + k * 600.0, 0.0) - (T0 + k * 600.0) for k in range(4000)]
    assert all(540 <= g < 660 for g in gaps)
    assert abs(statistics.fmean(gaps) - 600) < 3  # u is uniform on [-1, 1): the mean interval is every_s
    assert min(gaps) < 542 and max(gaps) > 658
    assert max(Counter(int((g - 540) // 12) for g in gaps).values()) < 4000 / 10 * 1.25  # ten even bins
    assert next_due(j, T0, 0.0) == next_due(j, T0, 5.0)  # the same history, the same due time
    assert next_due(j, T0, 0.0) != next_due(job("other"), T0, 0.0)  # jobs don't line up


def test_first_and_missed_runs_spread_over_ten_seconds_or_the_cadence_if_shorter() -> None:
    for every, spread in ((600.0, 10.0), (2.0, 2.0)):
        first = [next_due(job(f"m{k}", every_s=every), None, T0) - T0 for k in range(200)]
        missed = [next_due(job(f"m{k}", every_s=every), T0 - 10 * every, T0) - T0 for k in range(200)]
        for dues in (first, missed):
            assert all(0 <= d < spread for d in dues) and max(dues) > spread * 0.9  # spread, and not beyond


def test_jobs_take_the_longer_of_plan_and_workload_cadence(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[providers.local]\nbase_url = "http://127.0.0.1:8080/v1"\nmodels = ["tiny"]\n'
        '[providers.paid]\nbase_url = "https://x/v1"\napi_key_env = "PAID_KEY"\nmodels = ["m"]\nrequests = 3\n'
        "budget = { requests = 50 }\n"
    )
    found = {(j.endpoint.provider, j.workload.name): j for j in jobs(read_config(path), read_config(path).endpoints)}
    every = {k: j.every_s for k, j in found.items()}
    assert every[("local", "1k")] == 600 and every[("local", "10k")] == 3 * 3600  # uncapped: 10 min
    assert every[("paid", "1k")] == 4 * 3600 and every[("paid", "10k")] == 4 * 3600  # per-token: 4 h
    assert every[("local", "100k")] == 7 * DAY and every[("local", "parallel")] == DAY
    assert found["local", "parallel"].jitter == 0.5 and found["local", "1k"].jitter == 0.1
    assert (found["paid", "1k"].requests, found["paid", "parallel"].requests) == (3, 10)
    assert found["paid", "1k"].budget == Budget(requests=50) and found["local", "1k"].budget is None
    assert stale_after(found["local", "1k"]) == pytest.approx(2 * 600 * 1.1)


def test_a_paired_workload_runs_whole_pairs(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[providers.one]\nbase_url = "http://127.0.0.1:8080/v1"\nmodels = ["m"]\nrequests = 1\n'
        '[providers.three]\nbase_url = "http://127.0.0.1:8081/v1"\nmodels = ["m"]\nrequests = 3\n'
        '[schedule]\nworkloads = ["cached-10k", "1k"]\n'
    )
    found = {
        (j.endpoint.provider, j.workload.name): j.requests for j in jobs(read_config(path), read_config(path).endpoints)
    }
    assert found == {("one", "cached-10k"): 2, ("one", "1k"): 1, ("three", "cached-10k"): 4, ("three", "1k"): 3}


def test_a_worst_case_allows_for_images_and_a_refused_request() -> None:
    # Each run may first send `width` requests that refuse an optional field; an image may cost 40k tokens.
    # Output: o200k's count, which usage() takes when larger, may run 1.5 x over the model's own max_tokens.
    assert job("m", workload=SMALL).worst_case() == Spend(2, math.ceil(2 * 300 * 1.05), 75)
    vision = job("m", workload=BUILTIN["vision"]).worst_case()
    assert vision == Spend(2, math.ceil(2 * (1000 * 1.05 + 40_000)), 1_500)
    assert job("m", workload=BUILTIN["parallel"]).worst_case() == Spend(20, math.ceil(20 * 1000 * 1.05), 15_000)


def test_a_worst_case_counts_the_wake_request_where_a_run_may_send_one(tmp_path: Path) -> None:
    # A wake is a run of one 1k request of its own: 2 sent (one may be refused), 2 x 1,050 in, 1,500 out.
    wake = Spend(2, math.ceil(2 * 1000 * 1.05), 1_500)
    small = job("m", workload=SMALL).worst_case()
    assert job("m", workload=SMALL, wake=BUILTIN["1k"]).worst_case() == small + wake
    assert job("m", workload=SMALL, wake=BUILTIN["1k"], cold_after_s=0.0).worst_case() == small  # never cold
    path = tmp_path / "c.toml"
    path.write_text(
        '[providers.x]\nbase_url = "https://x/v1"\napi_key_env = "X_KEY"\nmodels = ["m"]\n'
        '[providers.y]\nbase_url = "https://y/v1"\nmodels = ["m"]\nwake = false\n'
        '[providers.z]\nbase_url = "https://z/v1"\nmodels = ["m"]\ncold_after = "off"\n'
        '[schedule]\nworkloads = ["10k"]\n[workloads.1k]\nmax_tokens = 800\n'
    )
    found = {j.endpoint.provider: j for j in jobs(read_config(path), read_config(path).endpoints)}
    assert found["x"].wake is not None and found["x"].wake.max_tokens == 800  # the config's 1k, its own cap
    ten_k = Spend(2, math.ceil(2 * 10_000 * 1.05), 2_250)
    assert found["x"].worst_case() == ten_k + Spend(2, 2_100, 1_200)
    assert found["y"].wake is None and found["y"].worst_case() == ten_k  # wake = false
    assert found["z"].wake is None and found["z"].worst_case() == ten_k  # cold_after off: nothing is cold


def test_a_budget_too_small_for_one_run_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[providers.x]\nbase_url = "https://x/v1"\nmodels = ["m"]\nbudget = { requests = 8 }\n'
        '[providers.x.plans.pro]\nmodels = ["m"]\nbudget = { input_tokens = 50_000 }\n'
        '[schedule]\nworkloads = ["1k", "parallel"]\n'
    )
    cfg = read_config(path)
    with pytest.raises(ConfigError) as err:
        jobs(cfg, [e for e in cfg.endpoints if e.plan == "default"])
    assert str(err.value) == (
        f"{path}: providers.x: budget.requests = 8 is less than one run of workload parallel and its wake request"
        " need (22): raise it, set wake = false or leave parallel out of schedule.workloads"
    )
    path.write_text(path.read_text() + "wake = false\n")
    with pytest.raises(ConfigError) as err:
        jobs(read_config(path), [e for e in read_config(path).endpoints if e.plan == "default"])
    assert str(err.value).endswith(
        "one run of workload parallel needs (20): raise it or leave parallel out of schedule.workloads"
    )
    path.write_text(path.read_text().replace("wake = false\n", ""))
    path.write_text(path.read_text().replace('"1k", "parallel"', '"1k", "vision"'))
    cfg = read_config(path)
    wanted = r"providers\.x\.plans\.pro: budget\.input_tokens = 50000 .* vision and its wake request need \(84200\)"
    with pytest.raises(ConfigError, match=wanted):
        jobs(cfg, cfg.endpoints)
