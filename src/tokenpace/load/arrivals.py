"""When an open-loop load test releases its requests: intervals between arrivals, drawn ahead from a seed.

An open loop releases requests on a schedule that ignores how the server is doing, so a slow server meets
the same offered load as a fast one (a closed loop would slow down with it and hide the queueing). Three
processes, as vLLM's ``bench serve`` offers them, all with mean interval 1 / rate:

- ``poisson``: exponential intervals (arrivals independent of each other);
- ``constant``: every interval exactly 1 / rate;
- ``gamma``: gamma intervals of shape k = burstiness and scale 1 / (rate * k); k = 1 is Poisson, k < 1 burstier,
  k > 1 more regular (the coefficient of variation is 1 / sqrt(k)).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

from tokenpace.config.traffic import Arrival


def intervals(rate: float, arrival: Arrival = "poisson", burstiness: float = 1.0, seed: int = 0) -> Iterator[float]:
    """Seconds between consecutive arrivals, endless; the first arrival is at 0, so the first value is 0."""
    if rate <= 0 or burstiness <= 0:
        raise ValueError("rate and burstiness must be more than 0")
    rng = random.Random(f"arrivals/{seed}")
    yield 0.0
    if arrival == "constant":
        yield from itertools.repeat(1 / rate)
    elif arrival == "poisson":
        while True:
            yield rng.expovariate(rate)
    else:
        while True:
            yield rng.gammavariate(burstiness, 1 / (rate * burstiness))


def offsets(
    rate: float, arrival: Arrival = "poisson", burstiness: float = 1.0, seed: int = 0, *, duration_s: float
) -> list[float]:
    """Arrival times (s from the start) before ``duration_s``: the running sums of :func:`intervals`."""
    out: list[float] = []
    t = 0.0
    for gap in intervals(rate, arrival, burstiness, seed):
        t += gap
        if round(t, 9) >= duration_s:  # to the nanosecond: ten steps of 0.1 s end at 1 s, not just before it
            return out
        out.append(t)
    return out  # pragma: no cover - intervals() never ends
