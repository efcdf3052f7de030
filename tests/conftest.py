"""Shared fixtures: an offline tokenizer and real servers on free ports, stopped afterwards."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"

if "TIKTOKEN_CACHE_DIR" not in os.environ and (SHARED / "tiktoken").is_dir():
    # Tests never download: use the vocabulary shipped beside the checkout.
    os.environ["TIKTOKEN_CACHE_DIR"] = str(SHARED / "tiktoken")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def llama_server() -> Iterator[str]:
    """llama.cpp's real llama-server with a tiny random-weights model; yields its /v1 base URL.

    Built once by ../shared/llama-server (about 10 minutes on a new machine, then cached).
    """
    scripts = SHARED / "llama-server"
    if not scripts.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{scripts} is missing: CI must run with ../shared beside the checkout")
        pytest.skip(f"{scripts} not found: the llama.cpp tests need ../shared beside the checkout")
    build = subprocess.run(
        ["bash", str(scripts / "setup_llama_server.sh")], capture_output=True, text=True, check=False
    )
    if build.returncode != 0:
        pytest.fail(f"building llama-server failed:\n{build.stderr[-3000:]}")
    folder = build.stdout.strip().splitlines()[-1]
    port = free_port()
    start = subprocess.run(
        ["bash", str(scripts / "start_server.sh"), folder, str(port)],
        capture_output=True,
        text=True,
        check=False,
    )
    if start.returncode != 0:
        pytest.fail(f"starting llama-server failed:\n{start.stderr[-3000:]}")
    pid = int(start.stdout.strip())
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        os.kill(pid, signal.SIGTERM)
