"""A config's board offline (``serve --simulate``): every endpoint a simulator at its own path, on a faster clock.

Each real endpoint becomes a simulated one of the same provider, plan and model, labelled simulated everywhere,
without a key and at an address no request can leave this machine by (``simulated://PROVIDER:PLAN/PATH`` until
the service starts the plan's simulator, see sim/standin.py). That simulator serves the path of the endpoint's
base URL (OpenCode Zen's /zen/v1, Go's /zen/go/v1, Ollama Cloud's root) and each model on its own protocol only,
at the figures of the file's ``offline`` tables. The plans keep their billing, limits and prices, so the cadence
of each is the file's own (derived from its limits where it has any), run ``speedup`` times faster, and with it
every limit's window and the idle time that makes a request cold (cadence.jobs divides them): at the default,
an hourly plan runs every 10 s and a 5-hour window lasts 50 s, so the offline board ranks within a
minute or two. It is measured here, never by region agents.
"""

from __future__ import annotations

import dataclasses
from urllib.parse import urlsplit

from tokenpace.config.endpoints import Config, Endpoint, plan_name
from tokenpace.config.settings import SIM_BASE_URL
from tokenpace.errors import ConfigError

DEFAULT_SPEEDUP = 360.0  # an hour in 10 s
MAX_SPEEDUP = 100_000.0  # a typo, not a pace (each job's interval must stay >= MIN_SIMULATED_EVERY_S anyway)
_SCHEME = SIM_BASE_URL.partition("{")[0]  # "simulated://"


def offline(cfg: Config, speedup: float = DEFAULT_SPEEDUP) -> Config:
    """The config with each real endpoint swapped for its stand-in, run ``speedup`` times faster (see above)."""
    if not 1 <= speedup <= MAX_SPEEDUP:
        raise ConfigError(f"--speedup {speedup:g}: give a number from 1 to {MAX_SPEEDUP:g}")
    endpoints = tuple(e if e.simulated else _stand_in(e) for e in cfg.endpoints)
    return dataclasses.replace(cfg, endpoints=endpoints, speedup=speedup, regions=())


def _stand_in(e: Endpoint) -> Endpoint:
    path = urlsplit(e.base_url).path.rstrip("/")
    return dataclasses.replace(e, base_url=f"{_SCHEME}{plan_name(e.provider, e.plan)}{path}", api_key_env=None,
                               simulated=True)  # fmt: skip


def address(e: Endpoint) -> tuple[str, str]:
    """A simulated endpoint's simulator and path: ``("opencode-zen", "/zen/v1")``, ``("ollama-cloud:free", "")``;
    a simulated provider's own endpoints have no path (``("demo", "")``). Matched by name, never split at a "/":
    a provider's name may hold one."""
    rest = e.base_url.removeprefix(_SCHEME)
    for key in (plan_name(e.provider, e.plan), e.provider):
        if rest == key or rest.startswith(key + "/"):
            return key, rest.removeprefix(key)
    return rest, ""


def pace_line(cfg: Config) -> str:
    """What serve says of an offline config's pace, once, beside the address."""
    hour = 3600 / cfg.speedup
    return (
        f"offline (--simulate): every endpoint of {cfg.source} is a simulator on this machine, labelled simulated; "
        f"its cadences, limit windows and idle times run {cfg.speedup:g} times faster (an hour every {hour:g} s)"
    )
