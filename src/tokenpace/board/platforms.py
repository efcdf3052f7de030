"""Each plan a board measures, as its FAQ answers for it: which models, on which APIs, how often and why that often.

A plan's cadence is its jobs' own (the scheduler's, so the page cannot drift from what runs): as its ``every``
says, the densest its limits allow (pacing.py), or its billing's. Offline (``serve --simulate``) the jobs run on
a clock ``speedup`` times faster; the cadence stated is the file's, and the one that runs here beside it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tokenpace.board import numbers
from tokenpace.board.allowance import SOURCE_TEXT, PaceSource
from tokenpace.config.endpoints import Config, plan_name
from tokenpace.config.presets import PRESETS
from tokenpace.config.settings import SPEND_NAMES
from tokenpace.schedule.cadence import Job
from tokenpace.schedule.pacing import budget_text


@dataclass(frozen=True, slots=True)
class Platform:
    """One plan of one provider: its models, their protocols, its cadence and where the cadence comes from."""

    provider: str
    plan: str
    models: tuple[str, ...]
    protocols: tuple[str, ...]  # each one its models speak, in the order first met
    simulated: bool
    billing: str
    every_s: float  # the plan's cadence as the file sets it
    here_every_s: float  # as this server runs it: every_s / the config's speedup
    source: PaceSource
    limits: tuple[str, ...]  # "$12 per 5h", as the provider states them
    share: float | None  # of each limit tokenpace spends; None without limits
    note: str | None  # its preset's, where it has one

    @property
    def name(self) -> str:
        return plan_name(self.provider, self.plan)

    def why(self) -> str:
        """Where the cadence comes from: "its billing's (capped)", "the densest its limits allow (10 % of ...)"."""
        if self.source == "billing":
            return f"{SOURCE_TEXT['billing']} ({self.billing})"
        if self.source == "limits":
            return f"{SOURCE_TEXT['limits']} ({self.share:.0%} of {', '.join(self.limits)})"
        return SOURCE_TEXT["every"]


def platforms(config: Config, jobs: Sequence[Job]) -> list[Platform]:
    """Every plan among ``jobs``, in the config's order (a plan's cadence is its jobs' plan_every_s x speedup)."""
    grouped: defaultdict[tuple[str, str], list[Job]] = defaultdict(list)
    for job in jobs:
        grouped[job.key[:2]].append(job)
    out = []
    for (provider, plan), found in grouped.items():
        settings = config.plan_of(found[0].endpoint)
        here = found[0].plan_every_s or min(j.every_s for j in found)
        every = here if config.speedup == 1 else round(here * config.speedup)  # the file's are whole seconds
        source: PaceSource = "every" if settings.every_given else "limits" if settings.limits else "billing"
        models = tuple(dict.fromkeys(j.endpoint.model for j in found))
        protocols = tuple(dict.fromkeys(j.endpoint.protocol for j in found))
        limits = tuple(budget_text(b, name) for b in settings.limits for name in SPEND_NAMES
                       if getattr(b, name) is not None)  # fmt: skip
        share = settings.limits[0].share if settings.limits else None
        note = PRESETS[provider].note if provider in PRESETS else None
        simulated = all(j.endpoint.simulated for j in found)
        out.append(Platform(provider, plan, models, protocols, simulated, settings.billing, every, here, source,
                            limits, share, note))  # fmt: skip
    return out


def platform_dict(p: Platform) -> dict[str, Any]:
    """A plan as JSON and as /methodology's FAQ shows it."""
    return {
        "name": p.name, "provider": p.provider, "plan": p.plan, "models": list(p.models),
        "protocols": list(p.protocols), "simulated": p.simulated, "billing": p.billing, "every_s": p.every_s,
        "every": numbers.interval(p.every_s), "here_every_s": p.here_every_s,
        "here_every": numbers.interval(p.here_every_s), "source": p.source, "why": p.why(),
        "limits": list(p.limits), "share": p.share, "note": p.note,
    }  # fmt: skip


def cadence_line(p: Platform, speedup: float) -> str:
    """``ollama-cloud:free runs every 1 h, its billing's (capped); here every 10 s`` (the last part offline only;
    no colon after the name, which a terminal's emoji codes would take for one, as in ``:free:``)."""
    here = "" if speedup == 1 else f"; here every {p.here_every_s:.3g} s"
    return f"{p.name} runs every {numbers.interval(p.every_s)}, {p.why()}{here}"
