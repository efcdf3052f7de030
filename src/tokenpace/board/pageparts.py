"""What the pages' models (endpoint_page.py, model_page.py, leaderboard_page.py) read, and the parts they share.

A page's model is built here, below the web, from the service's state that :class:`PageSource` describes (the
web's Site is one): the web only renders the model, as HTML and as its JSON twin, so the two never disagree.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar

from tokenpace.board import cost, regions
from tokenpace.board.changes import Kept, change_dict
from tokenpace.board.rows import row_dict
from tokenpace.board.rules import StaleAfter
from tokenpace.config.endpoints import Config
from tokenpace.config.windows import Window
from tokenpace.schedule.cadence import Job
from tokenpace.schedule.status import Status
from tokenpace.store.database import Store, epoch
from tokenpace.store.series import SamplePoint
from tokenpace.store.usage import typical
from tokenpace.store.windows import EndpointRow, present

T = TypeVar("T")
RECENT = 20  # samples listed under the charts: enough to see a pattern, short enough to scan


class PageMemo(Protocol):
    def get(self, key: Hashable, compute: Callable[[], T]) -> T: ...


class PageSource(Protocol):
    """The running service as a page's model reads it (web/site.py's Site)."""

    @property
    def store(self) -> Store: ...
    @property
    def config(self) -> Config: ...
    @property
    def status(self) -> Callable[[], Status] | None: ...
    @property
    def now(self) -> Callable[[], datetime]: ...
    @property
    def stale_after(self) -> StaleAfter: ...
    @property
    def long_workloads(self) -> Collection[str]: ...
    @property
    def min_samples(self) -> int: ...
    @property
    def jobs(self) -> tuple[Job, ...]: ...
    @property
    def default_workload(self) -> str: ...
    @property
    def memo(self) -> PageMemo: ...
    @property
    def changes(self) -> Kept: ...

    def ordered(self, workloads: Iterable[str]) -> list[str]: ...
    def scrub(self, text: str | None) -> str | None: ...


def latest_first(points: Sequence[tuple[str, SamplePoint]]) -> list[tuple[str, SamplePoint]]:
    """The last RECENT points, newest first: the list under the charts."""
    return list(reversed(points[-RECENT:]))


def scrubbed(source: PageSource, points: Sequence[SamplePoint]) -> list[SamplePoint]:
    """The points, each error message cleaned of the secrets the service knows."""
    return [
        dataclasses.replace(p, error_message=source.scrub(p.error_message)) if p.error_message else p for p in points
    ]


def costs(source: PageSource, rows: Sequence[EndpointRow], window: Window, now: datetime) -> list[cost.RowCost]:
    """Each row's price and cost per request, its typical request read over its own workload's span."""
    out = []
    for r in rows:
        since = epoch(now) - window.span(r.workload, source.long_workloads)
        tokens = typical(source.store, [r.key], since, epoch(now)).get(r.key)
        out.append(cost.row_cost(source.config, r, tokens, now.date()))
    return out


def rows_data(
    source: PageSource, rows: Sequence[EndpointRow], prices: Sequence[cost.RowCost], window: Window, now: datetime
) -> list[dict[str, Any]]:
    """The rows as the leaderboard's JSON writes them: figures, price and cost, current change."""
    current = source.changes.current(rows)
    return [
        row_dict(r, window.statistic) | cost.cost_dict(c, now.date()) | {"change": change_dict(current.get(r.key))}
        for r, c in zip(rows, prices, strict=True)
    ]


@dataclasses.dataclass(frozen=True, slots=True)
class PageRegion:
    """The region a page shows (board/regions.one: ``all`` unless asked) and its menu, None where no agent ever
    measured and none is declared (the board shows none there either)."""

    region: str
    menu: dict[str, object] | None
    caption: str


def choose_region(source: PageSource, window: Window, now: datetime, params: Mapping[str, str]) -> PageRegion:
    here = sorted({x[3] for x in present(source.store, window, now, source.long_workloads)})
    region = regions.one(params.get("region"), here, source.config)
    if not (regions.wanted(here, source.config) or region != regions.ALL):
        return PageRegion(region, None, "")
    return PageRegion(
        region, regions.menu(region, here, source.config, each=False), regions.caption(region, source.config)
    )
