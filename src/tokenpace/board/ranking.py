"""The table users see, one Board for the web page, its JSON and CSV twins and the terminal.

A board is every endpoint's row for one workload over one window, filtered, sorted and ranked. Rows with fewer
successful fresh samples (cached and cold ones apart, windows.py) than ``min_samples`` are shown, not ranked: a
median of two is an anecdote; until every listed endpoint that can still reach it has, the ranks are provisional
and say so. By a figure, an endpoint under its success bound (rows.failing) ranks after every healthy one.
Client-bound samples (timed while this client's own loop lagged) count neither in figures nor towards
``min_samples`` unless the query says ``client_bound=include``; each row shows how many there were, and how many
of its samples came from one-shot runs published with ``run --publish``. Prices: ``cost.py``. What a board
takes from the running configuration, staleness included: ``rules.py``.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tokenpace.board import cost, regions
from tokenpace.board.changes import Change, change_dict, describe, read_current
from tokenpace.board.coverage import Coverage, coverage
from tokenpace.board.medians import ModelRow, model_rows
from tokenpace.board.query import METRIC_OF, Query
from tokenpace.board.rows import (
    TRUTH_FIELDS,
    client_bound_only,
    failing,
    figure_dict,
    iso,
    model_dict,
    row_dict,
    truth_dict,
)
from tokenpace.board.rules import UNMEASURED_LIMIT, StaleAfter, never_stale
from tokenpace.config.endpoints import Config, endpoint_name
from tokenpace.config.windows import EACH, WINDOWS, RowKey, Window
from tokenpace.config.workloads import ordered as ordered_workloads
from tokenpace.store.database import Store, epoch
from tokenpace.store.usage import typical
from tokenpace.store.windows import METRICS, EndpointRow, endpoint_rows, present


@dataclass(frozen=True, slots=True)
class Entry:
    """A row as the board shows it: ranked, or not (too few samples, or no figure to rank by), and stale;
    ``tied`` when another row shares its rank (shown "=N"); ``change``: its current change (changes.py);
    ``failing``: under its success bound (rows.failing); ``measured``: False where no running job measures it
    any more (stale from its last sample on); ``n``: the samples it is ranked on (:func:`ranked_on`)."""

    row: EndpointRow
    rank: int | None
    too_few: bool
    stale: bool
    tied: bool = False
    cost: cost.RowCost | None = None  # price, canonical model and cost per request
    change: Change | None = None
    failing: bool = False
    measured: bool = True
    n: int = 0


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
    unsampled: tuple[str, ...] = ()  # endpoints the running config measures on this workload, without a row yet

    @property
    def cover(self) -> Coverage:
        """How much of the window its rows' samples span."""
        return coverage(self.window, [e.row for e in self.entries], self.generated_at)

    @property
    def waiting(self) -> list[str]:
        """The listed endpoints that lack their minimum and may yet reach it (a failing or stale one may never,
        and holding every rank provisional for it would make the word mean nothing)."""
        return [e.row.name for e in self.entries if e.too_few and not e.failing and not e.stale]

    @property
    def provisional(self) -> bool:
        """Whether ranks may still move: some endpoint is :attr:`waiting` for its minimum, or one the running
        config measures has no sample here yet (:attr:`unsampled`: the first minutes, one endpoint alone is no
        ranking; counted, never named, as the board names only endpoints with published samples)."""
        return bool(self.waiting or self.unsampled)

    @property
    def uncharted(self) -> int:
        """Successful samples, where every one was client-bound and left out (rows.client_bound_only)."""
        return client_bound_only([e.row for e in self.entries], self.query.include_client_bound)


def sort_value(row: EndpointRow, sort: str, statistic: str) -> float | str | None:
    """What a sort key reads from a row: a headline figure, success rate, sample count or name."""
    if sort in METRIC_OF:
        return row.figure(METRIC_OF[sort]).headline(statistic)
    return {"success": row.success_rate, "samples": row.samples, "name": row.name}[sort]


def _ordered(rows: list[EndpointRow], query: Query, statistic: str) -> list[EndpointRow]:
    """Sorted by the query's key and direction, ties by name; missing values last whatever the direction; by a
    figure, failing rows after every healthy one."""

    def key(r: EndpointRow) -> Any:  # floats, ints or names: one kind per sort key, so they compare
        return sort_value(r, query.sort, statistic)

    rows = sorted(rows, key=lambda r: r.name)  # a stable sort keeps this order among ties
    known = sorted((r for r in rows if key(r) is not None), key=key, reverse=query.direction == "desc")
    if query.sort in METRIC_OF:
        known = [r for r in known if not failing(r)] + [r for r in known if failing(r)]
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


def _ranks(rows: Sequence[EndpointRow], query: Query, statistic: str, waiting: int = 0) -> list[int]:
    """Ranks of rows in board order. By a figure: healthy rows first, rank = 1 + the rows whose 95 % interval lies
    wholly on the better side of this row's, never ahead of the row above (a row without an interval overlaps
    every other); failing rows after them, ranked among themselves from 1 + the healthy rows' count and the
    ``waiting`` healthy ones still short of their minimum (ranked ahead of a failing one once they reach it). By
    anything else: the place in the order."""
    if query.sort not in METRIC_OF:
        return list(range(1, len(rows) + 1))
    healthy = [r for r in rows if not failing(r)]
    ahead = len(healthy) + waiting
    below = [ahead + rank for rank in _interval_ranks([r for r in rows if failing(r)], query, statistic)]
    return _interval_ranks(healthy, query, statistic) + below


def _interval_ranks(rows: Sequence[EndpointRow], query: Query, statistic: str) -> list[int]:
    """By a figure: 1 + the rows whose interval lies wholly better, never ahead of the row above."""
    spans = [r.figure(METRIC_OF[query.sort]).interval(statistic) for r in rows]
    return interval_ranks(spans, query.direction == "desc")


def interval_ranks(spans: Sequence[tuple[float, float] | None], higher_first: bool) -> list[int]:
    """Ranks of values in order, best first, from their 95 % intervals: rank = 1 + the values whose interval lies
    wholly on the better side of this one's, never ahead of the one above (no interval overlaps every other);
    equal ranks are ties, shown "=N". The board's rule, and a route's (route.py)."""
    unknown = (-math.inf, math.inf)
    known = [s or unknown for s in spans]
    if higher_first:  # better means lying wholly above
        better = [sum(lo > hi_i for lo, _ in known) for _, hi_i in known]
    else:
        better = [sum(hi < lo_i for _, hi in known) for lo_i, _ in known]
    ranks, last = [], 1
    for count in better:
        last = max(last, 1 + count)
        ranks.append(last)
    return ranks


def ranked_on(r: EndpointRow, sort: str) -> int:
    """The samples a row is ranked on: the sorted figure's values (a sample whose figure the client's lag could
    have moved counts for its other figures only), else every counted sample."""
    return r.figure(METRIC_OF[sort]).n if sort in METRIC_OF else r.counted


def arrange(
    m: Snapshot, query: Query, now: datetime, *, stale_after: StaleAfter = never_stale,
    config: Config | None = None, changes: Mapping[RowKey, Change] | None = None, expected: Collection[RowKey] = (),
) -> Board:  # fmt: skip
    """The board for a query, ranking rows with enough samples and a figure to sort by (:func:`_ranks`).

    An entry is stale when now - last sample > stale_after(row) seconds (None: never stale; rules.UNMEASURED_LIMIT:
    no job measures it any more); prices from config; ``expected``: the rows the running config measures (its
    jobs' keys), those of the query's workload without a sample yet keeping the ranks provisional.
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
    limits = {id(r): stale_after(r) for r in ordered}
    stale = {id(r): _is_stale(r, limits[id(r)], now) for r in ordered}
    n = {id(r): ranked_on(r, query.sort) for r in ordered}
    enough = [r for r in ordered if n[id(r)] >= query.min_samples]
    few = [r for r in ordered if n[id(r)] < query.min_samples]
    listed = enough + few
    if query.sort in METRIC_OF:  # every healthy row, waiting ones too, above every failing one
        listed = [r for r in listed if not failing(r)] + [r for r in listed if failing(r)]
    waiting = sum(not failing(r) and not stale[id(r)] for r in few)
    rankable = [r for r in enough if sort_value(r, query.sort, window.statistic) is not None]
    rank_of = dict(zip(map(id, rankable), _ranks(rankable, query, window.statistic, waiting), strict=True))
    shared = Counter(rank_of.values())
    entries = []
    for r in listed:
        too_few = n[id(r)] < query.min_samples
        rank = rank_of.get(id(r))
        measured = limits[id(r)] != UNMEASURED_LIMIT
        tied = rank is not None and shared[rank] > 1
        change = (changes or {}).get(r.key)
        entries.append(
            Entry(r, rank, too_few, stale[id(r)], tied, costs[r.key], change, failing(r), measured, n[id(r)])
        )
    # Deliberately from every provider's rows: a model's figure is the median across all that serve it and are
    # not failing (their failures still count in its success rate).
    models = model_rows(
        m.rows, window.statistic, min_samples=query.min_samples, canonical=config.models.canonical,
        speaks=lambda r: not failing(r),
    )  # fmt: skip
    return Board(
        query, window, now, tuple(entries), tuple(models),
        workloads=tuple(ordered_workloads((x[2] for x in menus), config.schedule.workloads)),
        providers=tuple(sorted({x[0] for x in menus})),
        plans=tuple(sorted({x[1] for x in menus})),
        regions=tuple(sorted(here)),
        unsampled=_unsampled(expected, {r.key for r in m.rows}, query),
    )  # fmt: skip


def _unsampled(expected: Collection[RowKey], seen: Collection[RowKey], query: Query) -> tuple[str, ...]:
    """The names of the expected rows of the query's workload, provider and plan that have no sample yet."""
    return tuple(sorted(
        endpoint_name(p, plan, model) for p, plan, model, workload in expected
        if (p, plan, model, workload) not in seen and workload == query.workload and query.provider in (None, p)
        and query.plan in (None, plan)
    ))  # fmt: skip


def _is_stale(row: EndpointRow, limit: float | None, now: datetime) -> bool:
    """now - last sample > limit (None: never; rules.UNMEASURED_LIMIT: stale from the last sample on)."""
    if limit == UNMEASURED_LIMIT:
        return True
    return limit is not None and row.last_at is not None and epoch(now) - epoch(row.last_at) > limit


def read_board(
    store: Store,
    query: Query,
    now: datetime,
    *,
    stale_after: StaleAfter = never_stale,
    long_workloads: Collection[str] = (),
    config: Config | None = None,
    expected: Collection[RowKey] = (),
) -> Board:
    """The leaderboard for a query, read from the store now (``expected``: as :func:`arrange` takes it)."""
    m = snapshot(
        store, WINDOWS[query.window], query.workload, now, long_workloads,
        include_client_bound=query.include_client_bound, region=regions.store_filter(query.region),
    )  # fmt: skip
    changes = read_current(store, [r.key for r in m.rows])
    return arrange(m, query, now, stale_after=stale_after, config=config, changes=changes, expected=expected)


def as_dict(b: Board) -> dict[str, Any]:
    """The board as JSON-able data, the JSON twin of the page; times are ISO 8601 UTC."""
    s = b.window.statistic
    return {
        "generated_at": b.generated_at.isoformat(),
        "window": dataclasses.asdict(b.window),
        "coverage": b.cover.data(),
        "provisional": b.provisional,
        "waiting": b.waiting,
        "unsampled": len(b.unsampled),
        "client_bound_only": b.uncharted,
        "query": {f.name: getattr(b.query, f.name) for f in dataclasses.fields(Query) if f.compare},
        "entries": [
            {
                "rank": e.rank,
                "tied": e.tied,
                "too_few": e.too_few,
                "ranked_on": e.n,  # the samples it is ranked on: the sorted figure's values
                "stale": e.stale,
                "measured": e.measured,
                "failing": e.failing,
                "provisional": b.provisional and e.rank is not None,
                **row_dict(e.row, s),
            }
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
        "rank", "tied", "too_few", "stale", "measured", "failing", "provisional",
        "name", "provider", "plan", "model", "workload", "region", "protocol",
        "simulated",
        "window", "statistic", "window_s", "samples", "ok", "failures", "success_rate",
        "rate_limited", "availability", "first_at", "last_at",
        "counted", "client_bound", "one_shot", *TRUTH_FIELDS, *(f"{m}_{s}" for m in METRICS for s in stats),
        *(f"cold_ttft_ms_{s}" for s in stats), *cost.CSV_COLUMNS, "change",
    ]  # fmt: skip
    table = []
    for e in b.entries:
        r = e.row
        shown = (*map(r.figure, METRICS), r.cold_ttft_ms)
        figures = [figure_dict(f, b.window.statistic)[s] for f in shown for s in stats]
        table.append([
            e.rank, e.tied, e.too_few, e.stale, e.measured, e.failing, b.provisional and e.rank is not None,
            r.name, r.provider, r.plan, r.model, r.workload,
            regions.token(r.region), r.protocol,
            r.simulated, b.window.name, b.window.statistic, r.window_s, r.samples, r.ok, r.failures, r.success_rate,
            r.rate_limited, r.availability, iso(r.first_at), iso(r.last_at), r.counted, r.client_bound, r.one_shot,
            *truth_dict(r).values(), *figures,
            *cost.csv_values(e.cost), describe(e.change) if e.change else "",
        ])  # fmt: skip
    return header, table
