"""Schedule settings: how often each endpoint and workload is sampled, how many at once, within what budget.

The TOML keys (see ``config``) are parsed here into plain frozen data: :class:`PlanSettings` per provider and
plan, :class:`ScheduleSettings` for the whole file. Billing sets a plan's cadence, as TokenDyno's defaults do:
``uncapped`` every 10 minutes, ``capped`` hourly, ``per-token`` every 4 hours. An endpoint with an API key is
taken to be billed per token and a local server (no key) to be uncapped, unless the file says otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Annotated, Any, Literal

import pydantic

from tokenpace.config.durations import parse_duration
from tokenpace.config.prices import Price

Billing = Literal["uncapped", "capped", "per-token"]
BILLING_EVERY_S: Mapping[str, float] = MappingProxyType({"uncapped": 600.0, "capped": 3600.0, "per-token": 14400.0})
DEFAULT_CONCURRENCY = 10
DEFAULT_WORKLOADS = ("1k", "10k", "100k", "vision", "parallel")
# The shortest cadences: a real endpoint's runs cost the provider (and often the user) money; a simulated one's
# only fill the store, so demos and tests may sample it every second, no faster.
MIN_EVERY_S = 10.0
MIN_SIMULATED_EVERY_S = 1.0
BUDGET_WINDOW_S = 86_400.0  # a budget without a window of its own: any 24 h
LONGEST_WINDOW_S = 31 * BUDGET_WINDOW_S  # a month's limit: a budget's spend is read over its window before every run
DEFAULT_SHARE = 0.1  # of each stated limit: the user's own work keeps the rest
MAX_DOLLARS = 1_000_000.0  # far above any plan's limit: a typo, not a limit
PER_M = 1_000_000  # prices are dollars per this many tokens
# A request sent after the endpoint was idle this long is tagged cold (load/coldstart.py): a scale-to-zero
# endpoint has unloaded its model by then (Hugging Face Inference Endpoints' default is 15 minutes).
DEFAULT_COLD_AFTER_S = 900.0


def parse_cold_after(value: object) -> float:
    """Idle seconds that make a request cold: a duration, or ``"off"`` / ``"0"`` (0.0: never cold)."""
    if value in ("off", "0", 0):
        return 0.0
    try:
        return parse_duration(value)
    except ValueError:
        wanted = 'give how long an endpoint idles before a request is cold, e.g. "15m", or "off"'
        raise ValueError(f"{value!r}: {wanted}") from None


@dataclass(frozen=True, slots=True)
class Budget:
    """Caps per plan over any rolling ``window_s`` (24 h unless stated), of which tokenpace may spend ``share``;
    None: no cap on that count."""

    requests: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    dollars: float | None = None  # at the endpoints' prices
    window_s: float = BUDGET_WINDOW_S
    share: float = 1.0

    def caps(self) -> tuple[int | float | None, ...]:
        """Requests, input tokens, output tokens and dollars, as stated (None: no cap)."""
        return (self.requests, self.input_tokens, self.output_tokens, self.dollars)

    def allowed(self) -> tuple[float | None, ...]:
        """Each cap x share: what tokenpace may spend of it (None: no cap)."""
        return tuple(None if cap is None else cap * self.share for cap in self.caps())


SPEND_NAMES = ("requests", "input_tokens", "output_tokens", "dollars")


@dataclass(frozen=True, slots=True)
class Spend:
    """Requests, tokens and dollars spent, or that a run may spend, against a plan's budget (not a provider's
    report); dollars are 0 where no price is known."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    dollars: float = 0.0

    def __add__(self, other: Spend) -> Spend:
        return Spend(*(a + b for a, b in zip(self._counts(), other._counts(), strict=True)))  # type: ignore[arg-type]

    def __mul__(self, times: int) -> Spend:
        return Spend(*(a * times for a in self._counts()))  # type: ignore[arg-type]

    def _counts(self) -> tuple[int, int, int, float]:
        return (self.requests, self.input_tokens, self.output_tokens, self.dollars)

    def fits(self, budget: Budget) -> bool:
        """Every count within its cap x share (a cap of None is no cap)."""
        return not self.over(budget)

    def over(self, budget: Budget) -> list[str]:
        """The names of the counts above their cap x share."""
        pairs = zip(SPEND_NAMES, self._counts(), budget.allowed(), strict=True)
        return [name for name, n, cap in pairs if cap is not None and n > cap]

    def priced(self, price: Price | None) -> Spend:
        """dollars = (input tokens x input price + output tokens x output price) / 1M (0 without a price)."""
        dollars = (
            0.0 if price is None else (self.input_tokens * price.input + self.output_tokens * price.output) / PER_M
        )
        return Spend(self.requests, self.input_tokens, self.output_tokens, dollars)


@dataclass(frozen=True, slots=True)
class PlanSettings:
    """How one plan of one provider is sampled: its billing, cadence, requests per run, budget and limits."""

    billing: Billing = "per-token"
    every_s: float = BILLING_EVERY_S["per-token"]
    requests: int = 1  # samples per scheduled run of a sequential workload
    budget: Budget | None = None  # tokenpace's own cap per 24 h (the older form: all of it is spent)
    limits: tuple[Budget, ...] = ()  # the plan's limits as its provider states them, each with tokenpace's share
    every_given: bool = False  # ``every`` was written: it wins over a cadence derived from the limits
    cold_after_s: float | None = None  # idle seconds before a cold request; 0: never; None: the schedule's
    wake: bool | None = None  # a cold endpoint gets a wake request before a scheduled run; None: the schedule's

    @property
    def budgets(self) -> tuple[Budget, ...]:
        """Every cap a run must fit: the budget, then the limits."""
        return (() if self.budget is None else (self.budget,)) + self.limits

    @classmethod
    def default(cls, keyed: bool) -> PlanSettings:
        """What a plan gets without settings: per-token with an API key, else (a local server) uncapped."""
        billing: Billing = "per-token" if keyed else "uncapped"
        return cls(billing, BILLING_EVERY_S[billing])


@dataclass(frozen=True, slots=True)
class Cadence:
    """A workload's own cadence; None: follow the plan's cadence, or take the schedule's jitter."""

    every_s: float | None = None
    jitter: float | None = None


# Parallel once a day with jitter 0.5: each run at a random time of day, as Artificial Analysis does.
DEFAULT_EVERY: Mapping[str, Cadence] = MappingProxyType(
    {"1k": Cadence(), "10k": Cadence(3 * 3600), "vision": Cadence(3 * 3600), "100k": Cadence(7 * 86400),
     "parallel": Cadence(86400, 0.5)}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ScheduleSettings:
    """The ``[schedule]`` table: which workloads run, the jitter, each workload's cadence, ranking's minimum."""

    workloads: tuple[str, ...] = DEFAULT_WORKLOADS
    min_samples: int = 3
    jitter: float = 0.1
    every: Mapping[str, Cadence] = field(default_factory=lambda: dict(DEFAULT_EVERY))
    cold_after_s: float = DEFAULT_COLD_AFTER_S  # 0: no request is tagged cold
    wake: bool = True  # a scheduled run of an endpoint found cold first sends one 1k request alone
    # In one round, every endpoint of a canonical model gets the same prompt of a workload but its nonce line
    # (schedule/rounds.py), as Artificial Analysis runs one prompt on all endpoints; False: a prompt per endpoint.
    one_prompt_per_round: bool = True

    def cadence(self, workload: str) -> Cadence:
        """The workload's cadence; workloads without one (declared ones) follow the plan."""
        return self.every.get(workload, Cadence())


# TOML side: pydantic shapes whose errors name their key (config turns them into one line).
Duration = Annotated[float, pydantic.PlainValidator(parse_duration)]
ColdAfter = Annotated[float, pydantic.PlainValidator(parse_cold_after)]


def _workload_every(text: str) -> float:
    """A workload's own cadence in seconds, no shorter than any endpoint's (ValueError otherwise)."""
    seconds = parse_duration(text)
    if seconds < MIN_SIMULATED_EVERY_S:
        raise ValueError(f"{text!r} is more often than the minimum of {MIN_SIMULATED_EVERY_S:g} s between runs")
    return seconds


def _cadence(value: Any) -> Cadence:
    """``"plan"``, a duration, or ``{ every = "1d", jitter = 0.5 }``."""
    if value == "plan":
        return Cadence()
    if isinstance(value, str):
        return Cadence(_workload_every(value))
    if isinstance(value, dict) and set(value) <= {"every", "jitter"}:
        every = value.get("every", "plan")
        jitter = value.get("jitter")
        if jitter is not None and not (isinstance(jitter, int | float) and 0 <= jitter < 1):
            raise ValueError(f"jitter must be a number from 0 to below 1, got {jitter!r}")
        return Cadence(None if every == "plan" else _workload_every(every), jitter)
    raise ValueError('give "plan", a duration like "3h", or { every = "1d", jitter = 0.5 }')


def _window(text: object) -> float:
    """A limit's rolling window: a duration up to 31 days, e.g. "5h", "7d", "30d"."""
    return parse_duration(text, longest_s=LONGEST_WINDOW_S)


LimitWindow = Annotated[float, pydantic.PlainValidator(_window)]
LimitDollars = Annotated[float, pydantic.Field(gt=0, le=MAX_DOLLARS, allow_inf_nan=False)]


class BudgetTable(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)
    requests: int | None = pydantic.Field(default=None, ge=1)
    input_tokens: int | None = pydantic.Field(default=None, ge=1)
    output_tokens: int | None = pydantic.Field(default=None, ge=1)
    dollars: LimitDollars | None = None

    def budget(self, window_s: float = BUDGET_WINDOW_S, share: float = 1.0) -> Budget:
        return Budget(self.requests, self.input_tokens, self.output_tokens, self.dollars, window_s, share)


class LimitTable(BudgetTable):
    """``{ dollars = 12, per = "5h" }``: one of a plan's limits, at least one cap over its window."""

    per: LimitWindow

    @pydantic.model_validator(mode="after")
    def _capped(self) -> LimitTable:
        if self.requests is self.input_tokens is self.output_tokens is self.dollars is None:
            raise ValueError("give at least one of requests, input_tokens, output_tokens or dollars beside per")
        return self


BudgetShare = Annotated[float, pydantic.Field(gt=0, le=1, allow_inf_nan=False)]


class PlanKeys(pydantic.BaseModel):
    """Keys a provider table and its plan tables both take (a plan's own override the provider's)."""

    billing: Billing | None = None
    every: Duration | None = None
    requests: int | None = pydantic.Field(default=None, ge=1)
    budget: BudgetTable | None = None
    limits: list[LimitTable] | None = pydantic.Field(default=None, max_length=16)
    budget_share: BudgetShare | None = None
    cold_after: ColdAfter | None = None
    wake: pydantic.StrictBool | None = None


class ScheduleTable(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)
    workloads: list[str] = pydantic.Field(default=list(DEFAULT_WORKLOADS), min_length=1)
    min_samples: int = pydantic.Field(default=3, ge=1)
    jitter: float = pydantic.Field(default=0.1, ge=0, lt=1)  # 1 would allow a zero interval
    every: dict[str, Annotated[Cadence, pydantic.PlainValidator(_cadence)]] = {}
    cold_after: ColdAfter = DEFAULT_COLD_AFTER_S
    wake: pydantic.StrictBool = True
    budget_share: BudgetShare = DEFAULT_SHARE  # of each plan's limits, unless its table sets its own
    one_prompt_per_round: pydantic.StrictBool = True


def plan_settings(provider: PlanKeys, plan: PlanKeys, keyed: bool, share: float = DEFAULT_SHARE) -> PlanSettings:
    """A plan's settings: its own keys, else its provider's, else the default for a keyed or local plan
    (``share``: the schedule's budget_share)."""
    billing = plan.billing or provider.billing or PlanSettings.default(keyed).billing
    budget = plan.budget or provider.budget
    limits = plan.limits if plan.limits is not None else provider.limits or []
    share = plan.budget_share or provider.budget_share or share
    cold_after = plan.cold_after if plan.cold_after is not None else provider.cold_after  # "off" is 0.0
    return PlanSettings(
        billing=billing,
        every_s=plan.every or provider.every or BILLING_EVERY_S[billing],
        requests=plan.requests or provider.requests or 1,
        budget=None if budget is None else budget.budget(),
        limits=tuple(limit.budget(limit.per, share) for limit in limits),
        every_given=bool(plan.every or provider.every),
        cold_after_s=cold_after,
        wake=plan.wake if plan.wake is not None else provider.wake,
    )


def schedule_settings(table: ScheduleTable, known: Mapping[str, object]) -> ScheduleSettings:
    """The ``[schedule]`` table checked against the known workloads (ValueError ``key: what is wrong``)."""
    for key, names in (("workloads", table.workloads), ("every", list(table.every))):
        if unknown := [name for name in names if name not in known]:
            raise ValueError(f"schedule.{key}: unknown workload {unknown[0]!r} (known: {', '.join(known)})")
    every = {**DEFAULT_EVERY, **table.every}
    workloads = tuple(dict.fromkeys(table.workloads))
    return ScheduleSettings(
        workloads, table.min_samples, table.jitter, every, table.cold_after, table.wake, table.one_prompt_per_round
    )


SIM_BASE_URL = "simulated://{provider}"  # a simulated endpoint's address until the service starts its simulator
SIM_MODEL = "sim"  # the model a simulated provider serves when its table names none
