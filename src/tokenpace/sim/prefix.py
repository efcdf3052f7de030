"""A simulated prompt cache: how much of a prompt's beginning the server saw recently, in whole blocks of tokens.

Real servers cache a prompt's prefix in blocks (vLLM's and llama.cpp's KV blocks, OpenAI's 128-token steps):
the leading blocks that match a recent prompt's are read from the cache, only the rest is prefilled. A block
is remembered by a hash of every token up to its end, so it matches only after the very same prefix. The
least recently used blocks are forgotten past ``blocks_kept``: a simulator runs for weeks, its memory may not
grow with what it served.
"""

from __future__ import annotations

import array
import hashlib
from collections import OrderedDict
from collections.abc import Sequence

from tokenpace.errors import SimulatorError

BLOCK_TOKENS = 64
BLOCKS_KEPT = 16_384  # about a million tokens of prefixes, 16 bytes of hash each


class PrefixCache:
    """The block hashes of recent prompts, least recently used first."""

    def __init__(self, block_tokens: int = BLOCK_TOKENS, blocks_kept: int = BLOCKS_KEPT) -> None:
        if block_tokens < 1 or blocks_kept < 1:
            raise SimulatorError("prefix cache: block_tokens and blocks_kept must be >= 1")
        self.block_tokens = block_tokens
        self.blocks_kept = blocks_kept
        self._blocks: OrderedDict[bytes, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._blocks)

    def serve(self, tokens: Sequence[int]) -> int:
        """Cached tokens = block_tokens x the prompt's leading blocks seen before; its blocks are then remembered.

        Only blocks that end before the last token count: a server evaluates at least one token of any prompt.
        """
        size, digest = self.block_tokens, hashlib.blake2b(digest_size=16)
        cached, hit = 0, True
        for start in range(0, (len(tokens) - 1) // size * size, size):
            digest.update(array.array("L", tokens[start : start + size]).tobytes())
            key = digest.copy().digest()
            if hit and key in self._blocks:
                cached += size
                self._blocks.move_to_end(key)
            else:
                hit = False
                self._blocks[key] = None
        while len(self._blocks) > self.blocks_kept:
            self._blocks.popitem(last=False)
        return cached
