"""The leaderboard page's model: one ranked board with what the page says beside it.

Beside the :class:`ranking.Board`: the budget caps that bit, what each plan's windows allow and spent, today's
spend and each endpoint's bursts.
:meth:`LeaderboardPage.data` is the JSON twin; the HTML page and the CSV render the same board.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from tokenpace.board import cost, ranking, regions
from tokenpace.board.allowance import PlanAllowance, allowance_dict, allowances
from tokenpace.board.bursts import Bursts, bursts, grouped, point_member
from tokenpace.board.pageparts import PageSource
from tokenpace.board.query import Query
from tokenpace.board.summary import bursts_dict
from tokenpace.config.windows import WINDOWS
from tokenpace.errors import ConfigError
from tokenpace.schedule.status import BudgetStatus
from tokenpace.store import agents
from tokenpace.store.series import series


@dataclass(frozen=True, slots=True)
class LeaderboardPage:
    board: ranking.Board
    budgets: list[BudgetStatus]  # the plans whose budget cap made the sampler skip a run in the last 24 h
    spend: list[cost.PlanDay]  # what each plan spent today (UTC), priced
    allowances: list[PlanAllowance]  # per plan with a budget or limits: each window's share, spend and cadence
    bursts: dict[str, Bursts]  # per endpoint name, for a workload that releases its requests together
    caption: str  # the region's, where a region menu is shown
    any_agent: bool  # whether any probe agent ever wrote its row

    @property
    def net(self) -> bool:
        """Whether some row measured the network (probe agents): TTFT - RTT is shown."""
        return any(e.row.ttft_net_ms.n for e in self.board.entries)

    @property
    def priced(self) -> bool:
        return any(e.cost is not None and e.cost.price is not None for e in self.board.entries)

    @property
    def canary(self) -> bool:
        """Whether some row's canary was judged."""
        return any(e.row.canary_checked for e in self.board.entries)

    def data(self) -> dict[str, Any]:
        """The page's JSON twin."""
        out = {
            **ranking.as_dict(self.board),
            "region_caption": self.caption or None,
            "budgets_hit": self.budgets,
            "spend_today": [cost.plan_day_dict(d) for d in self.spend],
            "allowances": [allowance_dict(a) for a in self.allowances],
        }
        for entry in out["entries"]:  # a burst workload's rows say how each burst was served
            if entry["name"] in self.bursts:
                entry["bursts"] = bursts_dict(self.bursts[entry["name"]])
        return out


def _query(source: PageSource, params: Mapping[str, str]) -> Query:
    # An empty select ("all providers") arrives as provider=; it means no filter.
    given = {k: v for k, v in params.items() if v}
    return Query.from_params(
        given, min_samples=source.min_samples, workload=source.default_workload, region=regions.default(source.config)
    )


def ranked(source: PageSource, params: Mapping[str, str]) -> ranking.Board:
    """The board the parameters ask for, its rows read once per window, workload and region (memo)."""
    query = _query(source, params)
    window, now = WINDOWS[query.window], source.now()
    # Keyed by what the SQL reads, not the whole query: another sort or filter reuses the same rows.
    include, region = query.include_client_bound, query.region
    m = source.memo.get(
        ("rows", window.name, query.workload, include, region),
        lambda: ranking.snapshot(
            source.store, window, query.workload, now, source.long_workloads, include_client_bound=include,
            region=regions.store_filter(region),
        ),
    )  # fmt: skip
    # Each row's current change, from its own last samples whatever the window: re-read when it takes a sample.
    found = source.changes.current(m.rows)
    expected = [j.key for j in source.jobs]
    return ranking.arrange(
        m, query, now, stale_after=source.stale_after, changes=found, config=source.config, expected=expected
    )


def _board_bursts(source: PageSource, board: ranking.Board) -> dict[str, Bursts]:
    try:
        workload = source.config.workload(board.query.workload)
    except ConfigError:  # a workload the store holds and the config no longer names: no way to tell
        return {}
    if workload.concurrency is None:
        return {}
    since = board.generated_at - timedelta(seconds=board.window.span(workload.name, source.long_workloads))

    def read() -> dict[str, Bursts]:
        out = {}
        for e in board.entries:
            r = e.row
            points = series(
                source.store, provider=r.provider, plan=r.plan, model=r.model, workload=r.workload, since=since
            )
            found = bursts(grouped(point_member(p) for p in points if p.published))
            if found is not None:
                out[r.name] = found
        return out

    return source.memo.get(("bursts", board.window.name, workload.name, *(e.row.name for e in board.entries)), read)


def read_leaderboard_page(source: PageSource, params: Mapping[str, str]) -> LeaderboardPage:
    board = ranked(source, params)
    now = source.now()
    budgets = [] if source.status is None else [b for b in source.status().budgets if b.recent_skips > 0]
    spent = source.memo.get(("spend", now.date()), lambda: cost.spend(source.store, source.config, 1, now))
    allowed = source.memo.get(("allowances",), lambda: allowances(source.store, source.config, source.jobs, now))
    shown = regions.wanted(board.regions, source.config)
    caption = regions.caption(board.query.region, source.config) if shown else ""
    any_agent = bool(source.memo.get(("agents",), lambda: agents.read_all(source.store)))
    return LeaderboardPage(board, budgets, spent, allowed, _board_bursts(source, board), caption, any_agent)
