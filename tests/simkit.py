"""What the simulator's tests share: a scenario that never waits and a way to read its one truth."""

from __future__ import annotations

import dataclasses
from typing import Any

from tokenpace.sim import Scenario, Simulator, Truth

PROMPT = "How fast is this endpoint, really?"
FAST = Scenario(ttft_ms=0, tokens_per_s=5000, output_tokens=20)  # no waiting
MS = 1_000_000


def fast(**changes: Any) -> Scenario:
    """FAST, with some fields changed."""
    return dataclasses.replace(FAST, **changes)


def only(sim: Simulator) -> Truth:
    """The truth of the one request a simulator served."""
    (truth,) = sim.truth.values()
    return truth
