"""The prompt-cache page: warm vs cold TTFT per endpoint, from the turns of paired workloads (cached-10k).

Its figures are read from the raw samples (store/prefixturns.py), not the rollups: a warm turn is no
fresh-prompt sample, and the board's figures leave cached samples out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from datetime import timedelta

from tokenpace.board import warmcold
from tokenpace.store.prefixturns import turns
from tokenpace.web.render import Page
from tokenpace.web.site import Site

WINDOW = timedelta(days=14)  # as long-context workloads' span: a pair runs at a workload's slow cadence


def prompt_cache_page(site: Site, params: Mapping[str, str]) -> Page:
    since = site.now() - WINDOW
    rows = warmcold.table(turns(site.store, since.timestamp()))
    order = {name: i for i, name in enumerate(site.ordered({r.workload for r in rows}))}
    rows.sort(key=lambda r: (order[r.workload], r.speedup is None, -(r.speedup or 0), r.provider, r.model))
    data = {
        "since": since.isoformat(),
        "window_days": WINDOW.days,
        "speedup": warmcold.speedup.__doc__,
        "rows": [asdict(r) for r in rows],
    }
    return Page("prompt_cache.html", {**data, "rows": rows}, data, json_url="/prompt-cache.json")
