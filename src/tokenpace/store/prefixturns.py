"""The turns of repeated-prefix samples (a paired workload's, such as cached-10k), read from the raw samples.

Rollups hold no prefix turn, and a warm turn is no fresh-prompt sample, so the warm-vs-cold report reads the
samples themselves: one row per successful turn, its TTFT and the cached-token count the provider reported.
"""

from __future__ import annotations

from dataclasses import dataclass

from tokenpace.measure.verdict import Bound
from tokenpace.store.database import Store

MAX_TURNS = 100_000  # rows one report reads at most, the latest first: a page's work stays bounded


@dataclass(frozen=True, slots=True)
class Turn:
    """One send of a repeated prefix: whose, which send (1 cold, 2 warm), its TTFT and what the provider cached."""

    provider: str
    plan: str
    model: str
    workload: str
    turn: int
    ttft_ms: float
    cached_tokens: int | None
    simulated: bool = False


def turns(store: Store, since: float, *, published: bool = True) -> list[Turn]:
    """Successful turns started at or after ``since`` (epoch s), the published ones (the board's) by default;
    those whose TTFT is flagged client-bound are left out, as the board leaves it out of every figure."""
    rows = store.query(
        "SELECT provider, plan, model, workload, prefix_turn, ttft_ms, provider_cached_tokens, simulated"
        " FROM samples WHERE prefix_turn IS NOT NULL AND started_at >= ? AND error_kind IS NULL"
        " AND ttft_ms IS NOT NULL AND (client_bound & ?) = 0 AND (published = 1 OR ? = 0)"
        " ORDER BY started_at DESC LIMIT ?",
        (since, int(Bound.TTFT), int(published), MAX_TURNS),
    )  # fmt: skip
    return [
        Turn(str(p), str(plan), str(m), str(w), int(t), float(ttft), None if c is None else int(c), bool(sim))
        for p, plan, m, w, t, ttft, c, sim in rows
    ]
