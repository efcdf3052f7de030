"""The leaderboard in a real browser: Debian's Chromium, driven by Playwright, against `tokenpace serve`.

The server is the real command in its own process, sampling simulated endpoints of three speeds on a
seconds-long cadence. Playwright never downloads a browser: it drives /usr/bin/chromium, which CI installs.
A screenshot of each page is kept under tests/artifacts/ (gitignored) for a person to look at.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import free_port

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).parent / "artifacts"
ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip
CONFIG = """
[providers.quick]
simulate = { ttft_ms = 15, tokens_per_s = 900, output_tokens = 24 }
every = "2s"

[providers.middling]
simulate = { ttft_ms = 60, tokens_per_s = 400, output_tokens = 24 }
every = "2s"

[providers.sluggish]
simulate = { ttft_ms = 150, tokens_per_s = 150, output_tokens = 24 }
every = "2s"

[workloads.short]
input_tokens = 300
max_tokens = 24

[schedule]
workloads = ["short"]
min_samples = 2
jitter = 0
"""


def _chromium() -> None:
    if CHROMIUM.exists():
        return
    why = f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)"
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def _get_json(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=5) as r:
        doc: dict[str, object] = json.load(r)
        return doc


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """`tokenpace serve` on a free port, returned once every endpoint has enough samples to be ranked."""
    _chromium()  # before starting anything: a skip should cost nothing
    config = tmp_path / "browser.toml"
    config.write_text(CONFIG)
    port = free_port()
    command = [sys.executable, "-m", "tokenpace", "serve", "--config", str(config), "--port", str(port)]
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen([*command, "--db", str(tmp_path / "serve.db"), "--grace", "1"], stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"tokenpace serve exited: {(tmp_path / 'serve.log').read_text()[-3000:]}")
            try:
                board = _get_json(f"{url}/leaderboard.json?workload=short")
                ranked = [e for e in board["entries"] if e["rank"] is not None]  # type: ignore[attr-defined]
                if len(ranked) == 3:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"no ranked leaderboard within 90 s: {(tmp_path / 'serve.log').read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_sort_by_ttft_then_open_an_endpoint_chart(served: str) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{served}/?workload=short")
            assert page.locator("#leaderboard tbody tr").count() == 3
            page.click('th[data-sort="ttft"] a')
            page.wait_for_url("**sort=ttft**")
            assert page.get_attribute('th[data-sort="ttft"]', "aria-sort") == "ascending"
            ttft = [float(v) for v in page.locator('#leaderboard td[data-col="ttft"]').evaluate_all(
                "cells => cells.map(c => c.dataset.value)")]  # fmt: skip
            assert len(ttft) == 3 and ttft == sorted(ttft)
            names = page.locator("#leaderboard tbody tr").evaluate_all("rows => rows.map(r => r.dataset.endpoint)")
            assert names == ["quick/sim", "middling/sim", "sluggish/sim"]  # 15, 60, 150 ms
            page.screenshot(path=str(ARTIFACTS / "leaderboard.png"), full_page=True)

            page.click('#leaderboard tbody tr:first-child td a[href^="/endpoint/"]')
            page.wait_for_url("**/endpoint/quick/default/sim**")
            page.wait_for_selector("#chart-speed svg.main-svg", timeout=20_000)
            assert page.locator("#chart-ttft svg.main-svg").count() > 0
            assert page.locator(".chart .fallback").count() == 0  # JavaScript replaced the no-JS notes
            page.screenshot(path=str(ARTIFACTS / "endpoint.png"), full_page=True)
        finally:
            browser.close()
