"""Token counting: tiktoken's ``o200k_base`` for every model, so figures compare across providers.

The vocabulary is fetched once by tiktoken and cached; point ``TIKTOKEN_CACHE_DIR`` at a folder holding it to
work offline.
"""

from __future__ import annotations

import functools

import tiktoken

from tokenpace.errors import TokenizerError

ENCODING = "o200k_base"


@functools.cache
def encoding() -> tiktoken.Encoding:
    """The o200k_base encoding, loaded once; TokenizerError, with what to do, where it cannot be."""
    try:
        return tiktoken.get_encoding(ENCODING)
    except Exception as exc:  # tiktoken raises whatever its download or file read raised
        raise TokenizerError(
            f"cannot load the {ENCODING} vocabulary ({type(exc).__name__}); connect to the internet once "
            "or set TIKTOKEN_CACHE_DIR to a folder that holds it"
        ) from None


def preload() -> None:
    """Load the vocabulary now, so the first count never happens while streams are being timed."""
    encoding()


def count_tokens(text: str) -> int:
    """Number of o200k_base tokens in ``text`` (special-token text counted as ordinary text)."""
    if not text:
        return 0
    return len(encoding().encode(text, disallowed_special=()))
