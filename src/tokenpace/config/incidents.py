"""The ``[incidents]`` table: the thresholds of the written rules that open and close incidents (board/incidents.py)::

    [incidents]
    outage_run = 5             # critical: the last 5 judged samples all failed,
    outage_window = "15m"      # or more than outage_share of the judged samples of the last 15 min did,
    outage_share = 0.5
    outage_min = 4             # the window holding at least 4 of them
    recover_run = 3            # a critical incident closes after 3 successes in a row
    drop_samples = 100         # major: the success rate of the last 100 judged samples under drop_below,
    drop_below = 0.95
    baseline = "7d"            # the 7 days before them at least baseline_at_least,
    baseline_at_least = 0.99
    baseline_min = 50          # over at least 50 samples
    slow_factor = 3.0          # minor: a workload's TTFT p50 over the last hour above 3x the median of the
    slow_min = 3               # same hour of day over the 7 days before it, each from at least 3 samples
    canary_samples = 20        # major: the canary pass rate of the last 20 verdicts under canary_below
    canary_below = 0.8

Every key is optional; the defaults are the ones above (issue 33's thresholds). Shares are fractions from 0 to 1.
The windows are long enough that an endpoint failing 1 request in 200 at random, or 1 canary in 100, opens no
incident in a month (tests/board/test_incidents.py): under 95% of 20 samples would be 2 failures, which such an
endpoint shows a few times a month.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import pydantic

from tokenpace.config.durations import parse_duration

MAX_RUN = 1000  # samples a rule may ask for: every rule reads them at each sample
LONGEST_BASELINE_S = 31 * 86_400.0  # the store's raw samples are read this far back at most

Share = Annotated[float, pydantic.Field(gt=0, le=1)]
Count = Annotated[int, pydantic.Field(ge=1, le=MAX_RUN)]


def _short_span(text: object) -> float:
    return parse_duration(text, longest_s=86_400.0)


def _baseline(text: object) -> float:
    return parse_duration(text, longest_s=LONGEST_BASELINE_S)


class IncidentsTable(pydantic.BaseModel):
    """The ``[incidents]`` table as written."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)
    outage_run: Count = 5
    outage_window: Annotated[float, pydantic.PlainValidator(_short_span)] = 15 * 60.0
    outage_share: Share = 0.5
    outage_min: Count = 4
    recover_run: Count = 3
    drop_samples: Count = 100
    drop_below: Share = 0.95
    baseline: Annotated[float, pydantic.PlainValidator(_baseline)] = 7 * 86_400.0
    baseline_at_least: Share = 0.99
    baseline_min: Count = 50
    slow_factor: Annotated[float, pydantic.Field(gt=1, le=1000)] = 3.0
    slow_min: Count = 3
    canary_samples: Count = 20
    canary_below: Share = 0.8


@dataclass(frozen=True, slots=True)
class Thresholds:
    """What the rules are judged against (times in seconds); see the module's docstring for each."""

    outage_run: int = 5
    outage_window_s: float = 15 * 60.0
    outage_share: float = 0.5
    outage_min: int = 4
    recover_run: int = 3
    drop_samples: int = 100
    drop_below: float = 0.95
    baseline_s: float = 7 * 86_400.0
    baseline_at_least: float = 0.99
    baseline_min: int = 50
    slow_window_s: float = 3600.0  # "the last hour": the same hour of day is an hour long
    slow_factor: float = 3.0
    slow_min: int = 3
    canary_samples: int = 20
    canary_below: float = 0.8


def thresholds(table: IncidentsTable) -> Thresholds:
    t = table
    return Thresholds(
        t.outage_run, t.outage_window, t.outage_share, t.outage_min, t.recover_run, t.drop_samples, t.drop_below,
        t.baseline, t.baseline_at_least, t.baseline_min, 3600.0, t.slow_factor, t.slow_min, t.canary_samples,
        t.canary_below,
    )  # fmt: skip
