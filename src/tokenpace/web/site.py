"""What every view needs to know about the running service, gathered once by create_app."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

import jinja2

from tokenpace.board.changes import Kept
from tokenpace.board.query import Query, window
from tokenpace.board.rules import StaleAfter
from tokenpace.board.tracking import IncidentLog
from tokenpace.config.endpoints import Config
from tokenpace.config.windows import DEFAULT_WINDOW, WINDOWS, Window
from tokenpace.config.workloads import ordered
from tokenpace.schedule.cadence import Job
from tokenpace.schedule.status import Status
from tokenpace.store.database import Store
from tokenpace.web.limits import ViewPool
from tokenpace.web.memo import Memo
from tokenpace.web.renderer import Renderer


@dataclass(frozen=True)
class Site:
    store: Store
    config: Config
    status: Callable[[], Status] | None
    now: Callable[[], datetime]
    stale_after: StaleAfter
    long_workloads: Collection[str]
    min_samples: int
    default_workload: str
    jobs: tuple[Job, ...]  # what is (or, without a sampler, would be) sampled
    jobs_problem: str | None  # why there are none: the config's schedule is refused
    env: jinja2.Environment
    memo: Memo  # rows computed by SQL, shared by pages
    changes: Kept  # each row's recent changes, until its last sample moves
    pages: Memo  # rendered responses, per path and parameters
    pool: ViewPool
    incidents: Memo  # the incidents derived from the samples: at most once a minute (web/incidents.py)
    incident_log: IncidentLog  # what that derivation walks on from (board/tracking.py)
    secrets: tuple[str, ...]  # values scrubbed from what pages show (a provider may echo a key in an error)
    renderer: Renderer | None = None  # the process rendering pages, when they are not rendered on pool threads

    def ordered(self, workloads: Iterable[str]) -> list[str]:
        """Workload names in the schedule's order (the config's), then the built-ins', then A to Z."""
        return ordered(workloads, self.config.schedule.workloads)

    @property
    def endpoint_names(self) -> list[str]:
        """The configured endpoints' names: what every page shares its chart colours out to."""
        return [e.name for e in self.config.endpoints]

    def scrub(self, text: str | None) -> str | None:
        """``text`` with every known secret replaced by ***."""
        for secret in self.secrets:
            text = None if text is None else text.replace(secret, "***")
        return text


def window_param(params: Mapping[str, str]) -> Window:
    """The ``window`` query parameter as a Window; BadRequest (a 400) for an unknown one."""
    return window(params.get("window") or DEFAULT_WINDOW)


def client_bound_param(params: Mapping[str, str]) -> bool:
    """``client_bound=include``: figures also from client-bound samples; BadRequest (a 400) for another value."""
    return Query(client_bound=params.get("client_bound") or "exclude").include_client_bound  # type: ignore[arg-type]


def window_menu(selected: Window) -> dict[str, object]:
    return {
        "name": "window",
        "label": "Window",
        "selected": selected.name,
        "options": [(w.name, w.label) for w in WINDOWS.values()],
    }
