"""`tokenpace serve` says where it listens, and refuses what it cannot serve in one line (issue 9 items 15, 16)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.serve.test_service import NO_KEYS, _refused

REGIONS = '[providers.demo]\nsimulate = { ttft_ms = 5 }\n[schedule]\nworkloads = ["1k"]\n[regions.eu]\n[regions.us]\n'
SIM = '[providers.demo]\nsimulate = { ttft_ms = 5 }\n[schedule]\nworkloads = ["1k"]\n'


def test_a_config_without_endpoints_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.toml"
    empty.write_text("# nothing yet\n")
    message = _refused("--config", str(empty), "--port", str(free_port()), "--db", str(tmp_path / "x.db"))
    assert f"{empty} declares no endpoints" in message


@pytest.mark.parametrize("host", ["203.0.113.7", "no-such-host.invalid"])
def test_a_host_it_cannot_listen_on_is_named(tmp_path: Path, host: str) -> None:
    config = tmp_path / "sim.toml"
    config.write_text(SIM)
    message = _refused(
        "--config", str(config), "--host", host, "--port", str(free_port()), "--db", str(tmp_path / "x.db")
    )
    assert f"cannot listen on {host}" in message and "--host" in message and "--port" not in message


@pytest.mark.parametrize(
    ("host", "shown", "config"),
    [("localhost", "127.0.0.1", True), ("::1", "[::1]", True), ("0.0.0.0", "0.0.0.0", False)],  # noqa: S104
)
def test_the_first_line_is_the_address_bound(tmp_path: Path, host: str, shown: str, config: bool) -> None:
    """The README's promise: the first line printed is where the board is, before discovery's notes and warnings
    (without a config, discovery's notes came first; on 0.0.0.0 the public warning follows the address)."""
    sim = tmp_path / "sim.toml"
    sim.write_text(SIM)
    log = tmp_path / "serve.log"
    command = [sys.executable, "-m", "tokenpace", "serve", *(["--config", str(sim)] if config else []),
               "--host", host, "--port", "0", "--db", str(tmp_path / "x.db"), "--grace", "0"]  # fmt: skip
    with log.open("w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=out, env=NO_KEYS)
    try:
        found = None
        for _ in range(600):
            found = re.search(r"tokenpace serving on (http://\S+:(\d+))\n", log.read_text())
            if found or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert found, log.read_text()
        assert log.read_text().startswith(found[0]), log.read_text()
        assert found[1] == f"http://{shown}:{found[2]}" and int(found[2]) > 0
        port = int(found[2])
        with urllib.request.urlopen(f"http://{'[::1]' if ':' in host else '127.0.0.1'}:{port}/health", timeout=10) as a:
            assert a.status in (200, 503)
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_webhook_variable_that_is_not_set_is_named_before_anything_starts(tmp_path: Path) -> None:
    config = tmp_path / "sim.toml"
    config.write_text(SIM + '[[alerts.webhooks]]\nurl_env = "TOKENPACE_TEST_UNSET_HOOK"\n')
    message = _refused("--config", str(config), "--port", str(free_port()), "--db", str(tmp_path / "x.db"))
    assert "alerts.webhooks: environment variable TOKENPACE_TEST_UNSET_HOOK is not set" in message


def test_serve_with_regions_needs_postgresql(tmp_path: Path) -> None:
    config = tmp_path / "r.toml"
    config.write_text(REGIONS)
    message = _refused("--config", str(config), "--port", str(free_port()), "--db", str(tmp_path / "x.db"))
    assert "regions need a PostgreSQL store: give --db postgresql://" in message
