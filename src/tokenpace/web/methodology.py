"""The methodology page, written from the running configuration so it cannot drift from what is measured.

Formulas are the figure catalogue's definitions (measure/catalogue.py), cadences are the scheduler's own jobs,
windows are config/windows.WINDOWS: change the code and this page changes with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tokenpace.board import cost, numbers, routing, sufficiency
from tokenpace.board import rules as board_rules
from tokenpace.board.allowance import allowance_dict, allowances
from tokenpace.board.copying import copy_table
from tokenpace.board.outages import rule_dicts
from tokenpace.board.platforms import platform_dict, platforms
from tokenpace.board.rows import FAILING_BELOW, WRONG_BELOW
from tokenpace.clients.ratelimits import MAX_HEADERS, MAX_RETRY_AFTER_S, MAX_VALUE
from tokenpace.config.endpoints import Config
from tokenpace.config.headers import FRESH_VALUE
from tokenpace.config.presets import PRESETS
from tokenpace.config.prices import STALE_DAYS
from tokenpace.config.settings import DEFAULT_COLD_AFTER_S
from tokenpace.config.windows import DEFAULT_WINDOW, WINDOWS
from tokenpace.config.workloads import AA_OUTPUT_TOKENS
from tokenpace.measure import catalogue, metrics
from tokenpace.measure.catalogue import metric
from tokenpace.prompts.tokens import ENCODING
from tokenpace.schedule import pacing
from tokenpace.schedule.backoff import DEFAULT_HOLD_S
from tokenpace.web.render import Page
from tokenpace.web.site import Site


def _doc(fn: Any) -> str:
    return str(fn.__doc__ or "").strip()


# Every figure by its definition as the catalogue states it (measure/catalogue.py), then how percentiles are taken.
FORMULAS = (*((m.name, m.definition) for m in catalogue.FIGURES), ("Percentiles", _doc(metrics.percentile)))
# Rate limits (issue 30): what a 429 is on the board and what it does to the schedule (schedule/backoff.py).
RATE_LIMITS = (
    "A request the provider refuses with HTTP 429 is a rate-limited sample: it counts against the success rate, "
    "like every failure, but not against the availability excluding rate limits (OpenRouter's definition: the "
    "provider refusing this client its quota is no failure of the endpoint). Both are shown: the availability "
    "beside the success rate wherever a window holds a rate-limited sample, and on every endpoint page, JSON "
    "and CSV. The sample keeps the 429's Retry-After (seconds, or a date, as seconds from its arrival: at most "
    f"{numbers.interval(MAX_RETRY_AFTER_S)}) and its rate-limit headers (x-ratelimit-*, ratelimit-*, "
    f"anthropic-ratelimit-*: at most {MAX_HEADERS}, each value cut to {MAX_VALUE} characters). The schedule "
    "backs off as told: no job of the plan (every model and region of it) starts until that time has passed, "
    f"or {numbers.interval(DEFAULT_HOLD_S)} when the 429 said none; a job due meanwhile is skipped, not "
    "run later, and comes due again at its own next time, so the plan's jobs do not all start when the "
    "back-off ends."
)
NOT_MEASURED = (
    "Where the time goes on the provider's side: queueing in the provider's servers and the network both count "
    "in TTFT; tokenpace sees only when bytes arrive.",
    "Reasoning tokens a provider hides: output speed counts the tokens that arrive (o200k_base), so a model that "
    "thinks without streaming its thoughts looks slow to start rather than fast.",
    "A provider's rate limits beyond what its 429s say, and the quality of the answers beyond the canary's one "
    "line; prices are stated (config, presets), not read from bills.",
    "Tokens as the provider's own tokenizer counts them: every model is counted with o200k_base, so speeds "
    "compare across providers (the provider-reported counts are kept beside them in the raw samples).",
    "Regions where no probe agent runs (without agents: every region but this server's), and cold starts a "
    "provider hides behind a warm pool.",
)
# Network-corrected TTFT (issue 11): what it is and what it leaves in (clients/network.py says the same).
NETWORK = (
    "A probe agent measures the path to each endpoint just before each job: the TCP handshake and the TLS "
    "handshake on a fresh connection, and the round trip (RTT) of the fastest of a few cheap requests (the "
    'protocol\'s model list) on one kept connection. The board then shows "TTFT \u2212 RTT" beside TTFT, '
    "each sample's TTFT less the RTT measured before its job, its percentiles exact like the others'. "
    "It takes off the distance between the agent and the provider, so regions compare on what the provider did; "
    "it cannot take off the provider's queueing or prompt processing (which is what TTFT is for), nor the time "
    "the cheap request itself took on the server. Samples without an agent have no RTT, and no corrected figure."
)

# What a sample was, beyond its timing (issue 22), and what the board does with it: windows.py, rows.py.
TRUTH = (
    (
        "cached",
        "Served from a cache",
        "When the provider reports that part of the prompt came from its prompt cache (a positive count of "
        "cached input tokens), the sample's TTFT is not a fresh prompt's. Such samples are counted and shown "
        "(“N cached” under the sample count) but left out of every figure and of the ranking minimum.",
    ),
    (
        "cold",
        "Cold starts",
        "A request sent after the endpoint sat idle at least its configured time (cold_after, "
        f"{numbers.interval(DEFAULT_COLD_AFTER_S)} unless a provider or plan sets one) is tagged cold: a "
        "scale-to-zero endpoint may have to start before it answers. Cold samples are left out of the figures "
        "and the ranking, which are of a warm endpoint, and their TTFT is reported apart (“N cold · TTFT” "
        "under the sample count, cold_ttft_ms in the JSON and CSV), so sparse cadences do not mix cold and warm. "
        "A scheduled run that finds its endpoint cold first sends one 1k request alone (a wake request, stored "
        "as a cold 1k sample), so its own requests meet a warm endpoint and a plan sampled hourly or every few "
        "hours still has warm figures; the wake counts against the plan's budget.",
    ),
    (
        "sessions",
        "A fresh session per request",
        "A gateway that routes a conversation by a session header keeps its turns on one server and reuses "
        "their prompt cache. Where a preset names such a header ("
        + ", ".join(f"{p.name}'s {name}" for p in PRESETS.values() for name, value in p.headers if value == FRESH_VALUE)
        + "), every request carries a new random value of it: no two samples share a session, so none is sent "
        "where an earlier one left its prompt cache on the gateway's say-so (nor is a prompt-cache workload's "
        "second send: its cached count says what the gateway found anyway).",
    ),
    (
        "canary",
        "The correctness canary",
        "Every fresh prompt asks the answer to begin with a line of its own; the sample stores whether it did, "
        "beside its timings. The board shows each endpoint's pass rate (passed / judged; a failed request is not "
        f"judged), marks one under {WRONG_BELOW:.0%} “fast but wrong” beside its name (as it marks one whose "
        f"success rate is under {FAILING_BELOW:.0%} “failing”), and a model's pass rate pools every provider's "
        "verdicts. Canary verdicts count whatever the sample's cache or cold tag: they are about the answer, "
        "not its speed.",
    ),
)

# Speculative decoding's easy case (issue 31): what the copy ratio is for (measure/copying.py, board/copying.py).
COPYING = (
    "A provider may draft tokens by looking them up in the prompt (prompt-lookup or n-gram speculative "
    "decoding) and check several in one step: an answer that copies its prompt then streams faster than one the "
    "model has to write, so on prompts whose answers copy, output speed favours such providers. Artificial "
    "Analysis tests its prompts against this; here every sample stores its copy ratio beside its timings, and "
    "each endpoint's median per workload is shown below and on its page. The tasks ask for the model's own "
    "words (a summary explains rather than restates, answers to questions do not quote, a translation leaves "
    "code blocks and grammar rules out), so a faithful answer copies little: a high median says the speeds on "
    "that workload are partly the copying's."
)
# One prompt per round (issue 31): why a model's endpoints share their prompts in a round (schedule/rounds.py).
ONE_PROMPT = (
    "In one round of the schedule, every endpoint of a model (its providers' ids joined under one canonical name) "
    "is sent the same documents and task of a workload, as Artificial Analysis runs one prompt, generated at the "
    "time of the test, on all endpoints: a document that is slower to read or a task that draws a longer answer "
    "then weighs on every provider of the model alike, so their figures differ by how they serve, not by what "
    "they were asked. Only the first line differs, each request's own reference number (its nonce), and the "
    "canary line the answer must begin with follows it: no two requests share a cacheable prefix, and two "
    "resellers that share a cache cannot answer one from the other. A round is a window of the clock as long as "
    "the shortest interval among the model's jobs of that workload; every run launched within it shares the "
    "round's prompts, drawn from a seed no one knows ahead (a region's agent is sent the seed with its order). "
    "tokenpace run and tokenpace bench draw prompts per endpoint."
)
ONE_PROMPT_OFF = (
    " This configuration turns it off (one_prompt_per_round = false): each endpoint gets prompts of its own."
)


def _job_rows(site: Site) -> tuple[list[dict[str, Any]], str | None]:
    """The scheduler's jobs (with next due times when it runs), else the ones the config describes."""
    due = {j.job.key: j.next_due for j in site.status().jobs} if site.status is not None else {}
    rows = []
    for job in site.jobs:
        e = job.endpoint
        plan = site.config.plan_of(e)
        rows.append(
            {"endpoint": e.name, "provider": e.provider, "plan": e.plan, "model": e.model, "simulated": e.simulated,
             "workload": job.workload.name, "every_s": job.every_s, "every": numbers.interval(job.every_s),
             "jitter": job.jitter, "requests": job.requests, "billing": plan.billing, "next_due": due.get(job.key)}
        )  # fmt: skip
    return rows, site.jobs_problem


# Why the board opens on board_rules.OPENING_WORKLOAD and not on 10k, Artificial Analysis's default view.
OPENING_WHY = (
    "it runs at each plan's own cadence (10k every 3 h unless configured), so its view holds the most and the "
    "freshest samples. Artificial Analysis opens on 10k; the built-ins ask for its output lengths ("
    + ", ".join(f"{n:,} tokens on {w}" for w, n in AA_OUTPUT_TOKENS.items())
    + "), so the 10k view, one choice away in the workload menu, compares with theirs."
)


def opening(site: Site) -> dict[str, str]:
    """The workload the board opens on (the site's own, as its pages use it) and why."""
    name = site.default_workload
    if name == board_rules.OPENING_WORKLOAD:
        return {"workload": name, "why": OPENING_WHY}
    return {"workload": name, "why": f"the schedule runs no {board_rules.OPENING_WORKLOAD}: it is the first it runs."}


def _faq(site: Site) -> dict[str, Any]:
    """What the FAQ answers from the running config: the plans, why them, how often, and the windows' averages."""
    cfg = site.config
    return {
        "about": cfg.about,
        "platforms": [platform_dict(p) for p in platforms(cfg, site.jobs)],
        "speedup": cfg.speedup,
        "hour_here": numbers.interval(3600 / cfg.speedup) if cfg.speedup != 1 else None,
        "default_window": WINDOWS[DEFAULT_WINDOW].label,
    }


def _rounds(cfg: Config) -> tuple[str, str, str]:
    """The one-prompt-per-round row of the fresh-prompt section, saying whether this configuration has it on."""
    text = ONE_PROMPT + ("" if cfg.schedule.one_prompt_per_round else ONE_PROMPT_OFF)
    return "rounds", "One prompt per round", text


SPEND_DAYS = 7
PACING = {"runs": pacing.runs_in, "worst": pacing.window_worst, "densest": pacing.densest}  # a plan's pace, in order


def methodology_page(site: Site, params: Mapping[str, str]) -> Page:
    cfg = site.config
    now = site.now()
    spend = site.memo.get(("spend", now.date(), SPEND_DAYS), lambda: cost.spend(site.store, cfg, SPEND_DAYS, now))
    prices = {"stale_days": STALE_DAYS, "blended": _doc(cost.blended), "cost": _doc(cost.request_cost),
              "spend_days": SPEND_DAYS, "aliases": sum(len(i.aliases) for i in cfg.models.infos)}  # fmt: skip
    jobs, problem = _job_rows(site)
    allowed = site.memo.get(("allowances",), lambda: allowances(site.store, cfg, site.jobs, now))
    pace = {"floor": numbers.interval(pacing.PACE_FLOOR_S), "step": numbers.interval(pacing.PACE_STEP_S)}
    pace |= {key: _doc(fn).splitlines()[0] for key, fn in PACING.items()}
    workloads = []
    for name in cfg.schedule.workloads:
        w = cfg.workload(name)
        workloads.append(
            {"name": name, "input_tokens": w.input_tokens, "max_tokens": w.max_tokens, "concurrency": w.concurrency,
             "image": list(w.image) if w.image else None, "tasks": list(w.tasks),
             "long_window": name in site.long_workloads}
        )  # fmt: skip
    windows = [
        {"name": w.name, "label": w.label, "seconds": w.seconds, "statistic": w.statistic,
         "long_seconds": w.long_seconds, "span": numbers.interval(w.seconds),
         "long_span": numbers.interval(w.long_seconds) if w.long_seconds else None}
        for w in WINDOWS.values()
    ]  # fmt: skip
    window = WINDOWS[DEFAULT_WINDOW]
    copies = site.memo.get(("copying", window.name), lambda: copy_table(site, window))
    copy_figure = metric("copy_ratio")
    copying = {"label": copy_figure.label, "definition": copy_figure.definition, "why": COPYING}
    data = {
        "source": Path(cfg.source).name,  # the file's name only: where it lies on the server is not the page's
        "tokenizer": ENCODING,
        "formulas": dict(FORMULAS),
        "windows": windows,
        "long_workloads": site.ordered(site.long_workloads),
        "min_samples": site.min_samples,
        # the bound under which a tail is withheld, as the page states it (board/sufficiency.py)
        "tails": {
            "confidence": sufficiency.CONFIDENCE,
            "needs": sufficiency.samples_needed(0.95),
            "rule": _doc(sufficiency.samples_needed),
        },
        "jitter": cfg.schedule.jitter,
        "jobs": jobs,
        "jobs_problem": problem,
        "budgets": [allowance_dict(a) for a in allowed],
        "pacing": pace,
        "workloads": workloads,
        "opening": opening(site),
        "not_measured": list(NOT_MEASURED),
        "network": NETWORK,
        "rate_limits": RATE_LIMITS,
        "incident_rules": rule_dicts(cfg.incidents),  # the rules' own docstrings, thresholds filled in
        "routing": {
            "formula": routing.FORMULA,
            "hours_rule": routing.HOURS_RULE,
            "policies": routing.policy_dicts(site.min_samples),
        },
        "truth": [{"id": key, "title": title, "text": text} for key, title, text in (*TRUTH, _rounds(cfg))],
        "copying": copying | copies.data() | {"window_label": window.label},
        "prices": prices,
        "spend": [cost.plan_day_dict(d) for d in spend],
        "faq": _faq(site),
    }
    return Page("methodology.html", data, data, json_url="/methodology.json")
