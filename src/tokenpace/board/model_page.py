"""The model page's model: a model on every endpoint that serves it, one workload at a time.

Every provider's id of the same weights (config.models) is one model, so ``/model/llama-3.1-8b-instant`` shows
the page of ``llama-3.1-8b``. :meth:`ModelPage.data` is the JSON twin; the HTML page renders the same model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from tokenpace.board import cost, regions
from tokenpace.board.grid import Grid, grid_dict, region_grid
from tokenpace.board.pageparts import PageRegion, PageSource, choose_region, costs, latest_first, rows_data, scrubbed
from tokenpace.store.series import SamplePoint, model_series
from tokenpace.store.windows import EACH, EndpointRow, ModelRow, Window, endpoint_rows, model_rows, present_models


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

    @property
    def recent(self) -> list[tuple[str, SamplePoint]]:
        return latest_first(self.named)

    def data(self) -> dict[str, Any]:
        """The page's JSON twin."""
        summary = self.summary
        return {
            **self.facts, "workload": self.workload, "window": self.window, "region": self.place.region,
            "summary": summary, "endpoints": self.endpoints, "series": self.groups,
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
    summary = model_rows(shown, window.statistic, min_samples=source.min_samples, canonical=models.canonical)
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
        region_grid(apart, source.config),
    )  # fmt: skip
