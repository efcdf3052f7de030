"""What no measurement can produce: each stored figure's bounds, and why, in one place.

A region agent's role may insert samples (store/grants.py), so a value in the database is hostile until bounded:
one output speed of 1e300 or Infinity made every page's mean overflow (issue 29). So the database refuses a
figure outside these bounds (migration 14: CHECK constraints on PostgreSQL, triggers on SQLite, and the counting
trigger), the writer stores such a figure as NULL (store/refusals.py: the timeline keeps what was measured), and
every reader that still finds one (a row from before the migration) skips it and logs it, never a 500.

A sample's start is a real clock's time (after 1970, before the year 3000); every time within one request is
bounded by the longest request allowed (``--total-timeout``'s largest); a speed by a thousand times the fastest
single streams served today (~1-3k tok/s). A figure nearer the bound is still stored; one beyond it is not a
measurement. Changing a bound needs a migration that replaces the constraints.
"""

from __future__ import annotations

import math

MAX_REQUEST_S = 86_400.0  # the longest a request may be given (--total-timeout): a day
MAX_MS = MAX_REQUEST_S * 1000.0  # so no time within one request is longer
MAX_OUTPUT_SPEED = 1_000_000.0  # tok/s: a thousand times the fastest streams served (~1-3k tok/s)
MAX_EPOCH_S = 32_503_680_000.0  # 3000-01-01 UTC: a start time is a real clock's, after 1970 and before then
MAX_IDLE_S = 10 * 365 * 86400.0  # an endpoint's idle time before a request: ten years is more than any idles
# Time to 100 tokens = TTFT + 100 / speed: at most the longest request plus 100 tokens at the slowest speed one can
# measure (one token over the longest request).
MAX_T100_MS = MAX_MS + 100 * MAX_MS
# End-to-end for 500 tokens = the first answer token's time (TTFT + thinking, within one request) + 500 tokens at
# that slowest speed.
MAX_E2E500_MS = MAX_MS + 500 * MAX_MS
# No figure of any kind comes near: the last guard of a reader that knows no figure's own bound (stats.py), so
# that a sum or a square over a billion values stays finite.
LARGEST = 1e12

# Each bounded column of ``samples``: (least, greatest), both allowed; NULL (no figure) is always allowed.
BOUNDS: dict[str, tuple[float, float]] = {
    "started_at": (0.0, MAX_EPOCH_S),
    **{
        c: (0.0, MAX_MS)
        for c in ("ttft_ms", "ttfb_ms", "connect_ms", "ttfat_ms", "e2e_ms", "gap_p50_ms", "gap_p95_ms", "gap_max_ms")
    },
    **{c: (0.0, MAX_MS) for c in ("net_connect_ms", "net_tls_ms", "net_rtt_ms")},
    "t100_ms": (0.0, MAX_T100_MS),
    "output_speed": (0.0, MAX_OUTPUT_SPEED),
    "idle_s": (0.0, MAX_IDLE_S),
    # Bounded by later migrations' own CHECKs (15, 16 and 17), no tighter than these: the loop's lateness at a
    # timestamp within one request, and a 429's Retry-After (clients/ratelimits.py caps it at a day).
    "client_lag_ms": (0.0, MAX_MS),
    "retry_after_s": (0.0, MAX_REQUEST_S),
    "copy_ratio": (0.0, 1.0),  # a share (migration 17's CHECK)
}
# Figures computed from those (store/rollup.DERIVED): TTFT less the network round trip may be below zero.
DERIVED_BOUNDS: dict[str, tuple[float, float]] = {"ttft_net_ms": (-MAX_MS, MAX_MS), "e2e500_ms": (0.0, MAX_E2E500_MS)}


def bounds_of(name: str) -> tuple[float, float]:
    """A figure's (least, greatest): its own, else +-LARGEST."""
    return BOUNDS.get(name) or DERIVED_BOUNDS.get(name) or (-LARGEST, LARGEST)


def within(name: str, value: float) -> bool:
    """Whether a figure's value can be a measurement: least <= value <= greatest (NaN never is)."""
    least, greatest = bounds_of(name)
    return least <= value <= greatest


def clean_sorted(name: str, ordered: list[float]) -> tuple[list[float], int]:
    """Ascending values without those outside the figure's bounds, and how many those were; the list itself when
    none is (one sum and two comparisons: NaN or Infinity makes the sum non-finite, and sorted ends bound the rest)."""
    if not ordered:
        return ordered, 0
    least, greatest = bounds_of(name)
    if least <= ordered[0] and ordered[-1] <= greatest and math.isfinite(sum(ordered)):
        return ordered, 0
    kept = sorted(v for v in ordered if least <= v <= greatest)
    return kept, len(ordered) - len(kept)
