"""Summaries of a set of samples: P5 / P50 / P95 / mean per figure, success rate, canary pass rate, errors by
kind and their commonest messages, each with a hint where the message suggests a usual mistake.

A run's summary is kept as its samples come (:class:`SummaryTally`), in memory that does not grow with their
count: each figure's values in a measure/quantiles.py Quantiles (exact while they fit, a sketch within 0.5 %
past that), each burst as its sums (board/bursts.py), at most DISTINCT_MESSAGES distinct messages per error kind.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tokenpace.board.bursts import Bursts, BurstTally, sample_member
from tokenpace.clients import protocol_for
from tokenpace.config.presets import ProtocolName
from tokenpace.measure.catalogue import Metric, metric
from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.quantiles import Quantiles
from tokenpace.measure.sample import Sample
from tokenpace.measure.stats import Figure, figure_of, success_rate, with_n
from tokenpace.prompts import canary

TOP_MESSAGES = 3  # per error kind
MESSAGE_CHARS = 200  # a provider's message is the provider's: long enough to read, never a page of HTML
DISTINCT_MESSAGES = 1_000  # distinct messages counted per error kind; later new ones are not (ids in them, say)

# The figures a run's summary shows, in their order: fields of Metrics, each named by its catalogue row.
SUMMARY_KEYS = (
    "ttft_ms", "output_speed", "e2e_ms", "t100_ms", "thinking_ms", "e2e500_ms", "ttfb_ms", "gap_p95_ms",
    "gap_max_ms", "output_tokens", "token_diff",
)  # fmt: skip
SUMMARY_FIGURES: tuple[Metric, ...] = tuple(map(metric, SUMMARY_KEYS))


def _stat_dict(f: Figure) -> dict[str, Any]:
    # The keys `tokenpace run --json` has always printed (count is Figure.n): a script reading them keeps working;
    # "n" beside them as every export writes a figure (stats.with_n).
    return {"count": f.n} | with_n(f, ("p5", "p50", "p95", "mean"))


def bursts_dict(b: Bursts) -> dict[str, Any]:
    """Burst figures as `run --json` and the web's JSON print them."""
    return {
        "count": b.count,
        "aggregate_output_speed": _stat_dict(b.speed),
        "ttft_spread_ms": _stat_dict(b.ttft_spread),
    }


@dataclass(frozen=True, slots=True)
class ErrorMessage:
    """One error message and how many samples of its kind carried it, with a hint when one applies."""

    message: str
    count: int
    hint: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"message": self.message, "count": self.count, "hint": self.hint}


def hint(kind: str, status: int | None, protocol: ProtocolName = "openai-chat") -> str | None:
    """What a failure of this kind and HTTP status usually means, as a question to check; None if nothing."""
    if status == 404:
        base = protocol_for(protocol).default_base
        where = f"end in {base}?" if base else "the server's root, without /v1?"
        return f"does the base URL {where} is the model name one the server lists?"
    if status in (401, 403):
        return "is the API key variable right, and is the key valid for this endpoint?"
    return {
        ErrorKind.CONNECT_ERROR.value: "is the server running, and are host and port of the base URL right?",
        ErrorKind.CONNECT_TIMEOUT.value: "is the host reachable from here (firewall, VPN)?",
        ErrorKind.RATE_LIMITED.value: "lower --concurrency or --requests, or wait for the quota to refill",
    }.get(kind)


def _message_line(text: str) -> str:
    """The message on one line, without control characters (a server's bytes must not steer a terminal)."""
    clean = "".join(c if c.isprintable() else " " for c in text[: MESSAGE_CHARS + 1])
    return clean if len(clean) <= MESSAGE_CHARS else clean[: MESSAGE_CHARS - 1] + "…"


_MessageKey = tuple[str, int | None, ProtocolName]


def messages(samples: Sequence[Sample]) -> dict[str, list[ErrorMessage]]:
    """Per error kind, its TOP_MESSAGES commonest messages, commonest first (cancelled ones say nothing new)."""
    counts: dict[str, Counter[_MessageKey]] = {}
    for s in samples:
        count_message(counts, s)
    return commonest_messages(counts)


def count_message(counts: dict[str, Counter[_MessageKey]], s: Sample) -> None:
    """Count a failed sample's message under its kind (at most DISTINCT_MESSAGES distinct ones a kind)."""
    if not s.ok and s.error_kind != ErrorKind.CANCELLED:
        key = (_message_line(s.error_message or ""), s.http_status, s.endpoint.protocol)
        kind = counts.setdefault(str(s.error_kind), Counter())
        if key in kind or len(kind) < DISTINCT_MESSAGES:
            kind[key] += 1


def commonest_messages(counts: dict[str, Counter[_MessageKey]]) -> dict[str, list[ErrorMessage]]:
    """Per error kind, its TOP_MESSAGES commonest messages counted, commonest first, each with its hint."""
    return {
        kind: [
            ErrorMessage(text, n, hint(kind, status, proto)) for (text, status, proto), n in c.most_common(TOP_MESSAGES)
        ]
        for kind, c in sorted(counts.items())
    }


@dataclass(frozen=True, slots=True)
class Cold:
    """Samples sent after the endpoint idled past its threshold (load/coldstart.py), apart from the others."""

    count: int  # cold samples, failed ones included
    after_s: float  # the threshold they passed
    ttft_cold: Figure  # TTFT of the successful cold samples
    ttft_warm: Figure  # and of the successful others

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "cold_after_s": self.after_s, "ttft_ms_cold": _stat_dict(self.ttft_cold),
                "ttft_ms_warm": _stat_dict(self.ttft_warm)}  # fmt: skip


def cold(samples: Sequence[Sample], after_s: float) -> Cold | None:
    """TTFT of the cold samples and of the warm ones apart; None when no sample is cold."""
    tally = SummaryTally("")
    for s in samples:
        tally.add(s)
    return tally.cold_figures(after_s)


@dataclass(frozen=True, slots=True)
class Summary:
    endpoint: str
    samples: int
    ok: int
    errors: dict[str, int]
    figures: dict[str, Figure]
    groups: Bursts | None = None
    error_messages: dict[str, list[ErrorMessage]] = field(default_factory=dict)
    truth: dict[str, float] | None = None  # what a simulator was set to, by figure (run --sim)
    cold: Cold | None = None  # when some samples were cold starts
    canary_passed: int = 0  # answers that began with the canary's line (prompts/canary.py) ...
    canary_checked: int = 0  # ... of the answers judged (a canary asked, the request successful)

    @property
    def success_rate(self) -> float | None:
        """stats.success_rate of these samples: cancelled ones say nothing of the endpoint."""
        return success_rate(self.ok, self.samples, self.errors.get(ErrorKind.CANCELLED.value, 0))

    @property
    def canary_pass_rate(self) -> float | None:
        """Canary pass rate = passed / checked; None when no answer was checked."""
        return canary.pass_rate(self.canary_passed, self.canary_checked)

    def as_dict(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "samples": self.samples,
            "ok": self.ok,
            "success_rate": self.success_rate,
            "errors": self.errors,
            "figures": {name: _stat_dict(s) for name, s in self.figures.items()},
            "groups": None if self.groups is None else bursts_dict(self.groups),
            "error_messages": {k: [m.as_dict() for m in ms] for k, ms in self.error_messages.items()},
            "truth": self.truth,
            "cold": None if self.cold is None else self.cold.as_dict(),
            "canary": {"passed": self.canary_passed, "checked": self.canary_checked, "rate": self.canary_pass_rate},
        }


def summarise(
    endpoint: str, samples: Sequence[Sample], truth: dict[str, float] | None = None, cold_after_s: float = 0.0
) -> Summary:
    """Figures over successful samples only; failures count towards the success rate (cancelled ones apart);
    cold samples' TTFT apart as well (``cold_after_s``: the threshold they were tagged by, for the reader)."""
    tally = SummaryTally(endpoint)
    for s in samples:
        tally.add(s)
    return tally.summary(truth, cold_after_s)


class SummaryTally:
    """One endpoint's :func:`summarise` kept as its samples come. ``burst``: the members of a whole burst (the
    parallel workload's concurrency, 2 for a paired one's turns), so that each is folded into its figures once
    whole; None keeps every burst open to the end."""

    def __init__(self, endpoint: str, burst: int | None = None) -> None:
        self.endpoint = endpoint
        self.samples = self.ok = 0
        self.errors: Counter[str] = Counter()
        self.figures = {m.key: Quantiles() for m in SUMMARY_FIGURES}
        self.bursts = BurstTally(burst)
        self.messages: dict[str, Counter[_MessageKey]] = {}
        self.cold = 0
        self.ttft_cold, self.ttft_warm = Quantiles(), Quantiles()
        self.canary_passed = self.canary_checked = 0

    def add(self, s: Sample) -> None:
        self.samples += 1
        self.bursts.add(*sample_member(s))
        self.cold += bool(s.cold)
        if s.canary_ok is not None:
            self.canary_checked += 1
            self.canary_passed += s.canary_ok
        if not s.ok:
            self.errors[str(s.error_kind)] += 1
            count_message(self.messages, s)
            return
        self.ok += 1
        for key, q in self.figures.items():
            if (v := getattr(s.metrics, key)) is not None:
                q.add(v)
        if (ttft := s.metrics.ttft_ms) is not None:
            (self.ttft_cold if s.cold else self.ttft_warm).add(ttft)

    def cold_figures(self, after_s: float) -> Cold | None:
        """:func:`cold` of the samples so far."""
        if not self.cold:
            return None
        return Cold(self.cold, after_s, figure_of(self.ttft_cold), figure_of(self.ttft_warm))

    def summary(self, truth: dict[str, float] | None = None, cold_after_s: float = 0.0) -> Summary:
        """The summary of the samples so far (see :func:`summarise`)."""
        return Summary(
            self.endpoint,
            self.samples,
            self.ok,
            dict(sorted(self.errors.items())),
            {key: figure_of(q) for key, q in self.figures.items()},
            self.bursts.result(),
            commonest_messages(self.messages),
            truth,
            self.cold_figures(cold_after_s),
            self.canary_passed,
            self.canary_checked,
        )
