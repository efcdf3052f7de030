"""The simulator's prefix cache: whole blocks of a recently seen prefix match, and its memory is bounded."""

from __future__ import annotations

import pytest

from tokenpace.errors import SimulatorError
from tokenpace.sim.prefix import PrefixCache


def test_only_the_leading_whole_blocks_seen_before_are_cached() -> None:
    cache = PrefixCache(block_tokens=4)
    assert cache.serve(list(range(10))) == 0  # cold: two blocks remembered
    assert cache.serve(list(range(10))) == 8  # the same prompt: both whole blocks
    assert cache.serve([*range(6), 99, 98, 97, 96]) == 4  # differs inside the second block
    assert cache.serve([99, *range(1, 12)]) == 0  # differs at the start: nothing after it matches
    assert cache.serve(list(range(8))) == 4  # at least the last token is evaluated: its block is not cached


def test_memory_is_bounded_and_the_least_recently_used_blocks_go_first() -> None:
    cache = PrefixCache(block_tokens=2, blocks_kept=6)
    a, b = [1, 2, 3, 4, 5], [7, 8, 9, 10, 11]
    cache.serve(a)
    cache.serve(b)
    assert len(cache) == 4
    assert cache.serve(a) == 4  # a used again: b is now the oldest
    cache.serve([20, 21, 22, 23, 24])
    assert len(cache) == 6
    cache.serve([30, 31, 32])
    assert len(cache) == 6  # never past blocks_kept
    assert cache.serve(b) == 0 and cache.serve(a) == 4  # b forgotten first, a kept
    for n in range(1000):  # a long-running simulator: memory stays put
        cache.serve([n, n, n, n, n])
    assert len(cache) == 6


def test_limits_are_checked() -> None:
    with pytest.raises(SimulatorError, match="must be >= 1"):
        PrefixCache(block_tokens=0)
