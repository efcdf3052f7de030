"""llama.cpp's llama-server for the tests: built in the background while the other tests run, at low priority.

The first build takes about 10 minutes of both cores (then it is cached and takes seconds). The session starts
it as soon as it knows a selected test needs it, at nice 19, and runs those tests last, so the build fills the
CPU time the other tests leave idle instead of adding its 10 minutes to theirs. The first of those tests waits
for it, back at the suite's own priority where that is allowed (root may raise a priority; others only lower it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1].parent / "shared" / "llama-server"
SETUP = SCRIPTS / "setup_llama_server.sh"
# Beside the cache the script fills (its own default, or $LLAMA_SERVER_CACHE): one build at a time per cache.
LOCK = Path(os.environ.get("LLAMA_SERVER_CACHE") or Path.home() / ".cache" / "llama-server-ci") / "build.lock"


def low_priority() -> None:
    """``preexec_fn`` for the build: nice 19, so a test that wakes takes the core from any compiler at once.

    Children inherit it: cmake, ninja and every compiler. Only a system call runs between fork and exec.
    """
    os.nice(19)


@dataclass(frozen=True)
class Built:
    """How the setup script ended: its exit status, its output (the folder on the last line) and its errors."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def folder(self) -> str:
        return self.stdout.strip().splitlines()[-1]

    def failure(self) -> str:
        """What a test that needs the server shows when the build failed: the tail of what the script wrote."""
        return f"building llama-server failed (exit {self.returncode}):\n{self.stdout[-2000:]}{self.stderr[-3000:]}"


class Build:
    """``setup_llama_server.sh`` in its own process group, so that one call reaches all its compilers.

    Not in its own session: where the kernel groups the CPU by session (autogroup), a new session would get an
    equal share of the CPU whatever its nice value.
    """

    def __init__(self, script: Path = SETUP, lock: Path | None = None) -> None:
        self.started = time.monotonic()
        self.waited_s = 0.0
        # Files, not pipes: nobody reads while it runs. Closed by wait() or stop(), as they outlive __init__.
        self._out = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
        self._err = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
        command = ["bash", str(script)]
        if lock is not None and (flock := shutil.which("flock")) is not None:
            # The suite's workers (pytest-xdist) each start one: the first builds, the others wait on the lock,
            # without CPU, and then find the cache built.
            lock.parent.mkdir(parents=True, exist_ok=True)
            command = [flock, str(lock), *command]
        self._proc = subprocess.Popen(
            command,
            stdout=self._out,
            stderr=self._err,
            text=True,
            process_group=0,
            preexec_fn=low_priority,
        )
        self._done: Built | None = None
        self._ended = 0.0
        # Notes when it ends, which may be long before anyone asks (a warm cache ends in seconds).
        threading.Thread(target=self._note_end, daemon=True).start()

    @property
    def group(self) -> int:
        """Its process group: what stops the script and every compiler it started."""
        return self._proc.pid

    def _note_end(self) -> None:
        self._proc.wait()
        self._ended = time.monotonic()

    def running(self) -> bool:
        return self._done is None and self._proc.poll() is None

    def wait(self) -> Built:
        """Wait for the script to end (once; later calls answer at once) and read what it wrote."""
        if self._done is None:
            if self.running():
                self._hurry()
            waiting = time.monotonic()
            returncode = self._proc.wait()
            self.waited_s = time.monotonic() - waiting
            self._out.seek(0)
            self._err.seek(0)
            seconds = (self._ended or time.monotonic()) - self.started
            self._done = Built(returncode, self._out.read(), self._err.read(), seconds)
            self._out.close()
            self._err.close()
        return self._done

    def _hurry(self) -> None:
        """Back to the suite's own priority: whoever waits has nothing else to run. Only root may raise it."""
        with contextlib.suppress(PermissionError, ProcessLookupError):
            os.setpriority(os.PRIO_PGRP, self._proc.pid, os.getpriority(os.PRIO_PROCESS, 0))

    def stop(self) -> None:
        """Stop an unfinished build with all its children (its script then removes its work folder)."""
        if self.running():
            os.killpg(self._proc.pid, signal.SIGTERM)
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait()
        if self._done is None:
            self._out.close()
            self._err.close()
