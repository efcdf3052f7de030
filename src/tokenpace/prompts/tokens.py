"""Token counting: tiktoken's ``o200k_base`` for every model, so figures compare across providers.

The vocabulary ships inside the package (``vocab/o200k_base.tiktoken``, byte for byte the file tiktoken
downloads, checked against tiktoken's published sha256 when it is loaded), so counting never needs a network.
``TIKTOKEN_CACHE_DIR`` stays an override: where it holds tiktoken's cached copy, tiktoken's own loader is used.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import types
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import tiktoken
from tiktoken_ext import openai_public

from tokenpace.errors import TokenizerError

ENCODING = "o200k_base"
# Where tiktoken downloads o200k_base.tiktoken from, and the sha256 it checks (tiktoken_ext.openai_public).
URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
VOCAB = resources.files("tokenpace.prompts") / "vocab" / "o200k_base.tiktoken"


def _vocab_in_cache() -> bool:
    """Whether ``TIKTOKEN_CACHE_DIR`` holds tiktoken's copy of the file (its cache key: sha1 of the URL)."""
    folder = os.environ.get("TIKTOKEN_CACHE_DIR")
    if not folder:
        return False
    return (Path(folder) / hashlib.sha1(URL.encode()).hexdigest()).is_file()  # noqa: S324 (tiktoken's key)


def _mergeable_ranks(vocab: Traversable) -> dict[bytes, int]:
    """The mergeable ranks in a .tiktoken file (one ``base64(token) rank`` a line), refused unless it hashes right.

    Parsed here rather than by tiktoken's ``load_tiktoken_bpe``, which would copy the file into a cache folder
    (and fail where that folder is read-only).
    """
    try:
        data = vocab.read_bytes()
    except OSError as exc:
        raise TokenizerError(f"cannot read the {ENCODING} vocabulary {vocab}: {exc.strerror or exc}") from None
    if hashlib.sha256(data).hexdigest() != SHA256:
        raise TokenizerError(f"{vocab} does not match tiktoken's published sha256 of {ENCODING}: reinstall tokenpace")
    return {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}


def from_package(vocab: Traversable = VOCAB) -> tiktoken.Encoding:
    """o200k_base built by tiktoken's own constructor (pattern, special tokens), its ranks read from ``vocab``."""

    # The constructor's one download goes through the module-level name load_tiktoken_bpe: run the same code
    # with that name bound to the shipped file, so pattern and special tokens can never drift from tiktoken's.
    def load_tiktoken_bpe(url: str, expected_hash: str) -> dict[bytes, int]:
        return _mergeable_ranks(vocab)

    scope = vars(openai_public) | {"load_tiktoken_bpe": load_tiktoken_bpe}
    constructor = types.FunctionType(openai_public.o200k_base.__code__, scope)
    return tiktoken.Encoding(**constructor())


@functools.cache
def encoding() -> tiktoken.Encoding:
    """The o200k_base encoding, loaded once; TokenizerError, with what to do, where it cannot be."""
    if _vocab_in_cache():
        try:
            return tiktoken.get_encoding(ENCODING)
        except Exception:  # noqa: S110 (a cached copy tiktoken refuses and cannot download: the package's serves)
            pass
    return from_package()


def preload() -> None:
    """Load the vocabulary now, so the first count never happens while streams are being timed."""
    encoding()


def token_ids(text: str) -> list[int]:
    """The o200k_base tokens of ``text`` (special-token text as ordinary text), as :func:`count_tokens` counts them."""
    return encoding().encode(text, disallowed_special=()) if text else []


def count_tokens(text: str) -> int:
    """Number of o200k_base tokens in ``text`` (special-token text counted as ordinary text)."""
    if not text:
        return 0
    return len(encoding().encode(text, disallowed_special=()))


def token_texts(text: str) -> list[str]:
    """The o200k_base tokens of ``text``, each as its own text (whole for ASCII; a multi-byte character split
    across tokens would decode to replacement characters). As count_tokens, special-token text is ordinary:
    tiktoken's check for it costs ~100 ms the first time, too long inside a simulated stream."""
    enc = encoding()
    return [enc.decode([t]) for t in enc.encode(text, disallowed_special=())]
