"""What every view needs to know about the running service, gathered once by create_app."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime

import jinja2

from tokenpace import leaderboard
from tokenpace.aggregate import DEFAULT_WINDOW, WINDOWS, EndpointRow, Window
from tokenpace.config import Config
from tokenpace.schedule import Job, Status
from tokenpace.store import Store
from tokenpace.web.memo import Memo


@dataclass(frozen=True)
class Site:
    store: Store
    config: Config
    status: Callable[[], Status] | None
    now: Callable[[], datetime]
    stale_after: Callable[[EndpointRow], float | None]
    long_workloads: Collection[str]
    min_samples: int
    default_workload: str
    jobs: tuple[Job, ...]  # what is (or, without a sampler, would be) sampled
    jobs_problem: str | None  # why there are none: the config's schedule is refused
    env: jinja2.Environment
    memo: Memo


def window_param(params: Mapping[str, str]) -> Window:
    """The ``window`` query parameter as a Window; ConfigError (a 400) for an unknown one."""
    return leaderboard.window(params.get("window") or DEFAULT_WINDOW)


def window_menu(selected: Window) -> dict[str, object]:
    return {
        "name": "window",
        "label": "Window",
        "selected": selected.name,
        "options": [(w.name, w.label) for w in WINDOWS.values()],
    }
