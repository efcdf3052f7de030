"""MLPerf's early-stopping rule for tails (board/sufficiency.py): the bound, its formula and what is withheld."""

from __future__ import annotations

import pytest

from tokenpace.board.sufficiency import CONFIDENCE, as_shown, samples_needed, tails_withheld, withheld
from tokenpace.measure.stats import figure


def test_a_p95_needs_90_samples_at_99_percent_confidence_and_a_p5_as_many() -> None:
    assert samples_needed(0.95) == samples_needed(0.05) == 90
    assert samples_needed(0.5) == 7 and samples_needed(0.9) == 44 and samples_needed(0.99) == 459


@pytest.mark.parametrize("q", [0.5, 0.75, 0.9, 0.95, 0.05, 0.99, 0.999])
def test_the_bound_is_the_fewest_samples_whose_extreme_bounds_the_quantile(q: float) -> None:
    """q^n <= 1 - c at n, and not at n - 1: all n on one side of the quantile is unlikely enough only from n."""
    n, tail = samples_needed(q), max(q, 1 - q)
    assert tail**n <= 1 - CONFIDENCE < tail ** (n - 1)


def test_tails_are_withheld_below_the_bound_with_the_reason_and_kept_from_it() -> None:
    few, enough = figure([float(v) for v in range(4)]), figure([float(v) for v in range(90)])
    assert tails_withheld(few) == {
        "p5": "n=4 < 90: a P5 needs 90 samples at 99% confidence",
        "p95": "n=4 < 90: a P95 needs 90 samples at 99% confidence",
    }
    cut = as_shown(few)
    assert (cut.p5, cut.p95) == (None, None) and (cut.p25, cut.p50, cut.p75, cut.n) == (few.p25, few.p50, few.p75, 4)
    assert tails_withheld(enough) == {} and as_shown(enough) == enough
    assert withheld(0, "p95", 0.95) is None  # no values: nothing to withhold, the figure is absent anyway
