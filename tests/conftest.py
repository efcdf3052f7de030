"""Shared fixtures: offline tokenizer, real servers on free ports."""

from __future__ import annotations

import os
from pathlib import Path

_SHARED_TIKTOKEN = Path(__file__).resolve().parents[1].parent / "shared" / "tiktoken"
if "TIKTOKEN_CACHE_DIR" not in os.environ and _SHARED_TIKTOKEN.is_dir():
    # Tests never download: use the vocabulary shipped beside the checkout.
    os.environ["TIKTOKEN_CACHE_DIR"] = str(_SHARED_TIKTOKEN)
