"""The model page's model: a model on every endpoint that serves it, one workload at a time.

Every provider's id of the same weights (config.models) is one model, so ``/model/llama-3.1-8b-instant`` shows
the page of ``llama-3.1-8b``. Its headline (:class:`Headline`) comes from the endpoints the board would rank
above any failing one: enough samples and not failing; each figure is one endpoint's as measured, never a median
across endpoints (of two providers at 240 and 85 tok/s, "162" is a figure nobody observed). Regions are shown
apart in the region grid. :meth:`ModelPage.data` is the JSON twin; the HTML page renders the same model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from tokenpace.board import cost, regions
from tokenpace.board.coverage import Coverage, coverage
from tokenpace.board.grid import Grid, grid_dict, region_grid
from tokenpace.board.medians import ModelRow, model_rows
from tokenpace.board.pageparts import PageRegion, PageSource, choose_region, costs, latest_first, rows_data, scrubbed
from tokenpace.board.rows import client_bound_only, failing
from tokenpace.config.windows import EACH, Window
from tokenpace.store.series import SamplePoint, model_series
from tokenpace.store.windows import EndpointRow, endpoint_rows, present_models


@dataclass(frozen=True, slots=True)
class Headline:
    """A model's figures on one workload from its ranked endpoints only (enough counted samples, not failing),
    fastest output speed first: the fastest, and the span of each figure across them."""

    ranked: tuple[EndpointRow, ...]
    listed: int  # every endpoint with a row of the workload
    too_few: int  # listed, fewer counted samples than the minimum
    failing: int  # listed with enough, but under the success bound (rows.failing)
    statistic: str

    def span(self, metric: str) -> tuple[float, float] | None:
        """(lowest, highest) of the ranked endpoints' headline figures of a metric; None without one."""
        values = [v for r in self.ranked if (v := r.figure(metric).headline(self.statistic)) is not None]
        return (min(values), max(values)) if values else None

    def data(self) -> dict[str, Any]:
        fastest = self.ranked[0] if self.ranked else None
        return {
            "ranked": [r.name for r in self.ranked], "listed": self.listed, "too_few": self.too_few,
            "failing": self.failing, "statistic": self.statistic,
            "fastest": fastest and {"name": fastest.name, "output_speed": fastest.output_speed.headline(self.statistic),
                                    "n": fastest.output_speed.n},
            **{metric: self.span(metric) for metric in ("output_speed", "ttft_ms", "e2e_ms")},
        }  # fmt: skip


def headline(rows: Sequence[EndpointRow], statistic: str, min_samples: int) -> Headline:
    """The headline of a workload's rows: ranked ones fastest first, and how many were left out and why."""
    enough = [r for r in rows if r.counted >= min_samples]
    ranked = [r for r in enough if not failing(r)]
    ranked.sort(key=lambda r: -(r.output_speed.headline(statistic) or 0.0))
    return Headline(tuple(ranked), len(rows), len(rows) - len(enough), len(enough) - len(ranked), statistic)


@dataclass(frozen=True, slots=True)
class ModelPage:
    facts: dict[str, Any]  # model, asked, ids, context_window
    window: Window
    include_client_bound: bool
    place: PageRegion
    workload: str
    workloads: list[str]  # every workload it has rows of, in the schedule's order
    rows: list[EndpointRow]  # every endpoint's row, every workload
    shown: list[EndpointRow]  # the rows of the workload shown
    costs: list[cost.RowCost]  # the shown rows' prices and costs
    endpoints: list[dict[str, Any]]  # the shown rows as the leaderboard's JSON writes them
    summary: ModelRow | None
    named: list[tuple[str, SamplePoint]]  # every published sample, oldest first, with its endpoint's name
    groups: dict[str, list[SamplePoint]]  # the charted ones per endpoint
    grid: Grid | None  # region x provider, when more than one region measured the workload
    headline: Headline
    cover: Coverage  # how much of the window the shown rows' samples span

    @property
    def uncharted(self) -> int:
        """Successful samples, where every one was client-bound and left out (rows.client_bound_only)."""
        return client_bound_only(self.shown, self.include_client_bound)

    @property
    def recent(self) -> list[tuple[str, SamplePoint]]:
        return latest_first(self.named)

    def data(self) -> dict[str, Any]:
        """The page's JSON twin."""
        summary = self.summary
        return {
            **self.facts, "workload": self.workload, "window": self.window, "region": self.place.region,
            "summary": summary and _pooled(summary), "headline": self.headline.data(), "endpoints": self.endpoints,
            "coverage": self.cover.data(), "client_bound_only": self.uncharted,
            "series": self.groups,
            "canary_rate": summary.canary_rate if summary else None,  # pooled over every provider
            "recent": self.recent, "region_grid": grid_dict(self.grid),
        }  # fmt: skip


def read_model_page(
    source: PageSource, asked: str, window: Window, include: bool, params: Mapping[str, str]
) -> ModelPage | None:
    """The page of a model; None where no endpoint serving it has a sample or is configured."""
    now, models = source.now(), source.config.models
    place = choose_region(source, window, now, params)
    region = regions.store_filter(place.region)
    model = models.canonical(asked)
    seen = present_models(source.store, window, now, source.long_workloads)
    ids = models.ids(model, [*seen, *(e.model for e in source.config.endpoints)])
    rows = endpoint_rows(
        source.store, window, now, source.long_workloads, model=ids, include_client_bound=include, region=region
    )
    if not rows and not any(e.model in ids for e in source.config.endpoints):
        return None
    workloads = source.ordered(r.workload for r in rows)
    usual = source.default_workload
    workload = params.get("workload") or (usual if usual in workloads or not workloads else workloads[0])
    shown = [r for r in rows if r.workload == workload]
    # every endpoint's samples pooled (min_samples 0); its medians go unread (_pooled): the headline gives figures
    summary = model_rows(shown, window.statistic, min_samples=0, canonical=models.canonical)
    # Per (endpoint, region) of this workload: the region x provider grid, when more than one region measured it.
    apart = endpoint_rows(
        source.store, window, now, source.long_workloads, model=ids, workload=workload, include_client_bound=include,
        region=EACH,
    )  # fmt: skip
    since = now - timedelta(seconds=window.span(workload, source.long_workloads))
    prices = costs(source, shown, window, now)
    found = [x for m in ids for x in model_series(source.store, model=m, workload=workload, since=since, region=region)]
    found.sort(key=lambda x: x[1].started_at)  # stable: one id's samples keep their order among equal times
    named = list(zip([name for name, _ in found], scrubbed(source, [p for _, p in found]), strict=True))
    groups: dict[str, list[SamplePoint]] = {}
    for name, p in named:
        if p.charted(include):
            groups.setdefault(name, []).append(p.kept(include))
    info = models.info_of(model)
    facts = {"model": model, "asked": asked, "ids": ids, "context_window": info.context_window if info else None}
    return ModelPage(
        facts, window, include, place, workload, workloads, rows, shown, prices,
        rows_data(source, shown, prices, window, now), summary[0] if summary else None, named, groups,
        region_grid(apart, source.config), headline(shown, window.statistic, source.min_samples),
        coverage(window, shown, now),
    )  # fmt: skip


def _pooled(summary: ModelRow) -> dict[str, Any]:
    """What the page says of every endpoint together: samples, success and canary pooled. Not the medians across
    endpoints the board's model rows carry: the headline gives each ranked endpoint's own figures instead."""
    medians = ("output_speed", "ttft_ms", "e2e_ms")
    return {k: v for k, v in dataclasses.asdict(summary).items() if k not in medians} | {
        "canary_rate": summary.canary_rate
    }
