"""The figure catalogue: every figure tokenpace reports, spelled once.

A figure's key (its column, JSON field and rollup name), its label, unit, which way is better, whether the
rollups keep its values, and its definition with the formula live in one row of :data:`FIGURES`. Every module
that names a figure for a reader (the run summary, the leaderboard's columns, the charts, change detection,
`bench compare`, the exports, /methodology) reads it here: adding a figure is its formula, one row here, and,
when it is stored, a migration. ``tests/measure/test_catalogue.py`` fails when a module spells a label itself.

Like datasette's settings table: the rows are data, and the page that explains them is written from them.

A figure's percentiles are never written without their n, the number of values they were computed over (the
successful samples that have the figure, not all samples): exports write a figure by measure/stats.py's
``with_n``, text says "n=..." by board/numbers.py's ``count``, and a load test's P99s stand beside MLPerf's
early-stopping estimate (stats.early_stop), which says how far a tail of n values can be trusted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from tokenpace.measure import copying

Unit = Literal["ms", "ms/tok", "tok/s", "tok", "share", "req/s", "count"]
Better = Literal["higher", "lower"]
# How a figure of each unit is written after its number, where a sentence says it ("812 ms", "99.5 %").
UNIT_TEXT: Mapping[Unit, str] = MappingProxyType(
    {
        "ms": "ms",
        "ms/tok": "ms/token",
        "tok/s": "tok/s",
        "tok": "tokens",
        "share": "%",
        "req/s": "req/s",
        "count": "",
    }
)
TOKENIZER = "o200k"  # the one tokenizer every model's tokens are counted with (prompts/tokens.ENCODING)


@dataclass(frozen=True, slots=True)
class Metric:
    """One figure: ``key`` as stored and exported, ``label`` as a reader sees it, ``unit``, which way is
    ``better`` (None: neither, a count or a context figure), ``rollup`` (the windows keep its values, so its
    board percentiles are exact), ``tokens`` (whose token count it is in: o200k, the server's, or none),
    ``definition``: one sentence with its formula, as /methodology prints it, and ``short``, the label where a
    column has no room. A reader takes what it shows from here: :attr:`header` where a header has room, the
    label (or :attr:`narrow`) with the header in a title or a line under the table where it has not,
    :attr:`noun` in a sentence."""

    key: str
    label: str
    unit: Unit
    better: Better | None
    definition: str
    rollup: bool = False
    tokens: Literal["o200k", "server"] | None = None
    qualifier: str = ""  # what the label alone leaves out: "after the first chunk"
    short: str = ""  # the label where a column has no room ("E2E"); the label itself when empty

    @property
    def header(self) -> str:
        """A column header that says the definition: "Output speed (after the first chunk, o200k tok/s)"."""
        return f"{self.label} ({self.detail})" if self.detail else self.label

    @property
    def detail(self) -> str:
        """What the header adds to the label: qualifier and unit ("after the first chunk, o200k tok/s")."""
        return ", ".join(part for part in (self.qualifier, self.unit_header) if part)

    @property
    def unit_header(self) -> str:
        """The unit as a header says it, with whose tokens: "o200k tok/s", "ms per o200k token"; "" for a share
        or a count."""
        if self.tokens and self.unit in ("tok/s", "tok"):
            return f"{self.tokens} {self.unit}"
        if self.unit == "ms/tok":
            return f"ms per {self.tokens} token" if self.tokens else "ms per token"
        return "" if self.unit in ("share", "count") else self.unit

    @property
    def higher_better(self) -> bool:
        return self.better == "higher"

    @property
    def name(self) -> str:
        """The figure's name as its definition gives it, before " = " and any parenthesis: "Success rate"."""
        return re.sub(r" \(.*?\)", "", self.definition.split(" = ", 1)[0])

    @property
    def noun(self) -> str:
        """:attr:`name` inside a sentence: "success rate", "output speed"; an abbreviation as it is ("TTFT")."""
        name = self.name
        return name if name.split(" ", 1)[0].isupper() else name[:1].lower() + name[1:]

    @property
    def narrow(self) -> str:
        """The label where a column has no room: :attr:`short`, or the label when it is short already."""
        return self.short or self.label

    @property
    def unit_text(self) -> str:
        """The unit as a sentence writes it after a number: "ms", "tok/s", "%" (:data:`UNIT_TEXT`)."""
        return UNIT_TEXT[self.unit]


FIGURES: tuple[Metric, ...] = (
    # What one sample gives (measure/metrics.py computes each; the rollups keep those marked).
    Metric(
        "ttft_ms",
        "TTFT",
        "ms",
        "lower",
        "TTFT = time of the first token-bearing chunk - time the request was sent.",
        rollup=True,
    ),
    Metric(
        "ttft_net_ms",
        "TTFT \u2212 RTT",
        "ms",
        "lower",
        "TTFT - RTT = TTFT less one network round trip a probe agent measured just before the run.",
        rollup=True,
    ),
    Metric(
        "output_speed",
        "Output speed",
        "tok/s",
        "higher",
        "Output speed (Artificial Analysis) = (output tokens - first-chunk tokens) / (time of the last chunk - "
        "time of the first chunk), thinking tokens included; not OpenRouter's end-to-end tokens/s.",
        rollup=True,
        tokens="o200k",
        qualifier="after the first chunk",
    ),
    Metric(
        "e2e_ms",
        "End-to-end",
        "ms",
        "lower",
        "End-to-end = time the stream ended (its last byte or its error) - time the request was sent.",
        rollup=True,
        short="E2E",
    ),
    Metric(
        "thinking_ms",
        "Thinking time",
        "ms",
        "lower",
        "Thinking time = time of the first answer token - time of the first token (0 for a model that does not "
        "stream its thinking), measured per request.",
    ),
    Metric(
        "e2e500_ms",
        "End-to-end for 500 tokens",
        "ms",
        "lower",
        "End-to-end for 500 answer tokens (Artificial Analysis) = TTFT + thinking time + 500 / output speed, each "
        "request with its own thinking time (where Artificial Analysis models it from an average over 60 prompts, "
        "tokenpace measures it per request, so the percentiles carry the spread of thinking too).",
        rollup=True,
        tokens="o200k",
    ),
    Metric(
        "t100_ms",
        "Time to 100 tokens",
        "ms",
        "lower",
        "Time to 100 tokens (Artificial Analysis) = TTFT + 100 / output speed.",
        tokens="o200k",
    ),
    Metric("ttfb_ms", "Time to first byte", "ms", "lower", "TTFB = time the response headers arrived - time sent."),
    Metric(
        "gap_p95_ms",
        "Gap p95 (per request)",
        "ms",
        "lower",
        "Gap p95 = the 95th percentile of one request's inter-chunk gaps (time between consecutive chunks); its n "
        "is the request's chunk count - 1, exported beside it.",
    ),
    Metric("gap_max_ms", "Gap max (per request)", "ms", "lower", "Gap max = one request's longest inter-chunk gap."),
    Metric(
        "output_tokens",
        "Output tokens",
        "tok",
        None,
        "Output tokens = the answer's and streamed thinking's text counted with o200k_base.",
        tokens="o200k",
    ),
    Metric(
        "token_diff",
        "o200k \u2212 provider tokens",
        "tok",
        None,
        "Token difference = o200k output tokens - the output tokens the provider's usage reported.",
    ),
    Metric(
        "copy_ratio",
        "Copy ratio",
        "share",
        "lower",
        f"Copy ratio = the answer's {copying.N}-grams of o200k tokens found in the prompt / the answer's "
        f"{copying.N}-grams, over the answer's first {copying.ANSWER_TOKENS_JUDGED:,} tokens (content and tool "
        f"calls, not thinking) and the prompt's first {copying.PROMPT_TOKENS_SEARCHED:,}: what prompt-lookup "
        "drafting could copy.",
        tokens="o200k",
    ),
    # What a window of samples gives (board/rows.py).
    Metric(
        "success_rate",
        "Success",
        "share",
        "higher",
        "Success rate = successful samples / (samples - samples cancelled at shutdown), per window.",
    ),
    Metric(
        "availability",
        "Availability excluding rate limits",
        "share",
        "higher",
        "Availability excluding rate limits = successful samples / (samples - samples cancelled at shutdown - "
        "rate-limited samples), per window.",
    ),
    Metric(
        "canary_pass_rate",
        "Canary",
        "share",
        "higher",
        "Canary pass rate = answers that began with their prompt's own first line / answers judged.",
    ),
    # What a load level of `bench` gives over its measured requests (load/figures.py; board/compare.py judges them).
    Metric(
        "request_rate",
        "Request rate",
        "req/s",
        "higher",
        "Request rate = ok measured requests / the measured window (first measured send to last measured end).",
        short="Rate",
    ),
    Metric(
        "output_tokens_per_s",
        "Output throughput",
        "tok/s",
        "higher",
        "Output throughput = output tokens of the ok measured requests / the measured window, every request "
        "together: not one request's output speed.",
        tokens="o200k",
        qualifier="over the whole run",
        short="Throughput",
    ),
    Metric(
        "output_tokens_per_s_server",
        "Output throughput in server tokens",
        "tok/s",
        "higher",
        "Output throughput in server tokens = the output tokens the server's usage reported for the ok measured "
        "requests / the measured window; only when every one of them reported usage (as vLLM bench serve, SGLang "
        "and AIPerf count them).",
        tokens="server",
        qualifier="over the whole run",
        short="Throughput",
    ),
    Metric(
        "goodput",
        "Goodput",
        "req/s",
        "higher",
        "Goodput = measured requests that met every bound of the SLO / the measured window.",
    ),
    Metric(
        "slo_attainment",
        "SLO attainment",
        "share",
        "higher",
        "SLO attainment = measured requests that met every bound of the SLO / measured requests.",
        short="SLO met",
    ),
    Metric(
        "tpot_ms",
        "TPOT",
        "ms/tok",
        "lower",
        "TPOT = (E2E - TTFT) / (output tokens - 1), per request, its output tokens counted with o200k_base.",
        tokens="o200k",
    ),
    Metric(
        "tpot_server_ms",
        "TPOT in server tokens",
        "ms/tok",
        "lower",
        "TPOT in server tokens = (E2E - TTFT) / (the output tokens the server's usage reported - 1), per request "
        "that reported them; a model that hides its thinking counts those tokens but not their time.",
        tokens="server",
        short="TPOT",
    ),
    Metric(
        "itl_ms",
        "ITL",
        "ms",
        "lower",
        "ITL = the wait between two consecutive chunks of a request, pooled over every ok measured request.",
    ),
    Metric(
        "error_share",
        "Errors",
        "share",
        "lower",
        "Error share = (measured requests - ok measured requests) / measured requests.",
    ),
    Metric(
        "wait_ms",
        "Dispatch delay",
        "ms",
        "lower",
        "Dispatch delay = time the request was sent - its scheduled start: the client's own lateness.",
        short="Dispatch",
    ),
    Metric(
        "ttft_from_schedule_ms",
        "TTFT from schedule",
        "ms",
        "lower",
        "TTFT from schedule = time of the first token - the request's scheduled start = TTFT + dispatch delay.",
    ),
    Metric(
        "e2e_from_schedule_ms",
        "End-to-end from schedule",
        "ms",
        "lower",
        "End-to-end from schedule = time the stream ended - the request's scheduled start = E2E + dispatch delay.",
        short="E2E from schedule",
    ),
    Metric(
        "concurrency_held",
        "Concurrency held",
        "count",
        None,
        "Concurrency held = the measured requests' end-to-end times added up / the measured window: the mean "
        "number of requests in flight.",
        short="In flight",
    ),
    Metric(
        "offered_rate",
        "Offered rate",
        "req/s",
        None,
        "Offered rate = requests an open loop's schedule released / the time it released them over, as asked.",
    ),
)
BY_KEY: Mapping[str, Metric] = MappingProxyType({m.key: m for m in FIGURES})
ROLLUP_KEYS: tuple[str, ...] = tuple(m.key for m in FIGURES if m.rollup)


def metric(key: str) -> Metric:
    """The catalogue's row for ``key``; a KeyError names the key when no row has it."""
    return BY_KEY[key]
