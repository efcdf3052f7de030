"""A level's figures kept as its requests end (load/running.py): the same as over the list, mergeable, rows bounded."""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter

from tests.loadkit import T0, done, steady
from tokenpace.config.traffic import Slo
from tokenpace.load.figures import Done
from tokenpace.load.results import rows_of
from tokenpace.load.running import RunningFigures, figures
from tokenpace.measure.failures import ErrorKind


def requests() -> list[Done]:
    """Two tags, failures, a warm-up, server tokens on some: every field of the figures has something."""
    first = steady(30, ttft_ms=100, gap_ms=10, failed=3, tag="prefix-miss", server_tokens=10)
    later = [dataclasses.replace(d, asked_ns=d.asked_ns - 2_000_000) for d in steady(40, 60, 5, tag="prefix-hit")]
    shifted = [done(d.sample.timeline.t_sent_ns / 1e6, 0, (), failure=ErrorKind.HTTP_ERROR) for d in later[:2]]
    return [done(-50, -10, ((-40, 1),), warmup=True), *first, *later, *shifted]


def test_two_halves_merged_give_the_whole_levels_figures() -> None:
    """A later step runs the workers of one level in processes of their own: their figures must add up."""
    slo, reqs = Slo(ttft_ms=90), requests()
    whole, a, b = RunningFigures(slo), RunningFigures(slo), RunningFigures(slo)
    for i, d in enumerate(reqs):
        whole.add(d)
        (a if i % 3 else b).add(d)
    a.merge(b)
    assert a.figures(5.0) == whole.figures(5.0) == figures(reqs, slo, 5.0)
    assert (a.requests, a.warmups, a.released_rate(), a.chains_end) == (72, 1, whole.released_rate(), 1)
    t0 = min(d.sample.timeline.t_sent_ns for d in reqs[1:])
    assert Counter(a.rows()) == Counter(whole.rows()) == Counter(rows_of(reqs, t0))  # (ties in send time aside)


def test_rows_stay_within_the_limit_spread_over_the_level() -> None:
    """Every k-th request in the order they ended, k doubling at the limit: at least half the limit, from the
    first request to near the last."""
    running = RunningFigures(rows=10)
    reqs = [done(i, i + 1, ((i + 0.5, 1),)) for i in range(1_000)]
    for d in reqs:
        running.add(d)
    rows = running.rows()
    assert 5 <= len(rows) <= 10 and rows[0].t_s == 0.0 and rows[-1].t_s >= 0.8
    gaps = {round((b.t_s - a.t_s) * 1000) for a, b in itertools.pairwise(rows)}
    assert len(gaps) == 1  # evenly spaced
    few = RunningFigures(rows=10)
    for d in reqs[:10]:
        few.add(d)
    assert few.rows() == rows_of(reqs[:10], T0)  # under the limit: every request, as rows_of gives them
