"""Jobs and their cadence: what the sampler measures, how often, and when each is next due (pure functions).

A job's interval is the longer of its plan's cadence and its workload's; jitter varies each interval so that
samples don't line up, drawn from a hash so that the same history always gives the same due time. A plan with
limits gets the densest cadence they allow (pacing.py). A config's ``speedup`` (serve --simulate: its endpoints
are simulators) divides each interval, limit window and idle threshold once they are paced, so the offline board
runs the file's own schedule on a faster clock.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace

from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.config.prices import Price
from tokenpace.config.settings import (
    DEFAULT_COLD_AFTER_S,
    DEFAULT_CONCURRENCY,
    MIN_SIMULATED_EVERY_S,
    Budget,
    PlanSettings,
    Spend,
)
from tokenpace.config.workloads import Workload
from tokenpace.errors import ConfigError
from tokenpace.measure.sample import LOCAL
from tokenpace.schedule.pacing import Demand, amount, budget_text, pace

STAGGER_S = 10.0  # first-ever and missed runs start within this many seconds (or a cadence), spread by job
INPUT_MARGIN = 1.05  # a provider's tokenizer and chat template may count more input tokens than o200k does
# Spend counts the larger of o200k's and the provider's output count, and max_tokens caps only the model's own:
# o200k's count of the same text can run well above another tokenizer's.
OUTPUT_MARGIN = 1.5
# Input tokens allowed per image, high on purpose: gpt-4o-mini bills a 1200x840 image as ~37k tokens and
# Anthropic ~1.3k, and a worst case must hold for every provider.
IMAGE_TOKEN_ALLOWANCE = 40_000
WAKE_WORKLOAD = "1k"  # the cheapest built-in: what wakes a cold endpoint before a run
JobKey = tuple[str, str, str, str]  # provider, plan, model, workload
Slot = tuple[str, ...]  # a key, and its region where agents measure it: what the sampler schedules


@dataclass(frozen=True, slots=True)
class Job:
    """One endpoint and workload on a cadence: ``requests`` samples every ``every_s`` seconds, +- jitter."""

    endpoint: Endpoint
    workload: Workload
    every_s: float
    jitter: float
    requests: int
    budget: Budget | None = None  # the plan's, shared with every job of the plan
    concurrency: int = DEFAULT_CONCURRENCY  # the provider's limit on requests in flight
    region: str = LOCAL  # where an agent measures it from; LOCAL: this process does
    cold_after_s: float = DEFAULT_COLD_AFTER_S  # the endpoint's idle time that makes a request cold (0: never)
    # The workload of the one request sent alone before a run that finds the endpoint cold (the config's 1k),
    # so that the run's own requests are warm; None: no wake.
    wake: Workload | None = None
    # A wake run's idle time as the sampler saw it (seconds), told to the region's agent with the order: an
    # agent's role cannot read samples, so after a restart it would not know the endpoint was idle.
    idle_s: float | None = None
    limits: tuple[Budget, ...] = ()  # the plan's stated limits, each with tokenpace's share: shared like budget
    price: Price | None = None  # the endpoint's, which prices its spend in dollars
    plan_every_s: float | None = None  # the plan's cadence (given, derived or billing's), which every_s is at least
    model: str = ""  # the endpoint's canonical model (config/models.py): its endpoints share a round's prompts
    round_s: float = 0.0  # the length of its model's prompt rounds (schedule/rounds.py); 0: a prompt per endpoint
    round_seed: int | None = None  # set as a run is launched: its round's prompt seed, sent with it to an agent

    @property
    def budgets(self) -> tuple[Budget, ...]:
        """Every cap its runs must fit: the plan's budget, then its limits."""
        return (() if self.budget is None else (self.budget,)) + self.limits

    @property
    def key(self) -> JobKey:
        e = self.endpoint
        return (e.provider, e.plan, e.model, self.workload.name)

    @property
    def slot(self) -> Slot:
        """What the sampler schedules: the key, and the region where there is one."""
        return self.key if self.region == LOCAL else (*self.key, self.region)

    @property
    def name(self) -> str:
        return f"{self.endpoint.name} {self.workload.name}" + (f" @{self.region}" if self.region else "")

    @property
    def width(self) -> int:
        """Requests in flight while it runs: a sequential workload sends one at a time."""
        return self.workload.concurrency or 1

    @property
    def wakes(self) -> bool:
        """Whether a run of this job may send a wake request first (there is a wake and a threshold)."""
        return self.wake is not None and self.cold_after_s > 0

    def worst_case(self) -> Spend:
        """n + width requests, (n + width) x (input_tokens x 1.05 + images x 40,000) in, n x max_tokens x 1.5 out;
        plus, when it wakes, its wake request's worst case as a run of one (2 requests, 1 x max_tokens x 1.5);
        dollars at its price."""
        # The first run of an endpoint may send ``width`` requests that refuse an optional field (load/send.py
        # resends each without it): they are billed as input perhaps, never as output.
        own = _worst(self.workload, self.requests, self.width)
        return (own + _worst(self.wake, 1, 1) if self.wake is not None and self.wakes else own).priced(self.price)

    def refusals(self) -> Spend:
        """The ``width`` refused requests of an endpoint's first run, as worst_case() allows for them."""
        return Spend(self.width, math.ceil(self.width * _input_per_request(self.workload))).priced(self.price)


def _worst(workload: Workload, n: int, width: int) -> Spend:
    """A run of n requests, ``width`` at once: n + width sent, as many inputs, n outputs (see Job.worst_case)."""
    sent = n + width
    output = math.ceil(n * workload.max_tokens * OUTPUT_MARGIN)
    return Spend(sent, math.ceil(sent * _input_per_request(workload)), output)


def _input_per_request(w: Workload) -> float:
    return w.input_tokens * INPUT_MARGIN + (w.image is not None) * IMAGE_TOKEN_ALLOWANCE


def jobs(config: Config, endpoints: Iterable[Endpoint]) -> list[Job]:
    """A job per endpoint, scheduled workload and region; its interval = max(plan cadence, workload cadence),
    the plan's cadence paced to its limits where it has any (pacing.pace), then each time / the config's speedup."""
    out = []
    schedule = config.schedule
    demands: defaultdict[tuple[str, str], list[Demand]] = defaultdict(list)
    plans: dict[tuple[str, str], PlanSettings] = {}
    for e in endpoints:
        plan, limit = config.plan_of(e), config.concurrency_of(e.provider)
        plans[e.provider, e.plan] = plan
        price = config.price_of(e.provider, e.plan, e.model)
        for name in schedule.workloads:
            workload, cadence = config.workload(name), schedule.cadence(name)
            if (workload.concurrency or 1) > limit:
                raise ConfigError(
                    f"{config.source}: workload {name} sends {workload.concurrency} requests at once but "
                    f"providers.{e.provider}.concurrency is {limit}: raise it or leave {name} out of schedule.workloads"
                )
            every = max(plan.every_s, cadence.every_s or 0.0)
            jitter = schedule.jitter if cadence.jitter is None else cadence.jitter
            requests = workload.concurrency or plan.requests  # a parallel run is one burst of its concurrency
            if workload.paired:  # whole pairs: a cold turn alone says nothing of a cache
                requests = max(2, requests + requests % 2)
            wake = config.workload(WAKE_WORKLOAD) if config.wake_of(e) else None
            job = Job(e, workload, every, jitter, requests, plan.budget, limit, LOCAL, config.cold_after_of(e), wake)
            job = replace(job, limits=plan.limits, price=price, plan_every_s=plan.every_s)
            job = replace(job, model=config.models.canonical(e.model))
            _check_budget(config.source, job)
            regional = [replace(job, region=r.name) for r in config.regions] or [job]
            demands[e.provider, e.plan] += [Demand(cadence.every_s or 0.0, jitter, j.worst_case()) for j in regional]
            out += regional
    paces = {key: pace(f"{config.source}: {_where(*key)}", plans[key], found) for key, found in demands.items()}
    paced = [_paced(job, paces[job.key[:2]], config) for job in out]
    paced = paced if config.speedup == 1 else [_faster(job, config.speedup, config.source) for job in paced]
    return _in_rounds(paced) if config.schedule.one_prompt_per_round else paced


def _in_rounds(jobs: list[Job]) -> list[Job]:
    """Each job with round_s = the shortest every_s among the jobs of its model and workload (schedule/rounds.py)."""
    shortest: dict[tuple[str, str], float] = {}
    for j in jobs:
        shortest[j.model, j.workload.name] = min(shortest.get((j.model, j.workload.name), math.inf), j.every_s)
    return [replace(j, round_s=shortest[j.model, j.workload.name]) for j in jobs]


def _faster(job: Job, speedup: float, source: str) -> Job:
    """The job on a clock ``speedup`` times faster: its intervals, plan windows and idle threshold each / speedup."""
    every = job.every_s / speedup
    if every < MIN_SIMULATED_EVERY_S:
        raise ConfigError(
            f"{source}: --speedup {speedup:g} runs {job.name} every {every:.3g} s, more often than the minimum of "
            f"{MIN_SIMULATED_EVERY_S:g} s between runs of a simulated endpoint: give a lower --speedup"
        )
    budget = None if job.budget is None else replace(job.budget, window_s=job.budget.window_s / speedup)
    limits = tuple(replace(b, window_s=b.window_s / speedup) for b in job.limits)
    plan_every = None if job.plan_every_s is None else job.plan_every_s / speedup
    return replace(job, every_s=every, plan_every_s=plan_every, budget=budget, limits=limits,
                   cold_after_s=job.cold_after_s / speedup)  # fmt: skip


def _paced(job: Job, every_s: float, config: Config) -> Job:
    """The job at its plan's cadence ``every_s``: its interval max(every_s, its workload's own)."""
    if every_s == job.plan_every_s:
        return job
    own = config.schedule.cadence(job.workload.name).every_s or 0.0
    return replace(job, every_s=max(every_s, own), plan_every_s=every_s)


def _where(provider: str, plan: str) -> str:
    """The table a plan's keys are in: providers.NAME, or providers.NAME.plans.PLAN."""
    return f"providers.{provider}" + ("" if plan == "default" else f".plans.{plan}")


def _check_budget(source: str, job: Job) -> None:
    """ConfigError when one run's worst case alone exceeds a cap (x share) of its plan: that job could never run."""
    e, need = job.endpoint, job.worst_case()
    for budget in job.budgets:
        if over := need.over(budget):
            name, w = over[0], job.workload.name
            run = f"one run of workload {w}" + (" and its wake request need" if job.wakes else " needs")
            fix = "raise it" + ", set wake = false" * job.wakes + f" or leave {w} out of schedule.workloads"
            if budget is job.budget:  # the older form, as it was written
                cap, used = getattr(budget, name), getattr(need, name)
                said = f"budget.{name} = {_number(cap)} is less than {run} ({_number(used)})"
            else:
                share = "" if budget.share == 1 else f"{budget.share:.0%} of "
                needs = amount(name, getattr(need, name))
                said = f"limits: {share}{budget_text(budget, name)} is less than {run} ({needs})"
            raise ConfigError(f"{source}: {_where(e.provider, e.plan)}: {said}: {fix}")


def _number(x: float) -> str:
    return str(x) if isinstance(x, int) else f"{x:.2f}"


def _unit(*parts: object) -> float:
    """A number in [0, 1) drawn from the parts: the same parts always give the same number."""
    digest = hashlib.blake2b("\0".join(map(repr, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def next_due(job: Job, last_started: float | None, now: float) -> float:
    """due = last_started + every_s * (1 + jitter * u), u = 2 * h(key, last_started) - 1 in [-1, 1).

    h is a hash, so a restart recomputes the same due time. Never sampled: now + s * h(key), s = min(STAGGER_S,
    every_s): a job every 2 s is not held back 10 s. Already past (after downtime): now + s * h(key, last_started),
    so a missed run happens once, soon, and runs missed together spread out instead of bursting. Call it once
    per ``last_started`` and keep the answer.
    """
    stagger = min(STAGGER_S, job.every_s)
    if last_started is None:
        return now + stagger * _unit(job.slot)
    h = _unit(job.slot, last_started)
    due = last_started + job.every_s * (1 + job.jitter * (2 * h - 1))
    return due if due > now else now + stagger * h


def stale_after(job: Job) -> float:
    """2 * every_s * (1 + jitter): two of the longest intervals without a new sample."""
    return 2 * job.every_s * (1 + job.jitter)
