"""Traffic as data: how a run or a load test releases its requests (a closed or open loop, or bursts), what a good
request is, and what a sweep varies.

``tokenpace bench`` reads them from its options; each parser turns one option's text into a frozen value or
raises ConfigError with one line that says what to write instead.

- closed loop (``-c N``): N requests in flight, the next one sent as one ends (vLLM's ``--max-concurrency``);
- open loop (``--rate R``): requests released at R per second whatever the server does, arrivals drawn from a
  Poisson process, a constant interval, or a gamma process whose ``burstiness`` is its shape (1 = Poisson;
  below 1 burstier, above 1 more regular, as vLLM's ``--burstiness``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from tokenpace.config.durations import parse_duration
from tokenpace.config.workloads import MAX_CONCURRENCY
from tokenpace.errors import ConfigError

Arrival = Literal["poisson", "constant", "gamma"]
ARRIVALS: tuple[Arrival, ...] = ("poisson", "constant", "gamma")
MAX_RATE = 10_000.0  # requests/s: far above what one client process can time honestly
MAX_DURATION_S = 7 * 86_400.0
MAX_SWEEP_POINTS = 32


@dataclass(frozen=True, slots=True)
class Load:
    """How a load test releases requests; exactly one of concurrency and rate is set.

    ``requests`` and ``duration_s`` bound the measured requests (either or both; the first reached stops the
    release); ``warmup`` requests go first, are stored, and are left out of every figure. With ``rate``,
    ``concurrency`` is None unless a cap on requests in flight is wanted (``max_concurrency``).
    """

    concurrency: int | None = 1
    rate: float | None = None  # chains (single requests, conversations) started per second
    arrival: Arrival = "poisson"
    burstiness: float = 1.0  # the gamma process's shape; used with arrival == "gamma"
    requests: int | None = 100
    duration_s: float | None = None
    warmup: int = 0
    max_concurrency: int | None = None  # open loop: never more than this many in flight (None: no cap)
    burst: bool = False  # closed loop: ``concurrency`` chains released at once, the next group when all have ended

    @property
    def open_loop(self) -> bool:
        return self.rate is not None

    def describe(self) -> str:
        """One short phrase for tables and reports: ``rate 4/s (poisson)`` or ``concurrency 8``."""
        if self.rate is None:
            return f"bursts of {self.concurrency}" if self.burst else f"concurrency {self.concurrency}"
        shape = f"gamma {self.burstiness:g}" if self.arrival == "gamma" else self.arrival
        return f"rate {self.rate:g}/s ({shape})"


@dataclass(frozen=True, slots=True)
class Slo:
    """A service-level objective per request: a request is good when every figure set here is at or under it."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None  # (E2E - TTFT) / (output tokens - 1)
    itl_ms: float | None = None  # the request's longest gap between chunks
    e2e_ms: float | None = None

    def describe(self) -> str:
        parts = [f"{name}<={v:g}ms" for name, v in self.items()]
        return ",".join(parts) or "none"

    def items(self) -> list[tuple[str, float]]:
        fields = (("ttft", self.ttft_ms), ("tpot", self.tpot_ms), ("itl", self.itl_ms), ("e2e", self.e2e_ms))
        return [(name, v) for name, v in fields if v is not None]


@dataclass(frozen=True, slots=True)
class Sweep:
    """What a sweep varies: ``concurrency`` or ``rate`` over given values, or ``auto`` (find saturation)."""

    over: Literal["concurrency", "rate"]
    values: tuple[float, ...] = ()  # empty with auto
    auto: bool = False


def parse_seconds(text: str, option: str) -> float:
    """``90``, ``90s``, ``1.5m``, ``250ms``, ``2h`` as seconds (> 0, at most a week); a bare number is seconds."""
    try:
        return parse_duration(text, bare="s", longest_s=MAX_DURATION_S)
    except ValueError:
        wanted = "give a time such as 60s, 5m or 250ms (more than 0, at most 7 days)"
        raise ConfigError(f"{option} {text!r}: {wanted}") from None


def parse_slo(text: str) -> Slo:
    """``ttft=500ms,tpot=50ms`` (also itl, e2e; a bare number is ms) as an :class:`Slo`."""
    wrong = (
        f"--slo {text!r}: write it as ttft=500ms,tpot=50ms (each of ttft, tpot, itl, e2e once; above 0, at most 7 days)"
    )
    values: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = (s.strip() for s in part.partition("="))
        if not eq or name not in ("ttft", "tpot", "itl", "e2e") or f"{name}_ms" in values:
            raise ConfigError(wrong)
        try:
            values[f"{name}_ms"] = parse_duration(value, bare="ms", longest_s=MAX_DURATION_S) * 1000
        except ValueError:
            raise ConfigError(wrong) from None
    if not values:
        raise ConfigError(wrong)
    return Slo(**values)


def parse_sweep(text: str) -> Sweep:
    """``concurrency=1,4,16``, ``rate=1,2,4.5`` or ``auto`` (rates doubled, then bisected to a saturation bracket)."""
    if text.strip() == "auto":
        return Sweep("rate", auto=True)
    name, eq, listed = (s.strip() for s in text.partition("="))
    wrong = f"--sweep {text!r}: write concurrency=1,4,16 or rate=1,2,4 (up to {MAX_SWEEP_POINTS} values) or auto"
    if not eq or name not in ("concurrency", "rate"):
        raise ConfigError(wrong)
    try:
        values = tuple(float(v) for v in listed.split(","))
    except ValueError:
        raise ConfigError(wrong) from None
    ceiling = MAX_CONCURRENCY if name == "concurrency" else MAX_RATE
    whole = name != "concurrency" or all(v.is_integer() for v in values)
    if not values or len(values) > MAX_SWEEP_POINTS or not whole:
        raise ConfigError(wrong)
    if not all(math.isfinite(v) and 0 < v <= ceiling for v in values):
        raise ConfigError(f"--sweep {text!r}: every {name} must be more than 0 and at most {ceiling:g}")
    return Sweep(name, tuple(sorted(set(values))))  # type: ignore[arg-type]
