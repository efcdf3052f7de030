"""What a reader asked of the board: window, workload, filters, sort and the ranking minimum, as a URL or the
command line spells them, each value checked (one BadRequest line for a bad one)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast
from urllib.parse import urlencode

from tokenpace.board import regions
from tokenpace.config.windows import DEFAULT_WINDOW, WINDOWS, Window
from tokenpace.errors import BadRequest

SortOrder = Literal["asc", "desc"]
ClientBound = Literal["exclude", "include"]
MAX_MIN_SAMPLES_DIGITS = 9  # int() of thousands of digits is slow, then refused: say so before trying
# Sort key -> its natural order: fastest, quickest, most reliable, most measured first; names A to Z.
SORTS: dict[str, SortOrder] = {
    "speed": "desc",
    "ttft": "asc",
    "e2e": "asc",
    "success": "desc",
    "samples": "desc",
    "name": "asc",
}
METRIC_OF = {"speed": "output_speed", "ttft": "ttft_ms", "e2e": "e2e_ms"}


def _one_of(what: str, value: str, known: Collection[str]) -> str:
    if value not in known:  # the value cut, so the line stays short whatever was typed
        shown = value if len(value) <= 40 else value[:40] + "..."
        raise BadRequest(f"{what} {shown!r}: use one of {', '.join(known)}")
    return value


def window(name: str) -> Window:
    """The window called ``name``; one BadRequest line naming the ones there are otherwise."""
    return WINDOWS[_one_of("window", name, WINDOWS)]


def parse_min_samples(text: str) -> int:
    """A ranking minimum as typed: a whole number of up to MAX_MIN_SAMPLES_DIGITS digits; one BadRequest line
    otherwise (isdigit alone takes "²", which int() refuses; the value is cut so the line stays one line)."""
    if not (text.isascii() and text.isdigit()) or len(text) > MAX_MIN_SAMPLES_DIGITS:
        shown = text if len(text) <= 20 else text[:20] + "..."
        raise BadRequest(f"min_samples {shown!r}: use a whole number of samples, 0 to 999999999")
    return int(text)


@dataclass(frozen=True, slots=True)
class Query:
    """What a reader asked for: window, workload, filters, sort and the minimum sample count to rank."""

    window: str = DEFAULT_WINDOW
    workload: str = "1k"
    provider: str | None = None
    plan: str | None = None
    sort: str = "speed"
    order: SortOrder | None = None  # None: the column's natural order (SORTS)
    min_samples: int = 3
    client_bound: ClientBound = "exclude"  # "include": figures also from samples timed while the client lagged
    region: str = regions.ALL  # a region's name, or a view of them all (board/regions.py)
    # What params() leaves out of links: the running config's own defaults.
    default_min_samples: int = dataclasses.field(default=3, repr=False, compare=False)
    default_workload: str = dataclasses.field(default="1k", repr=False, compare=False)
    default_region: str = dataclasses.field(default=regions.ALL, repr=False, compare=False)

    def __post_init__(self) -> None:
        window(self.window)
        _one_of("sort", self.sort, SORTS)
        if self.order is not None:
            _one_of("order", self.order, ("asc", "desc"))
        _one_of("client_bound", self.client_bound, ("exclude", "include"))
        regions.check(self.region)
        if self.min_samples < 0:
            raise BadRequest(f"min_samples {self.min_samples}: use a whole number of samples, 0 or more")

    @classmethod
    def from_params(
        cls, params: Mapping[str, str], min_samples: int = 3, workload: str = "1k", region: str = regions.ALL
    ) -> Query:
        """A query from URL/CLI parameters; unknown keys are ignored, bad values raise one BadRequest line.

        ``min_samples``, ``workload`` and ``region`` are the defaults: the config's minimum, its first scheduled
        workload and its first region (regions.default).
        """
        get = {k: v.strip() for k, v in params.items()}  # an empty value means the default, as in a form
        return cls(
            window=get.get("window") or DEFAULT_WINDOW,
            workload=get.get("workload") or workload,
            provider=get.get("provider") or None,
            plan=get.get("plan") or None,
            sort=get.get("sort") or "speed",
            order=cast(SortOrder | None, get.get("order") or None),  # checked by __post_init__
            min_samples=parse_min_samples(get.get("min_samples") or str(min_samples)),
            client_bound=cast(ClientBound, get.get("client_bound") or "exclude"),  # checked by __post_init__
            region=get.get("region") or region,
            default_min_samples=min_samples,
            default_workload=workload,
            default_region=region,
        )

    @property
    def include_client_bound(self) -> bool:
        return self.client_bound == "include"

    @property
    def direction(self) -> SortOrder:
        """The order in effect: the one asked for, else the sort column's natural one."""
        return self.order or SORTS[self.sort]

    def params(self, **changes: Any) -> str:
        """URL query string (no leading "?") of this query with ``changes``, non-default values only."""
        q = dataclasses.replace(self, **changes)
        base = Query(min_samples=self.default_min_samples, workload=self.default_workload, region=self.default_region)
        pairs = [
            (f.name, getattr(q, f.name))
            for f in dataclasses.fields(Query)
            if f.compare and getattr(q, f.name) != getattr(base, f.name)
        ]
        return urlencode([(k, str(v)) for k, v in pairs if v is not None])
