"""The table users see, one Board for the web page, its JSON and CSV twins and the terminal.

A board is every endpoint's row for one workload over one window, filtered, sorted and ranked. Rows with fewer
successful fresh samples (cached and cold ones apart, windows.py) than ``min_samples`` are shown, not ranked: a
median of two is an anecdote. Client-bound samples (timed while this client's own loop lagged) count neither in
figures nor towards ``min_samples`` unless the query says ``client_bound=include``; each row shows how many there
were, and how many of its samples came from one-shot runs published with ``run --publish``. Prices: ``cost.py``.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, cast
from urllib.parse import urlencode

from tokenpace.board import cost, regions
from tokenpace.board.changes import Change, change_dict, describe, read_current
from tokenpace.board.rows import TRUTH_FIELDS, figure_dict, iso, model_dict, row_dict, truth_dict
from tokenpace.config.endpoints import Config
from tokenpace.config.workloads import ordered as ordered_workloads
from tokenpace.errors import BadRequest
from tokenpace.schedule.cadence import Job, stale_after
from tokenpace.store.database import Store, epoch
from tokenpace.store.usage import typical
from tokenpace.store.windows import (
    DEFAULT_WINDOW,
    EACH,
    METRICS,
    WINDOWS,
    EndpointRow,
    ModelRow,
    RowKey,
    Window,
    endpoint_rows,
    model_rows,
    present,
)

LONG_CONTEXT_TOKENS = 100_000  # workloads this long get the window's long span (Artificial Analysis: 14 d)

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
    if value not in known:
        raise BadRequest(f"{what} {value!r}: use one of {', '.join(known)}")
    return value


def window(name: str) -> Window:
    """The window called ``name``; one BadRequest line naming the ones there are otherwise."""
    return WINDOWS[_one_of("window", name, WINDOWS)]


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
        raw_min = get.get("min_samples") or str(min_samples)
        if not (raw_min.isascii() and raw_min.isdigit()) or len(raw_min) > MAX_MIN_SAMPLES_DIGITS:
            # isdigit alone takes "²", which int() refuses; the value is cut so the line stays one line
            shown = raw_min if len(raw_min) <= 20 else raw_min[:20] + "..."
            raise BadRequest(f"min_samples {shown!r}: use a whole number of samples, 0 to 999999999")
        return cls(
            window=get.get("window") or DEFAULT_WINDOW,
            workload=get.get("workload") or workload,
            provider=get.get("provider") or None,
            plan=get.get("plan") or None,
            sort=get.get("sort") or "speed",
            order=cast(SortOrder | None, get.get("order") or None),  # checked by __post_init__
            min_samples=int(raw_min),
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


@dataclass(frozen=True, slots=True)
class Rules:
    """What a board takes from the running configuration; the page, the JSON and the terminal share it."""

    min_samples: int
    workload: str  # shown when none is asked for: 1k where it is scheduled, else the first scheduled
    long_workloads: frozenset[str]
    stale_s: Mapping[tuple[str, ...], float]  # per job key: silence longer than this is stale

    def stale_after(self, row: EndpointRow) -> float | None:
        """A row's limit: its endpoint's job's (every region's job of it has the same interval). A region's row
        goes stale on its own (its last sample is its region's); a pooled row only when every region falls silent."""
        return self.stale_s.get(row.key)


# What the board opens on where scheduled; why not 10k (AA's default view) is on /methodology (OPENING_WHY there).
OPENING_WORKLOAD = "1k"


def opening_workload(scheduled: Sequence[str]) -> str:
    """The workload the board shows when none is asked for: OPENING_WORKLOAD where scheduled, else the first."""
    return OPENING_WORKLOAD if OPENING_WORKLOAD in scheduled or not scheduled else scheduled[0]


def rules(config: Config, jobs: Collection[Job]) -> Rules:
    """The board's rules for a config and the jobs sampling it (staleness: cadence.stale_after of each)."""
    scheduled = config.schedule.workloads
    long = {w for w in scheduled if config.workload(w).input_tokens >= LONG_CONTEXT_TOKENS}
    return Rules(
        min_samples=config.schedule.min_samples,
        workload=opening_workload(scheduled),
        long_workloads=frozenset(long),
        stale_s={j.key: stale_after(j) for j in jobs},
    )


@dataclass(frozen=True, slots=True)
class Entry:
    """A row as the board shows it: ranked, or not (too few samples, or no figure to rank by), and stale;
    ``tied`` when another row shares its rank (shown "=N"); ``change``: its current change (changes.py)."""

    row: EndpointRow
    rank: int | None
    too_few: bool
    stale: bool
    tied: bool = False
    cost: cost.RowCost | None = None  # price, canonical model and cost per request
    change: Change | None = None


@dataclass(frozen=True, slots=True)
class Board:
    query: Query
    window: Window
    generated_at: datetime
    entries: tuple[Entry, ...]
    models: tuple[ModelRow, ...]
    workloads: tuple[str, ...]  # for the filter menus: every value present in the window
    providers: tuple[str, ...]
    plans: tuple[str, ...]
    regions: tuple[str, ...] = ()  # every region with a sample in the window, '' for this process's own


def sort_value(row: EndpointRow, sort: str, statistic: str) -> float | str | None:
    """What a sort key reads from a row: a headline figure, success rate, sample count or name."""
    if sort in METRIC_OF:
        return row.figure(METRIC_OF[sort]).headline(statistic)
    return {"success": row.success_rate, "samples": row.samples, "name": row.name}[sort]


def never_stale(row: EndpointRow) -> float | None:
    """The default staleness rule: none (serve passes the scheduler's, which knows each cadence)."""
    return None


def _ordered(rows: list[EndpointRow], query: Query, statistic: str) -> list[EndpointRow]:
    """Sorted by the query's key and direction, ties by name; missing values last whatever the direction."""

    def key(r: EndpointRow) -> Any:  # floats, ints or names: one kind per sort key, so they compare
        return sort_value(r, query.sort, statistic)

    rows = sorted(rows, key=lambda r: r.name)  # a stable sort keeps this order among ties
    known = sorted((r for r in rows if key(r) is not None), key=key, reverse=query.direction == "desc")
    return known + [r for r in rows if key(r) is None]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the database held for one window and workload when read: the rows, and what the filter menus can
    offer. The web pages keep one per window and workload, and arrange() it for each query."""

    window: Window
    rows: tuple[EndpointRow, ...]
    menus: tuple[tuple[str, ...], ...]  # (provider, plan, workload, region) present in the window
    tokens: Mapping[RowKey, tuple[float, float]] = dataclasses.field(default_factory=dict)  # usage.typical's


def snapshot(
    store: Store,
    window: Window,
    workload: str,
    now: datetime,
    long_workloads: Collection[str] = (),
    *,
    include_client_bound: bool = False,
    region: str | None = None,
) -> Snapshot:
    """The SQL half of a board: everything but sorting, filtering and ranking, which are cheap.

    The menus are read on a second reader meanwhile: the database answers one while Python decodes the other.
    They are every region's: the region menu offers them, the others keep the region's own (:func:`arrange`).
    """
    with ThreadPoolExecutor(1) as beside:
        menus = beside.submit(present, store, window, now, long_workloads)
        rows = endpoint_rows(
            store, window, now, long_workloads, workload=workload, include_client_bound=include_client_bound,
            region=region,
        )  # fmt: skip
        tokens = typical(store, [r.key for r in rows], epoch(now) - window.span(workload, long_workloads), epoch(now))
        return Snapshot(window, tuple(rows), tuple(menus.result()), tokens)


def _ranks(rows: Sequence[EndpointRow], query: Query, statistic: str) -> list[int]:
    """Ranks of rows in board order. By a figure: rank = 1 + the rows whose 95 % interval lies wholly on the
    better side of this row's, never ahead of the row above (a row without an interval overlaps every other).
    By anything else: the place in the order."""
    if query.sort not in METRIC_OF:
        return list(range(1, len(rows) + 1))
    unknown = (-math.inf, math.inf)
    spans = [r.figure(METRIC_OF[query.sort]).interval(statistic) or unknown for r in rows]
    if query.direction == "desc":  # higher first: better means lying wholly above
        better = [sum(lo > hi_i for lo, _ in spans) for _, hi_i in spans]
    else:
        better = [sum(hi < lo_i for _, hi in spans) for lo_i, _ in spans]
    ranks, last = [], 1
    for count in better:
        last = max(last, 1 + count)
        ranks.append(last)
    return ranks


def arrange(
    m: Snapshot, query: Query, now: datetime, *, stale_after: Callable[[EndpointRow], float | None] = never_stale,
    config: Config | None = None, changes: Mapping[RowKey, Change] | None = None,
) -> Board:  # fmt: skip
    """The board for a query, ranking rows with enough samples and a figure to sort by (:func:`_ranks`).

    An entry is stale when now - last sample > stale_after(row) seconds (None: never stale); prices from config.
    """
    config = config or Config()
    here = {x[3] for x in m.menus}
    regions.check_known(query.region, here, config)
    region = regions.store_filter(query.region)
    menus = [x for x in m.menus if region in (None, EACH, x[3])]
    costs = cost.row_costs(config, m.rows, m.tokens, now.date())
    window = m.window
    shown = [r for r in m.rows if query.provider in (None, r.provider) and query.plan in (None, r.plan)]
    ordered = _ordered(shown, query, window.statistic)
    enough = [r for r in ordered if r.counted >= query.min_samples]
    ranked = enough + [r for r in ordered if r.counted < query.min_samples]
    rankable = [r for r in enough if sort_value(r, query.sort, window.statistic) is not None]
    rank_of = dict(zip(map(id, rankable), _ranks(rankable, query, window.statistic), strict=True))
    shared = Counter(rank_of.values())
    entries = []
    for r in ranked:
        too_few = r.counted < query.min_samples
        rank = rank_of.get(id(r))
        limit = stale_after(r)
        stale = limit is not None and r.last_at is not None and epoch(now) - epoch(r.last_at) > limit
        priced = costs[r.key]
        change = (changes or {}).get(r.key)
        entries.append(
            Entry(r, rank, too_few, stale, tied=rank is not None and shared[rank] > 1, cost=priced, change=change)
        )
    # Deliberately from every provider's rows: a model's figure is the median across all that serve it.
    models = model_rows(m.rows, window.statistic, min_samples=query.min_samples, canonical=config.models.canonical)
    return Board(
        query, window, now, tuple(entries), tuple(models),
        workloads=tuple(ordered_workloads((x[2] for x in menus), config.schedule.workloads)),
        providers=tuple(sorted({x[0] for x in menus})),
        plans=tuple(sorted({x[1] for x in menus})),
        regions=tuple(sorted(here)),
    )  # fmt: skip


def read_board(
    store: Store,
    query: Query,
    now: datetime,
    *,
    stale_after: Callable[[EndpointRow], float | None] = never_stale,
    long_workloads: Collection[str] = (),
    config: Config | None = None,
) -> Board:
    """The leaderboard for a query, read from the store now."""
    m = snapshot(
        store, WINDOWS[query.window], query.workload, now, long_workloads,
        include_client_bound=query.include_client_bound, region=regions.store_filter(query.region),
    )  # fmt: skip
    changes = read_current(store, [r.key for r in m.rows])
    return arrange(m, query, now, stale_after=stale_after, config=config, changes=changes)


def as_dict(b: Board) -> dict[str, Any]:
    """The board as JSON-able data, the JSON twin of the page; times are ISO 8601 UTC."""
    s = b.window.statistic
    return {
        "generated_at": b.generated_at.isoformat(),
        "window": dataclasses.asdict(b.window),
        "query": {f.name: getattr(b.query, f.name) for f in dataclasses.fields(Query) if f.compare},
        "entries": [
            {"rank": e.rank, "tied": e.tied, "too_few": e.too_few, "stale": e.stale, **row_dict(e.row, s)}
            | cost.cost_dict(e.cost, b.generated_at.date())
            | {"change": change_dict(e.change)}
            for e in b.entries
        ],
        "models": [model_dict(m) for m in b.models],
        "workloads": list(b.workloads),
        "providers": list(b.providers),
        "plans": list(b.plans),
        "region": b.query.region,  # the view shown (board/regions.py), as a URL spells it
        "regions": [regions.token(r) for r in b.regions],
    }


def csv_table(b: Board) -> tuple[list[str], list[list[Any]]]:
    """Header and one row per entry: identity, counts, then n / headline / mean / percentiles / the 95 %
    intervals of the mean and median, per metric."""
    stats = ("n", "headline", "mean", "p5", "p25", "p50", "p75", "p95", "mean_lo", "mean_hi", "p50_lo", "p50_hi")
    header = [
        "rank", "tied", "too_few", "stale", "name", "provider", "plan", "model", "workload", "region", "protocol",
        "simulated",
        "window", "statistic", "window_s", "samples", "ok", "failures", "success_rate", "first_at", "last_at",
        "counted", "client_bound", "one_shot", *TRUTH_FIELDS, *(f"{m}_{s}" for m in METRICS for s in stats),
        *(f"cold_ttft_ms_{s}" for s in stats), *cost.CSV_COLUMNS, "change",
    ]  # fmt: skip
    table = []
    for e in b.entries:
        r = e.row
        shown = (*map(r.figure, METRICS), r.cold_ttft_ms)
        figures = [figure_dict(f, b.window.statistic)[s] for f in shown for s in stats]
        table.append([
            e.rank, e.tied, e.too_few, e.stale, r.name, r.provider, r.plan, r.model, r.workload,
            regions.token(r.region), r.protocol,
            r.simulated, b.window.name, b.window.statistic, r.window_s, r.samples, r.ok, r.failures, r.success_rate,
            iso(r.first_at), iso(r.last_at), r.counted, r.client_bound, r.one_shot, *truth_dict(r).values(), *figures,
            *cost.csv_values(e.cost), describe(e.change) if e.change else "",
        ])  # fmt: skip
    return header, table
