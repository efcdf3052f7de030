"""Ctrl-C typed in a real terminal, and SIGTERM to the whole process group, stop every long-running command
with one line and exit 130 or 143, and no child process speaks (issue 29, item 4).

The terminal is a pty whose controlling process is the command's session leader: the test types the
interrupt character (``\\x03``) and the kernel sends SIGINT to the foreground process group, children
included, exactly as a terminal does. serve runs both as `python -m tokenpace` and as the README's `uv run
tokenpace serve`: uv sits in between with rules of its own (0.13: with a terminal on stdin it leaves SIGINT to
the process group; SIGTERM it passes on, so the group's SIGTERM reaches tokenpace twice). `--no-sync
--offline`: the test runs in the environment it was given and never changes it.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.conftest import ctrl_c_reaches_child
from tests.serve.test_service import NO_KEYS
from tokenpace.serve import discover

ROOT = Path(__file__).resolve().parents[2]
UV = os.environ.get("UV") or shutil.which("uv")
# What a run prints when it ends, beside the stop's own line: results, not the stop.
RESULT = re.compile(r"^(\d\d:\d\d:\d\d )?\S.*: \d+ samples, \d+ ok")
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # rich's styles and cursor moves


def tokenpace(*args: str, via_uv: bool = False) -> list[str]:
    if via_uv:
        assert UV is not None
        return [UV, "run", "--frozen", "--offline", "--no-sync", "tokenpace", *args]
    return [sys.executable, "-m", "tokenpace", *args]


def _controlling_terminal() -> None:
    """``preexec_fn``, after setsid: the pty on stdin becomes this session's controlling terminal."""
    ctrl_c_reaches_child()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """A command in a terminal of its own: the session leader, the pty its controlling terminal."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self._fd, follower = os.openpty()
        env = {**NO_KEYS, "COLUMNS": "200", "TERM": "xterm", "NO_COLOR": "1"}
        self.proc = subprocess.Popen(
            args, stdin=follower, stdout=follower, stderr=follower, cwd=cwd, env=env, start_new_session=True,
            preexec_fn=_controlling_terminal,
        )  # fmt: skip
        os.close(follower)
        self.seen = b""

    def _read(self, timeout_s: float) -> bool:
        """Read what is there within ``timeout_s``; False once the terminal has nothing more to give."""
        if not select.select([self._fd], [], [], timeout_s)[0]:
            return True
        try:
            data = os.read(self._fd, 65536)
        except OSError:  # EIO: every process holding the terminal has ended
            return False
        self.seen += data
        return bool(data)

    def wait_for(self, text: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while text.encode() not in self.seen:
            assert time.monotonic() < deadline and self._read(0.2), self.text()
            assert self.proc.poll() is None, self.text()

    def type(self, keys: bytes) -> None:
        os.write(self._fd, keys)

    def finish(self, timeout_s: float) -> int:
        """Read until the terminal closes (the command and every child holding it have ended); the exit code."""
        deadline = time.monotonic() + timeout_s
        while self._read(0.2):
            if time.monotonic() > deadline:
                self.proc.kill()
                pytest.fail(f"still running {timeout_s:g} s after the signal:\n{self.text()}")
        code = self.proc.wait(10)
        os.close(self._fd)
        return code

    def text(self) -> str:
        return ESCAPES.sub("", self.seen.decode(errors="replace")).replace("\r\n", "\n")

    def after(self, mark: str) -> list[str]:
        """The lines after ``mark`` (the rest of its own first), what runs ending print left out."""
        rest = self.text().split(mark, 1)[1]
        return [line for line in rest.splitlines() if line.strip() and not RESULT.match(line)]

    def left_behind(self) -> list[int]:
        """Processes of the command's session still alive (children it should have ended)."""
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == self.proc.pid and fields[0] != "Z":  # the session id
                found.append(int(stat.parent.name))
        return found


def _no_child_left(terminal: Terminal) -> None:
    deadline = time.monotonic() + 10
    while terminal.left_behind():
        assert time.monotonic() < deadline, f"left running: {terminal.left_behind()}"
        time.sleep(0.1)


@pytest.fixture
def no_local_server() -> None:
    import asyncio

    if asyncio.run(discover.discover({})).endpoints:
        pytest.skip("a local LLM server answers on a usual port here: serve would measure it, not the simulators")


@pytest.mark.parametrize(
    ("via_uv", "regions"), [(False, False), (True, False), (False, True)], ids=["python", "uv-run", "regions"]
)
def test_ctrl_c_in_a_terminal_stops_serve_with_one_line_and_130(
    tmp_path: Path, no_local_server: None, request: pytest.FixtureRequest, via_uv: bool, regions: bool
) -> None:
    """The page-rendering process got the terminal's SIGINT too: a 20-line KeyboardInterrupt traceback, exit 0;
    the same on the README's regions quick start."""
    if via_uv and UV is None:
        pytest.skip("uv is not on PATH here: the README's `uv run` cannot be tried")
    store = ["--config", "docs/regions.toml", "--db", request.getfixturevalue("pg_url")] if regions else []
    terminal = Terminal(tokenpace("serve", "--port", "0", "--db", str(tmp_path / "s.db"), *store, via_uv=via_uv), ROOT)
    terminal.wait_for("scheduled jobs", timeout_s=120)  # the board's first pages are rendered: the renderer runs
    time.sleep(1)
    terminal.type(b"\x03")
    assert terminal.finish(timeout_s=30) == 130, terminal.text()
    assert "Traceback" not in terminal.text() and "KeyboardInterrupt" not in terminal.text(), terminal.text()
    lines = terminal.after("^C")  # the terminal's echo of the key
    assert len(lines) == 1 and "interrupted (Ctrl-C)" in lines[0], terminal.text()
    _no_child_left(terminal)


@pytest.mark.parametrize(
    ("args", "ready"),
    [
        (("run", "--sim", "-n", "400", "-c", "1"), "measuring"),
        (("bench", "--sim", "-c", "2", "--duration", "60s", "--requests", "10000"), "concurrency 2"),
        (("bench", "--sim", "-c", "2", "--workers", "2", "--duration", "60s", "--requests", "10000"), "concurrency 2"),
    ],
    ids=["run", "bench", "bench-workers"],
)
def test_ctrl_c_in_a_terminal_stops_run_and_bench_with_130(tmp_path: Path, args: tuple[str, ...], ready: str) -> None:
    command = tokenpace(*args, "--db", str(tmp_path / "t.db"), *(["--out", str(tmp_path / "o")] * (args[0] == "bench")))
    terminal = Terminal(command, ROOT)
    terminal.wait_for(ready, timeout_s=60)
    time.sleep(1)
    terminal.type(b"\x03")
    assert terminal.finish(timeout_s=30) == 130, terminal.text()
    assert "Traceback" not in terminal.text() and "interrupted" in terminal.text(), terminal.text()
    _no_child_left(terminal)


def test_ctrl_c_in_a_terminal_stops_an_agent_with_one_line_and_130(tmp_path: Path, pg_url: str) -> None:
    terminal = Terminal(tokenpace("agent", "--region", "eu", "--db", pg_url, "--grace", "1"), ROOT)
    terminal.wait_for("tokenpace agent ", timeout_s=60)
    terminal.wait_for("\n", timeout_s=10)
    time.sleep(1)
    terminal.type(b"\x03")
    assert terminal.finish(timeout_s=30) == 130, terminal.text()
    lines = terminal.after("^C")
    assert len(lines) == 1 and "interrupted (Ctrl-C)" in lines[0] and "Traceback" not in terminal.text(), lines
    _no_child_left(terminal)


@pytest.mark.parametrize("via_uv", [False, True], ids=["python", "uv-run"])
def test_sigterm_to_the_process_group_stops_serve_with_one_line_and_143(
    tmp_path: Path, no_local_server: None, via_uv: bool
) -> None:
    """As a supervisor stops a group (systemd's default): every process gets SIGTERM, and under `uv run` the
    serving process gets it twice, once from uv."""
    if via_uv and UV is None:
        pytest.skip("uv is not on PATH here: the README's `uv run` cannot be tried")
    log = tmp_path / "serve.log"
    command = tokenpace("serve", "--port", "0", "--db", str(tmp_path / "s.db"), via_uv=via_uv)
    with log.open("w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=out, cwd=ROOT, env=NO_KEYS, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while "scheduled jobs" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        time.sleep(1)
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(30) == 143, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    rest = [line for line in text.split("scheduled jobs", 1)[1].splitlines()[1:] if not RESULT.match(line)]
    assert len(rest) == 1 and "stopped (SIGTERM)" in rest[0] and "Traceback" not in text, text
