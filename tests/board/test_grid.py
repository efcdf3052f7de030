"""The model page's region x provider grid, from rows read one per (endpoint, region)."""

from __future__ import annotations

import dataclasses

from tests.board.test_rows import row
from tokenpace.board.grid import grid_dict, region_grid
from tokenpace.config.endpoints import Config
from tokenpace.config.regions import Region
from tokenpace.measure.stats import Figure


def test_no_grid_from_one_region() -> None:
    assert region_grid([dataclasses.replace(row(), region="eu-west")], Config()) is None
    assert grid_dict(None) is None


def test_columns_declared_first_then_others_then_local_and_blank_cells() -> None:
    config = Config(regions=(Region("us-east"),))
    base = row()
    rows = [
        dataclasses.replace(base, region="eu-west", ttft_ms=Figure(3, p50=120.0), output_speed=Figure(3, p50=80.0)),
        dataclasses.replace(base, region="us-east", ttft_ms=Figure(3, p50=300.0)),
        dataclasses.replace(base, provider="other", region="", ttft_ms=Figure(1, p50=50.0)),
    ]
    grid = region_grid(rows, config)
    assert grid is not None and grid.regions == ("us-east", "eu-west", "local")
    data = grid_dict(grid)
    assert data is not None
    cells = {r["provider"]: r["cells"] for r in data["rows"]}
    assert cells[base.provider]["eu-west"] == {"ttft_ms": 120.0, "output_speed": 80.0, "counted": base.counted}
    assert cells[base.provider]["local"] is None and cells["other"]["us-east"] is None
    assert cells["other"]["local"]["ttft_ms"] == 50.0
