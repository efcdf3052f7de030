"""Token counting: tiktoken's ``o200k_base`` for every model, so figures compare across providers.

The vocabulary is fetched once by tiktoken and cached; point ``TIKTOKEN_CACHE_DIR`` at a folder holding it to
work offline.
"""

from __future__ import annotations

import functools

import tiktoken

ENCODING = "o200k_base"


@functools.cache
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """Number of o200k_base tokens in ``text`` (special-token text counted as ordinary text)."""
    if not text:
        return 0
    return len(_encoding().encode(text, disallowed_special=()))
