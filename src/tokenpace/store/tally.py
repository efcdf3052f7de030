"""One endpoint x workload over a window, gathered from rollup rows (whole hours) and raw samples (the edges).

Figures are computed in Python from every value, sorted, by :func:`tokenpace.measure.stats.figure`: the very
``metrics.percentile`` of a run's summary, so a window's percentiles are exact and equal a recompute from the
raw samples whichever database holds them. Values of successful samples count; those of client-bound ones only
when included. The success rate counts every sample by its outcome, cancelled ones left out (``stats``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tokenpace.measure.stats import Figure, figure_sorted
from tokenpace.store.rollup import METRICS, UNKNOWN, decode


def _lists() -> tuple[list[Any], ...]:
    return tuple([] for _ in METRICS)


@dataclass
class Tally:
    """Counts, times and values so far; ``bound_*`` hold the client-bound samples' share apart."""

    samples: int = 0
    ok: int = 0
    one_shot: int = 0
    bound: int = 0  # client-bound samples, whatever their outcome
    bound_ok: int = 0
    first_at: float | None = None
    last_at: float | None = None
    protocol: str = ""
    simulated: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    texts: tuple[list[str], ...] = field(default_factory=_lists)  # rollup values, unparsed
    bound_texts: tuple[list[str], ...] = field(default_factory=_lists)
    values: tuple[list[float], ...] = field(default_factory=_lists)
    bound_values: tuple[list[float], ...] = field(default_factory=_lists)

    def _times(self, first: float, last: float, protocol: str, simulated: int) -> None:
        self.first_at = first if self.first_at is None else min(self.first_at, first)
        self.last_at = last if self.last_at is None else max(self.last_at, last)
        self.protocol, self.simulated = max(self.protocol, protocol), max(self.simulated, int(simulated))

    def hours(self, r: Sequence[Any], bound: bool) -> None:
        """Add a rollup row: samples, ok, one_shot, first_at, last_at, protocol, simulated, failures, metrics."""
        samples, ok, one_shot, first, last, protocol, simulated, failures, *metrics = r
        self.samples += samples
        self.ok += ok
        self.one_shot += one_shot
        if bound:
            self.bound += samples
            self.bound_ok += ok
        self._times(first, last, protocol, simulated)
        if failures:
            self.kinds.update(failures.split())
        for texts, text in zip(self.bound_texts if bound else self.texts, metrics, strict=True):
            if text:
                texts.append(text)

    def sample(self, r: Sequence[Any]) -> None:
        """Add a raw sample: started_at, ok, error_kind, source, client_bound, protocol, simulated, metrics."""
        at, ok, kind, source, bound, protocol, simulated, *metrics = r
        self.samples += 1
        self.one_shot += source == "one-shot"
        self.bound += bool(bound)
        self._times(at, at, protocol, simulated)
        if not ok:
            self.kinds[kind or UNKNOWN] += 1
            return
        self.ok += 1
        self.bound_ok += bool(bound)
        for values, value in zip(self.bound_values if bound else self.values, metrics, strict=True):
            if value is not None:
                values.append(float(value))

    def usable(self, include_bound: bool) -> int:
        """Successful samples whose figures count."""
        return self.ok if include_bound else self.ok - self.bound_ok

    def figures(self, include_bound: bool) -> list[Figure]:
        """Each metric's Figure over the values that count, sorted once (stats.figure_sorted)."""
        found = []
        for i in range(len(self.values)):
            texts = self.texts[i] + self.bound_texts[i] if include_bound else self.texts[i]
            values = decode("".join(texts))
            values += self.values[i] + self.bound_values[i] if include_bound else self.values[i]
            values.sort()
            found.append(figure_sorted(values))
        return found


def tally(found: dict[tuple[str, ...], Tally], key: Sequence[Any]) -> Tally:
    """The Tally of a key, new if none yet."""
    k = tuple(key)
    t = found.get(k)
    if t is None:
        t = found[k] = Tally()
    return t
