"""The o200k_base vocabulary ships inside the package: both README commands count tokens with no network.

The shipped file is byte for byte the one tiktoken downloads (its published sha256), the package encodes
exactly as ``tiktoken.get_encoding("o200k_base")`` does, and ``TIKTOKEN_CACHE_DIR`` stays an override.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
import tiktoken
from tiktoken_ext import openai_public

from tests.conftest import SHARED
from tokenpace.errors import TokenizerError
from tokenpace.prompts import tokens

SHIPPED = resources.files("tokenpace.prompts") / "vocab" / "o200k_base.tiktoken"
TEXTS = [
    "",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog. " * 50,
    "日本語のテキストと emoji 🚀🧪, Ελληνικά, русский, العربية",
    "def f(x):\n\treturn x ** 2  # comment\r\n\n\n    indented",
    "<|endoftext|> and <|endofprompt|> as plain text",
    "numbers 1234567890 3.14159 -42 1e999",
    "\x00\x01 control \ufffd bytes",
]
# A child that counts tokens where every download would fail: a proxy that nothing listens on.
OFFLINE = {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": "", "no_proxy": ""}
# Prints the count, then whether tiktoken's own registry built the encoding (the TIKTOKEN_CACHE_DIR path).
COUNT = (
    "import tiktoken.registry\nfrom tokenpace.prompts import tokens\n"
    "print(tokens.count_tokens('Hello, world!'), 'o200k_base' in tiktoken.registry.ENCODINGS)"
)


def _published() -> tuple[str, str]:
    """The URL tiktoken downloads o200k_base.tiktoken from and the sha256 it checks, from its own constructor."""
    found = re.search(r'"(https://\S+/o200k_base\.tiktoken)",\s*expected_hash="([0-9a-f]{64})"',
                      inspect.getsource(openai_public.o200k_base))  # fmt: skip
    assert found, "tiktoken's o200k_base constructor names the file's URL and sha256"
    return found.group(1), found.group(2)


def _child(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    return subprocess.run(
        [sys.executable, "-c", code], env=base | env, capture_output=True, text=True, check=False, timeout=120
    )


def test_the_shipped_file_is_the_one_tiktoken_publishes() -> None:
    data = SHIPPED.read_bytes()
    url, sha256 = _published()
    assert (hashlib.sha256(data).hexdigest(), url) == (sha256, tokens.URL) and sha256 == tokens.SHA256
    cached = SHARED / "tiktoken" / hashlib.sha1(url.encode()).hexdigest()  # noqa: S324 (tiktoken's cache key)
    if cached.is_file():
        assert data == cached.read_bytes()


def _shared_cache() -> Path:
    """tiktoken's own cached copy, kept in ../shared/tiktoken: the reference the package is compared with."""
    folder = SHARED / "tiktoken"
    if not folder.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{folder} is missing: CI must run with ../shared beside the checkout")
        pytest.skip(f"{folder} not found: the comparison with tiktoken's own copy needs ../shared")
    return folder


def test_the_package_encodes_exactly_as_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(_shared_cache()))
    reference = tiktoken.get_encoding("o200k_base")
    shipped = tokens.from_package()
    assert shipped is not reference
    assert shipped.name == reference.name and shipped.n_vocab == reference.n_vocab
    assert shipped._mergeable_ranks == reference._mergeable_ranks
    assert shipped._special_tokens == reference._special_tokens and shipped._pat_str == reference._pat_str
    for text in TEXTS:
        assert shipped.encode(text, disallowed_special=()) == reference.encode(text, disallowed_special=())
        assert shipped.encode(text, allowed_special="all") == reference.encode(text, allowed_special="all")


@pytest.mark.parametrize("cache", ["unset", "empty"])
def test_loads_from_the_package_with_no_network(cache: str, tmp_path: Path) -> None:
    empty = tmp_path / "cache"
    empty.mkdir()
    env = OFFLINE | {"TMPDIR": str(tmp_path)} | ({"TIKTOKEN_CACHE_DIR": str(empty)} if cache == "empty" else {})
    done = _child(COUNT, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["4", "False"]
    assert list(tmp_path.rglob("*")) == [empty], "loading writes no cache anywhere"


def test_a_cache_dir_holding_the_file_overrides_the_package() -> None:
    done = _child(COUNT, OFFLINE | {"TIKTOKEN_CACHE_DIR": str(_shared_cache())})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["4", "True"]


def test_a_corrupt_shipped_file_is_refused_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "o200k_base.tiktoken"
    bad.write_bytes(SHIPPED.read_bytes().replace(b" 0\n", b" 1\n", 1))
    with pytest.raises(TokenizerError) as raised:
        tokens.from_package(bad)
    message = str(raised.value)
    assert "\n" not in message and str(bad) in message and "sha256" in message and "reinstall" in message
