"""The prompt-cache page: warm vs cold TTFT per endpoint, from the turns of paired workloads (cached-10k).

Its figures are read from the raw samples (store/prefixturns.py), not the rollups: a warm turn is no
fresh-prompt sample, and the board's figures leave cached samples out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict

from tokenpace.board import warmcold
from tokenpace.web.render import Page
from tokenpace.web.site import Site


def prompt_cache_page(site: Site, params: Mapping[str, str]) -> Page:
    since = site.now() - warmcold.WINDOW
    rows = warmcold.prompt_cache_rows(site.store, since, site.ordered)
    data = {
        "since": since.isoformat(),
        "window_days": warmcold.WINDOW.days,
        "speedup": warmcold.speedup.__doc__,
        "rows": [asdict(r) for r in rows],
    }
    return Page("prompt_cache.html", {**data, "rows": rows}, data, json_url="/prompt-cache.json")
