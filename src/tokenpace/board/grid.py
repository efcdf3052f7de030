"""A model's region x provider grid: where each provider is fast from, when a model was measured from several places.

Rows are the model's endpoints (provider, plan and the provider's id), columns the regions its samples came
from (declared ones in the config's order first, board/regions.offered; this process's own, '' or ``local``,
last), and a cell the median TTFT and output speed of that endpoint's samples from that region, with how many
counted: the median whatever the window's statistic, as a cell is one figure of one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tokenpace.board import regions
from tokenpace.config.endpoints import Config
from tokenpace.store.windows import EndpointRow


@dataclass(frozen=True, slots=True)
class Cell:
    ttft_ms: float | None
    output_speed: float | None
    counted: int  # successful samples whose figures count


@dataclass(frozen=True, slots=True)
class Grid:
    regions: tuple[str, ...]  # as URL values (regions.token): a name, or ``local``
    rows: tuple[tuple[EndpointRow, tuple[Cell | None, ...]], ...]  # an endpoint's row (any region's) and its cells


def region_grid(rows: Sequence[EndpointRow], config: Config) -> Grid | None:
    """The grid of rows read one per (endpoint, region) (config/windows.EACH) of one workload; None unless the rows come
    from more than one region."""
    found = {r.region or "" for r in rows}
    if len(found) < 2:
        return None
    order = [*regions.offered(found, config), *([""] if "" in found else [])]
    cells: dict[str, dict[str, Cell]] = {}
    first: dict[str, EndpointRow] = {}
    for r in rows:
        first.setdefault(r.name, r)
        cells.setdefault(r.name, {})[r.region or ""] = Cell(r.ttft_ms.p50, r.output_speed.p50, r.counted)
    return Grid(
        tuple(regions.token(r) for r in order),
        tuple((first[name], tuple(cells[name].get(r) for r in order)) for name in sorted(first)),
    )


def grid_dict(grid: Grid | None) -> dict[str, Any] | None:
    """The grid as the JSON twin writes it: per endpoint, a cell (or null) per region."""
    if grid is None:
        return None
    return {
        "regions": list(grid.regions),
        "rows": [
            {
                "name": row.name, "provider": row.provider, "plan": row.plan, "model": row.model,
                "cells": {
                    region: None if c is None else {"ttft_ms": c.ttft_ms, "output_speed": c.output_speed,
                                                    "counted": c.counted}
                    for region, c in zip(grid.regions, found, strict=True)
                },
            }
            for row, found in grid.rows
        ],
    }  # fmt: skip
