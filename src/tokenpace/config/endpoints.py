"""Endpoints and the TOML file that declares them.

An *endpoint* is provider + plan + model: the unit a result is about. The same model on two plans of one
provider is two endpoints. A config file looks like::

    corpus = "texts"                      # your own long-form text for prompts (default: built in)
    about = "Open-weight hosts, side by side"  # optional, one line: why these endpoints (/methodology's FAQ)

    [providers.groq]                      # a preset's name: base URL, protocol and key variable come from it
    base_url = "https://api.groq.com/openai/v1"
    api_key_env = "GROQ_API_KEY"          # the *name* of the variable, never the key
    plan = "free"                         # optional label, default "default"
    models = ["llama-3.1-8b-instant"]

    billing = "per-token"                 # uncapped: every 10 min, capped: hourly, per-token: every 4 h (the
                                          # default with a key; local servers, without one, default to uncapped)
    every = "30m"                         # optional: overrides the billing's cadence; units s, m, h, d
    concurrency = 4                       # most requests in flight to this provider at once (default 10)
    requests = 1                          # samples per scheduled run of a sequential workload (default 1)
    budget = { requests = 100, input_tokens = 2_000_000, output_tokens = 50_000 }  # each plan, any 24 h
    limits = [ { dollars = 12, per = "5h" }, { dollars = 30, per = "7d" }, { dollars = 60, per = "30d" } ]
    budget_share = 0.1                    # limits: as the provider states them, in requests, input_tokens,
                                          # output_tokens or dollars (at the price below) per rolling window up
                                          # to 31d; tokenpace spends budget_share of each (default 0.1) and samples
                                          # as often as the worst case fits them all (a given `every` must fit)

    price = { input = 0.05, output = 0.08, cached_input = 0.01, as_of = "2026-11-01", source = "https://..." }
    quantization = { "llama-3.1-8b-instant" = "fp16" }  # optional, per model: as the provider states it
    protocols = { "llama-3.1-8b-instant" = "openai-chat" }  # optional, per model; else protocol, else its preset's

    [providers.groq.prices."llama-3.3-70b-versatile"]   # one model's price ($ per 1M tokens; see prices.py)
    input = 0.59
    output = 0.79
    as_of = 2026-11-01

    [providers.groq.offline]              # read only by `serve --simulate`, which swaps every endpoint for a
    "llama-3.1-8b-instant" = { tokens_per_s = 750, ttft_ms = 200 }   # simulator at its base URL's path, speaking
                                          # its protocol: each model's Scenario fields (a plan's entry wins; a
                                          # model with none gets the simulator's defaults)

    [providers.groq.plans.dev]            # more plans: each inherits the provider's fields, and may set its
    api_key_env = "GROQ_DEV_API_KEY"      # own billing, every, requests, budget, limits (each whole), price,
    models = ["llama-3.1-8b-instant", "llama-3.3-70b-versatile"]   # prices and offline (the most specific wins)

    [models."llama-3.1-8b"]               # one name per model (see models.py): ids joined under one canonical
    aliases = ["llama-3.1-8b-instant", "llama3.1-8b"]   # name, and what is known of it
    context_window = 131072

    [providers.demo]                      # a simulator tokenpace starts, labelled simulated everywhere
    simulate = { ttft_ms = 120, tokens_per_s = 300 }  # any tokenpace.sim.Scenario field; models default ["sim"]

    [workloads.long-summary]              # custom workloads beside the built-in 1k, 10k, 100k, vision, parallel
    input_tokens = 20000
    max_tokens = 800
    tasks = ["summarize"]

    [schedule]                            # what `tokenpace serve` samples, and how often
    workloads = ["1k", "10k", "100k", "vision", "parallel"]   # the default
    min_samples = 3                       # fewer successful samples than this: shown, not ranked
    jitter = 0.1                          # each interval varies by up to +-10%, so samples don't line up
    cold_after = "15m"                    # idle this long before a request: tagged cold ("off": never; the
                                          # default 15m; a provider or plan table may set its own)
    wake = true                           # a scheduled run that finds its endpoint cold first sends one 1k
                                          # request alone (a cold sample; the run's are warm); so may a table
    budget_share = 0.1                    # of each plan's limits, where its table sets none
    one_prompt_per_round = true           # a round sends every endpoint of a model the same documents and task,
                                          # only the nonce line apart (false: a prompt per endpoint)

    [schedule.every]                      # each workload's cadence; an endpoint's is the longer of this and
    "1k" = "plan"                         # its plan's. "plan": the plan's cadence (the default for 1k and for
    "10k" = "3h"                          # declared workloads); defaults 10k and vision 3h, 100k 7d, and
    "parallel" = { every = "1d", jitter = 0.5 }  # parallel daily at a random time of day, as written here

    [[alerts.webhooks]]                   # changes found in the samples are POSTed here (config/alerts.py)
    url_env = "SLACK_WEBHOOK_URL"         # and incidents as they open and close

    [incidents]                           # the incident rules' thresholds (config/incidents.py)
    outage_run = 5                        # critical: the last 5 judged samples all failed

Endpoints are named ``provider/model``, or ``provider:plan/model`` where a model is on several plans.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic

from tokenpace.config.alerts import Alerts, alerts
from tokenpace.config.headers import merged_headers
from tokenpace.config.incidents import Thresholds, thresholds
from tokenpace.config.models import BUILTIN_MODELS, Models
from tokenpace.config.models import models as model_table
from tokenpace.config.plain import first_problem
from tokenpace.config.presets import PRESETS, ProtocolName, preset
from tokenpace.config.presets import PROTOCOLS as PROTOCOLS  # where the rest of tokenpace has always found them
from tokenpace.config.price_tables import pick
from tokenpace.config.prices import Price
from tokenpace.config.protocols import chosen
from tokenpace.config.regions import Region, regions
from tokenpace.config.settings import (
    BILLING_EVERY_S,
    DEFAULT_CONCURRENCY,
    MIN_EVERY_S,
    MIN_SIMULATED_EVERY_S,
    SIM_BASE_URL,
    SIM_MODEL,
    PlanSettings,
    ScheduleSettings,
    plan_settings,
    schedule_settings,
)
from tokenpace.config.tables import FileTable, PlanTable, ProviderTable
from tokenpace.config.tomlfile import read_toml
from tokenpace.config.workloads import BUILTIN, Workload, workload_from_config
from tokenpace.errors import ConfigError


def plan_name(provider: str, plan: str) -> str:
    """``provider``, or ``provider:plan`` for any plan but the default: how plans and endpoints are named."""
    return provider if plan == "default" else f"{provider}:{plan}"


def endpoint_name(provider: str, plan: str, model: str) -> str:
    """``provider/model`` or ``provider:plan/model``: the one naming rule, of a configured endpoint and a stored row."""
    return f"{plan_name(provider, plan)}/{model}"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and how to reach one model; holds the name of the key's variable, never the key."""

    provider: str
    model: str
    base_url: str
    plan: str = "default"
    protocol: ProtocolName = "openai-chat"
    api_key_env: str | None = None
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # may hold credentials
    simulated: bool = False

    @property
    def name(self) -> str:
        return endpoint_name(self.provider, self.plan, self.model)

    def api_key(self) -> str | None:
        """The key from the environment, or None when no variable is configured."""
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ConfigError(f"endpoint {self.name}: environment variable {self.api_key_env} is not set")
        return key


@dataclass(frozen=True)
class Config:
    endpoints: tuple[Endpoint, ...] = ()
    source: str = "<command line>"
    workloads: Mapping[str, Workload] = field(default_factory=dict)
    corpus: Path | None = None
    plans: Mapping[tuple[str, str], PlanSettings] = field(default_factory=dict)  # (provider, plan)
    concurrency: Mapping[str, int] = field(default_factory=dict)  # per provider; default DEFAULT_CONCURRENCY
    simulators: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # provider -> Scenario fields
    schedule: ScheduleSettings = field(default_factory=ScheduleSettings)
    prices: Mapping[tuple[str, str, str], Price] = field(default_factory=dict)  # (provider, plan, model)
    quantization: Mapping[tuple[str, str], str] = field(default_factory=dict)  # (provider, model)
    models: Models = field(default_factory=lambda: Models(BUILTIN_MODELS))
    alerts: Alerts = field(default_factory=Alerts)
    incidents: Thresholds = field(default_factory=Thresholds)  # the incident rules' (config/incidents.py)
    regions: tuple[Region, ...] = ()  # none: serve measures in-process, as it always has
    offline: Mapping[tuple[str, str, str], Mapping[str, Any]] = field(default_factory=dict)  # (provider, plan, model)
    speedup: float = 1.0  # serve --simulate's: every cadence, window and idle time runs this many times faster
    about: str | None = None  # why these endpoints, in the file's words

    def price_of(self, provider: str, plan: str, model: str) -> Price | None:
        """An endpoint's price: the file's (see price_tables.pick), else the preset's of that name for its default model
        (what serve discovered, or samples of a provider the file no longer lists); None where nobody stated one
        and for a simulator, whatever its name."""
        found = self.prices.get((provider, plan, model))
        if found is not None or any(e.provider == provider and e.simulated for e in self.endpoints):
            return found
        pre = PRESETS.get(provider)
        return None if pre is None else pre.price_for(model)

    def plan_of(self, endpoint: Endpoint) -> PlanSettings:
        """The settings of the endpoint's plan; one the file does not declare gets its preset's published billing
        (``ollama-cloud:free``), else the keyed or local default."""
        found = self.plans.get((endpoint.provider, endpoint.plan))
        pre = PRESETS.get(endpoint.provider)
        if found is None and pre is not None and (billing := pre.billing_of(endpoint.plan)) is not None:
            return PlanSettings(billing, BILLING_EVERY_S[billing])
        return found or PlanSettings.default(keyed=endpoint.api_key_env is not None)

    def cold_after_of(self, endpoint: Endpoint) -> float:
        """Idle seconds after which the endpoint's next request is cold: its plan's, else the schedule's (0: never)."""
        own = self.plan_of(endpoint).cold_after_s
        return self.schedule.cold_after_s if own is None else own

    def wake_of(self, endpoint: Endpoint) -> bool:
        """Whether a scheduled run that finds the endpoint cold sends a wake request first: its plan's, else the
        schedule's (no wake where cold_after is off: nothing is cold)."""
        own = self.plan_of(endpoint).wake
        return (self.schedule.wake if own is None else own) and self.cold_after_of(endpoint) > 0

    def concurrency_of(self, provider: str) -> int:
        return self.concurrency.get(provider, DEFAULT_CONCURRENCY)

    def workload(self, name: str) -> Workload:
        """A workload declared in this file, else a built-in one."""
        found = {**BUILTIN, **self.workloads}.get(name)
        if found is None:
            names = ", ".join([*BUILTIN, *self.workloads])
            raise ConfigError(f"unknown workload {name!r} (known: {names}); `tokenpace workloads` lists them")
        return found

    def find(self, ref: str) -> list[Endpoint]:
        """Endpoints named ``provider/model``, ``provider:plan/model``, ``provider`` or ``provider:plan``.

        ``preset/model`` for a provider the file does not declare is measured with the preset's settings.
        """
        head, _, model = ref.partition("/")
        provider, _, plan = head.partition(":")
        found = [
            e
            for e in self.endpoints
            if e.provider == provider and (not plan or e.plan == plan) and (not model or e.model == model)
        ]
        declared = any(e.provider == provider for e in self.endpoints)  # a file's table shadows the preset
        if not found and model and not declared and (pre := PRESETS.get(provider)) is not None:
            protocol, headers = pre.protocol_of(model), pre.headers
            found = [Endpoint(provider, model, pre.base_url, plan or "default", protocol, pre.api_key_env, headers)]
        if not found:
            names = ", ".join([e.name for e in self.endpoints] + [f"{p}/MODEL" for p in PRESETS])
            raise ConfigError(f"{self.source}: no endpoint matches {ref!r} (known: {names})")
        return found


_Found = list[tuple[Endpoint, PlanSettings, Price | None]]  # each endpoint with its plan's settings and its price


def _endpoints(source: str, name: str, p: ProviderTable, share: float) -> _Found:
    """The provider's endpoints as _Found (``share``: the schedule's budget_share, a plan's default)."""
    plans = dict(p.plans)
    if p.models and p.plan in plans:
        raise ConfigError(
            f"{source}: providers.{name}: the {p.plan} plan is declared twice, by 'models' and by "
            f"[providers.{name}.plans.{p.plan}]; keep one"
        )
    if p.models or (p.simulate is not None and not plans):
        plans[p.plan] = PlanTable(models=p.models or [SIM_MODEL])
    for plan_name, plan in plans.items():
        table = f"providers.{name}" + ("" if plan_name == p.plan and p.models else f".plans.{plan_name}")
        seen: set[str] = set()
        for model in plan.models:
            if model in seen:
                raise ConfigError(f'{source}: {table}.models: "{model}" is listed twice')
            seen.add(model)
    if not plans:
        raise ConfigError(f"{source}: providers.{name}: give 'models' or at least one [providers.{name}.plans.NAME]")
    served = {m for plan in plans.values() for m in plan.models}
    named = [(f"providers.{name}.{key}", m, served) for key in ("prices", "quantization", "protocols", "offline")
             for m in getattr(p, key)]  # fmt: skip
    named += [(f"providers.{name}.plans.{n}.{key}", m, set(pl.models)) for n, pl in p.plans.items()
              for key in ("prices", "protocols", "offline") for m in getattr(pl, key)]  # fmt: skip
    for key, model, models in named:  # a price or label for a model not measured here is a typo
        if model not in models:
            raise ConfigError(f'{source}: {key}: "{model}" is not one of the models listed here ({", ".join(models)})')
    base: str | None
    if p.simulate is not None:  # a simulator needs no address or key: the service starts it
        tables: list[ProviderTable | PlanTable] = [p, *plans.values()]
        if p.preset or any(t.base_url or t.api_key_env for t in tables):
            raise ConfigError(
                f"{source}: providers.{name}: a simulated provider takes no base_url, api_key_env or preset"
            )
        pre, base = None, SIM_BASE_URL.format(provider=name)
    else:
        try:
            pre = preset(p.preset) if p.preset else PRESETS.get(name)
        except ConfigError as exc:
            raise ConfigError(f"{source}: providers.{name}.preset: {exc}") from None
        base = str(p.base_url) if p.base_url else (pre.base_url if pre else None)
        if base is None and not all(plan.base_url for plan in plans.values()):
            raise ConfigError(f"{source}: providers.{name}: give base_url, or preset = one of {', '.join(PRESETS)}")
    out = []
    for plan_name, plan in plans.items():
        key_env = plan.api_key_env or p.api_key_env or (pre.api_key_env if pre else None)
        published = pre.billing_of(plan_name) if pre and not (p.billing or plan.billing) else None  # a preset's plan
        billed = plan.model_copy(update={"billing": published}) if published else plan
        settings = plan_settings(p, billed, keyed=key_env is not None, share=share)
        floor = MIN_SIMULATED_EVERY_S if p.simulate is not None else MIN_EVERY_S
        if settings.every_s < floor:
            table = f"providers.{name}" + (f".plans.{plan_name}" if plan.every else "")
            raise ConfigError(
                f"{source}: {table}.every: {settings.every_s:g} s is more often than the minimum of {floor:g} s "
                f"between runs of a{' simulated' if p.simulate is not None else 'n'} endpoint"
            )
        for model in plan.models:
            fallback = pre.protocol_of(model) if pre else "openai-chat"
            endpoint = Endpoint(
                provider=name,
                plan=plan_name,
                model=model,
                base_url=str(plan.base_url or base).rstrip("/"),
                protocol=chosen(model, (plan.protocols, plan.protocol), (p.protocols, p.protocol), fallback),
                api_key_env=key_env,
                headers=merged_headers(pre.headers if pre else (), p.headers, plan.headers),
                simulated=p.simulate is not None,
            )
            preset_price = None if pre is None else pre.price_for(model)
            price = pick(model, plan.price, plan.prices, p.price, p.prices, preset_price)
            if price is None and any(b.dollars is not None for b in settings.budgets):
                raise ConfigError(
                    f"{source}: providers.{name}: a budget or limit in dollars needs a price of model {model}: "
                    'give price = { input = ..., output = ..., as_of = "YYYY-MM-DD" } ($ per 1M tokens)'
                )
            out.append((endpoint, settings, price))
    return out


def read_config(path: str | Path) -> Config:
    """Read and validate a config file; any mistake becomes one ConfigError line naming file and key."""
    path = Path(path)
    raw = read_toml(path)
    try:
        parsed = FileTable.model_validate(raw)
    except pydantic.ValidationError as exc:
        raise ConfigError(f"{path}: {first_problem(exc, FileTable)}") from None
    found = [
        three
        for name, p in parsed.providers.items()
        for three in _endpoints(str(path), name, p, parsed.schedule.budget_share)
    ]
    try:
        workloads = {name: workload_from_config(name, table) for name, table in parsed.workloads.items()}
        schedule = schedule_settings(parsed.schedule, {**BUILTIN, **workloads})
        table = model_table(parsed.models)
    except (ConfigError, ValueError) as exc:  # each message starts with the key it is about
        raise ConfigError(f"{path}: {exc}") from None
    simulators = {name: p.simulate for name, p in parsed.providers.items() if p.simulate is not None}
    return Config(
        endpoints=tuple(e for e, _, _ in found),
        source=str(path),
        workloads=workloads,
        corpus=None if parsed.corpus is None else path.parent / parsed.corpus,
        plans={(e.provider, e.plan): settings for e, settings, _ in found},
        concurrency={name: p.concurrency for name, p in parsed.providers.items()},
        simulators=simulators,
        schedule=schedule,
        prices={(e.provider, e.plan, e.model): price for e, _, price in found if price is not None},
        quantization={(name, m): q for name, p in parsed.providers.items() for m, q in p.quantization.items()},
        models=table,
        alerts=alerts(parsed.alerts),
        incidents=thresholds(parsed.incidents),
        regions=regions(parsed.regions),
        offline={(e.provider, e.plan, e.model): t for e, t in _offline(parsed.providers, found) if t is not None},
        about=parsed.about,
    )


def _offline(providers: Mapping[str, ProviderTable], found: _Found) -> list[tuple[Endpoint, dict[str, Any] | None]]:
    """Each endpoint's ``offline`` table: its plan's entry for the model, else its provider's; None where neither."""
    out = []
    for e, _, _ in found:
        p = providers[e.provider]
        plan = p.plans.get(e.plan)
        out.append((e, (plan.offline if plan else {}).get(e.model, p.offline.get(e.model))))
    return out
