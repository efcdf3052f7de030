"""A plan's limits as its provider states them: windows, dollars, tokenpace's share, and their one-line mistakes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.config.test_endpoints import A, assert_one_line_error, write
from tokenpace.config.endpoints import read_config
from tokenpace.config.prices import Price
from tokenpace.config.settings import Budget, Spend

GO_LIMITS = 'limits = [ { dollars = 12, per = "5h" }, { dollars = 30, per = "7d" }, { dollars = 60, per = "30d" } ]\n'
PRICE = 'price = { input = 0.6, output = 2.2, as_of = "2026-01-01" }\n'


def test_limits_per_window_with_the_share_of_the_plan_else_the_provider_else_the_schedule(tmp_path: Path) -> None:
    text = A + GO_LIMITS + PRICE + "budget = { requests = 100 }\n"
    text += '[providers.a.plans.p]\nmodels = ["n"]\nbudget_share = 0.25\n'
    text += '[providers.a.plans.q]\nmodels = ["n"]\n'
    text += 'limits = [ { requests = 500, input_tokens = 10_000_000, per = "1d" } ]\n'
    text += '[providers.b]\nbase_url = "http://b/v1"\nmodels = ["m"]\n[schedule]\nbudget_share = 0.2\n'
    cfg = read_config(write(tmp_path, text))
    a, p, q, b = (cfg.plans[key] for key in (("a", "default"), ("a", "p"), ("a", "q"), ("b", "default")))
    hours = 3600.0
    assert a.limits == (
        Budget(dollars=12, window_s=5 * hours, share=0.2),
        Budget(dollars=30, window_s=7 * 24 * hours, share=0.2),
        Budget(dollars=60, window_s=30 * 24 * hours, share=0.2),
    )
    assert a.budget == Budget(requests=100) and a.budgets == (Budget(requests=100), *a.limits)  # 24 h, all of it
    assert [lim.share for lim in p.limits] == [0.25] * 3 and p.budget == a.budget  # the provider's, its own share
    assert q.limits == (Budget(requests=500, input_tokens=10_000_000, window_s=24 * hours, share=0.2),)  # whole
    assert (a.every_given, b.limits, b.budgets) == (False, (), ())
    assert Budget(dollars=12, window_s=5 * hours, share=0.1).allowed() == (None, None, None, 12 * 0.1)


def test_spend_is_priced_per_million_tokens_and_fits_each_cap_times_share() -> None:
    run = Spend(2, 500_000, 250_000).priced(Price(0.6, 2.2))
    assert run == Spend(2, 500_000, 250_000, pytest.approx(0.3 + 0.55))  # type: ignore[arg-type]
    assert Spend(2, 10).priced(None).dollars == 0.0  # no price, no dollars (and a dollar cap refuses the config)
    ten_percent = Budget(requests=50, dollars=12, window_s=5 * 3600, share=0.1)
    assert run.fits(ten_percent) and (run * 2).over(ten_percent) == ["dollars"]
    assert (run * 2 + Spend(2)).over(ten_percent) == ["requests", "dollars"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (A + GO_LIMITS, r"providers\.a: a budget or limit in dollars needs a price of model m: give price = \{"),
        (A + "budget = { dollars = 2 }\n", r"providers\.a: a budget or limit in dollars needs a price of model m"),
        (A + "limits = [ { dollars = 12 } ]\n", r"providers\.a\.limits\[0\]\.per: missing; this key is required$"),
        (A + 'limits = [ { per = "5h" } ]\n', r"providers\.a\.limits\[0\]: give at least one of requests, input_"),
        (A + 'limits = [ { requests = 9, per = "40d" } ]\n', r"limits\[0\]\.per: '40d' is not a duration .* 31 days$"),
        (A + 'limits = [ { dollars = -1, per = "5h" } ]\n', r"providers\.a\.limits\[0\]\.dollars: must be above 0"),
        (A + 'limits = [ { dollars = 1e9, per = "5h" } ]\n', r"providers\.a\.limits\[0\]\.dollars: must be at most"),
        (A + 'limits = [ { requests = 1.5, per = "5h" } ]\n', r"providers\.a\.limits\[0\]\.requests: "),
        (A + 'limits = [ { tokens = 9, per = "5h" } ]\n', r"providers\.a\.limits\[0\]\.tokens: unknown key"),
        (A + "limits = [" + '{ requests = 1, per = "1h" }, ' * 17 + "]\n", r"providers\.a\.limits: "),
        (A + "budget_share = 0\n", r"providers\.a\.budget_share: must be above 0, not 0$"),
        ("[schedule]\nbudget_share = 1.5\n", r"schedule\.budget_share: must be at most 1, not 1\.5$"),
    ],
)
def test_mistakes_in_limits_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    assert_one_line_error(tmp_path, text, message)
