"""Warm vs cold TTFT per endpoint: what a provider's prompt cache does to the time to first token.

A paired workload (cached-10k) sends one prefix twice: turn 1 is cold (its prefix is new), turn 2 warm (the
same prefix, sent once turn 1 ended). Per endpoint and workload: the median TTFT of each, the speed-up
cold / warm, and the share of warm turns the provider itself reported as (partly) served from its cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from tokenpace.measure.metrics import percentile
from tokenpace.measure.sample import Sample, is_cached
from tokenpace.store.database import Store
from tokenpace.store.prefixturns import Turn, turns

WINDOW = timedelta(days=14)  # as long-context workloads' span: a pair runs at a workload's slow cadence
RUN_TURNS = 100_000  # a run's turns its table is over, the first ones (~20 MB): a run's memory stays bounded


@dataclass(frozen=True, slots=True)
class WarmCold:
    """One endpoint's warm vs cold figures for one paired workload."""

    provider: str
    plan: str
    model: str
    workload: str
    simulated: bool
    cold_n: int
    warm_n: int
    cold_ttft_p50_ms: float | None
    warm_ttft_p50_ms: float | None
    speedup: float | None  # cold p50 / warm p50
    warm_cached_share: float | None  # warm turns the provider reported cached (sample.is_cached) / warm turns
    warm_cached_tokens_p50: float | None


def speedup(cold_ms: float | None, warm_ms: float | None) -> float | None:
    """Speed-up = cold TTFT p50 / warm TTFT p50, shown only with both (and a warm p50 above 0)."""
    return cold_ms / warm_ms if cold_ms is not None and warm_ms else None


def table(turns: Iterable[Turn]) -> list[WarmCold]:
    """One row per (provider, plan, model, workload), sorted by name."""
    groups: dict[tuple[str, str, str, str], list[Turn]] = {}
    for t in turns:
        groups.setdefault((t.provider, t.plan, t.model, t.workload), []).append(t)
    out = []
    for key, group in sorted(groups.items()):
        cold = [t.ttft_ms for t in group if t.turn == 1]
        warm = [t for t in group if t.turn == 2]
        cold_p50, warm_p50 = percentile(cold, 50), percentile([t.ttft_ms for t in warm], 50)
        cached = [t.cached_tokens for t in warm]
        row = WarmCold(
            *key, simulated=any(t.simulated for t in group), cold_n=len(cold), warm_n=len(warm),
            cold_ttft_p50_ms=cold_p50, warm_ttft_p50_ms=warm_p50, speedup=speedup(cold_p50, warm_p50),
            warm_cached_share=sum(map(is_cached, cached)) / len(cached) if cached else None,
            warm_cached_tokens_p50=percentile([c for c in cached if c is not None and is_cached(c)], 50),
        )  # fmt: skip
        out.append(row)
    return out


def of_samples(samples: Iterable[Sample]) -> list[Turn]:
    """A run's own samples as turns (what ``tokenpace run`` prints): the successful ones with a prefix turn
    (client-bound ones too, as in the run's summary: the run's line warns when its client was the bottleneck)."""
    return [
        Turn(s.endpoint.provider, s.endpoint.plan, s.endpoint.model, s.workload, s.prefix_turn,
             s.metrics.ttft_ms, s.metrics.provider_cached_tokens, s.endpoint.simulated)
        for s in samples
        if s.prefix_turn is not None and s.ok and s.metrics.ttft_ms is not None
    ]  # fmt: skip


def prompt_cache_rows(store: Store, since: datetime, ordered: Callable[[Iterable[str]], list[str]]) -> list[WarmCold]:
    """The prompt-cache page's rows since a time: workloads in the schedule's order (``ordered``), then the
    largest speed-up first (none last), then by provider and model."""
    rows = table(turns(store, since.timestamp()))
    order = {name: i for i, name in enumerate(ordered({r.workload for r in rows}))}
    rows.sort(key=lambda r: (order[r.workload], r.speedup is None, -(r.speedup or 0), r.provider, r.model))
    return rows
