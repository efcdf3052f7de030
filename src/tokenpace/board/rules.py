"""What a board takes from the running configuration: the ranking minimum, the opening workload, long windows,
and when each row is stale, against its own job's cadence.

A row is stale when no sample arrived for two of its own job's longest intervals (cadence.stale_after: a 1k row
sampled every minute goes stale after 2.2 minutes, whatever the daily parallel workload does). A row no job of
the running configuration measures any more (its endpoint or workload left the config) is stale from its last
sample on: it is marked "not measured any more" rather than kept looking current.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from tokenpace.config.endpoints import Config
from tokenpace.schedule.cadence import Job, stale_after
from tokenpace.store.windows import EndpointRow

LONG_CONTEXT_TOKENS = 100_000  # workloads this long get the window's long span (Artificial Analysis: 14 d)
# The limit of a row no running job measures: stale from its last sample on. rows.py's and the pages' "not
# measured any more" is a limit of exactly this.
UNMEASURED_LIMIT = 0.0
StaleAfter = Callable[[EndpointRow], float | None]  # a row's silence limit in seconds (None: never stale)


@dataclass(frozen=True, slots=True)
class Rules:
    """What a board takes from the running configuration; the page, the JSON and the terminal share it."""

    min_samples: int
    workload: str  # shown when none is asked for: 1k where it is scheduled, else the first scheduled
    long_workloads: frozenset[str]
    stale_s: Mapping[tuple[str, ...], float]  # per job key: silence longer than this is stale

    def stale_after(self, row: EndpointRow) -> float | None:
        """A row's limit: its endpoint's job's (every region's job of it has the same interval). A region's row
        goes stale on its own (its last sample is its region's); a pooled row only when every region falls silent.
        UNMEASURED_LIMIT for a row no job measures where the config has jobs; None (never stale) where it has none,
        as ``tokenpace leaderboard`` without ``--config`` knows no cadence."""
        return self.stale_s.get(row.key, UNMEASURED_LIMIT if self.stale_s else None)


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


def never_stale(row: EndpointRow) -> float | None:
    """The default staleness rule: none (serve passes the scheduler's, which knows each cadence)."""
    return None
