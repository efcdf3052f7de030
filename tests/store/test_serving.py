"""One `tokenpace serve` per store (issue 29): a second is refused in one line naming the store and the first."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import pytest

from tests.serve.test_service import NO_KEYS
from tokenpace.errors import ConfigError
from tokenpace.store.database import open_store
from tokenpace.store.serving import ServingLock


def test_a_second_holder_is_refused_until_the_first_lets_go(url: str) -> None:
    with open_store(url) as store, open_store(url) as again:
        first = ServingLock(store, url, "pid 1 on here, http://127.0.0.1:8000")
        try:
            with pytest.raises(ConfigError) as refused:
                ServingLock(again, url, "pid 2 on there")
            said = str(refused.value)
            assert said.startswith(f"{store.url} is already served by another `tokenpace serve`")
            assert "pid 1 on here" in said and "stop it, or give another --db" in said
        finally:
            first.close()
        ServingLock(again, url, "pid 2 on there").close()  # free once the first has let go


def test_another_schema_or_file_is_another_store(tmp_path: Path, pg_url: str) -> None:
    other = str(tmp_path / "other.db")
    with open_store(pg_url) as pg, open_store(other) as sqlite:
        held = ServingLock(pg, pg_url, "first")
        try:
            ServingLock(sqlite, other, "second").close()
        finally:
            held.close()


def test_the_holders_words_are_bounded_and_shown_not_obeyed(tmp_path: Path) -> None:
    url = str(tmp_path / "t.db")
    (tmp_path / "t.db.serve.lock").write_text("")
    with open_store(url) as store:
        first = ServingLock(store, url, "\x1b[2J" + "x" * 10_000)
        try:
            with pytest.raises(ConfigError) as refused:
                ServingLock(store, url, "second")
        finally:
            first.close()
    assert len(str(refused.value)) < 400


def test_a_second_serve_on_the_same_store_is_refused_in_one_line(tmp_path: Path) -> None:
    """Both ran the whole schedule: every provider measured twice as often as its plan says."""
    config = tmp_path / "sim.toml"
    config.write_text('[providers.demo]\nsimulate = { ttft_ms = 5 }\n[schedule]\nworkloads = ["1k"]\n')
    db, log = tmp_path / "s.db", tmp_path / "first.log"

    def serve(out: IO[str] | int) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "tokenpace", "serve", "--config", str(config), "--port", "0",
                   "--db", str(db), "--grace", "0"]  # fmt: skip
        return subprocess.Popen(command, stdout=out, stderr=out, env=NO_KEYS)

    with log.open("w") as out:
        first = serve(out)
    try:
        deadline = time.monotonic() + 120
        while not (found := re.search(r"serving on (http://\S+)\n", log.read_text())):
            assert first.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        second = serve(subprocess.PIPE)
        try:
            _, errors = second.communicate(timeout=60)
        finally:
            if second.poll() is None:  # it started: the bug
                second.kill()
                second.wait()
        assert second.returncode == 2, errors
        (line,) = errors.decode().strip().splitlines()
        assert f"sqlite://{db}" in line and f"pid {first.pid}" in line and found[1] in line, line
        assert first.poll() is None
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(30)
