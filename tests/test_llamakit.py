"""The test command on a new machine: llama-server builds in the background and the tests that need it run last."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests import llamakit

ROOT = Path(__file__).resolve().parents[1]


def _script(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "setup.sh"
    script.write_text("set -euo pipefail\n" + body, encoding="utf-8")
    return script


def test_the_tests_that_need_llama_server_run_after_all_the_others() -> None:
    files = ["tests/serve/test_discover.py", "tests/clients/test_llama_server.py", "tests/cli/test_sim.py"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    needs = [t.startswith(files[1]) or "llama_server_on" in t for t in ids]
    assert sum(needs) > 8 and needs == sorted(needs), ids
    others = [t for t, need in zip(ids, needs, strict=True) if not need]
    assert others[-1].startswith(files[2]) and others[0].startswith(files[0]), "the others keep their order"


def _may_raise_a_priority() -> bool:
    with subprocess.Popen(["sleep", "5"], preexec_fn=llamakit.low_priority) as niced:
        try:
            os.setpriority(os.PRIO_PROCESS, niced.pid, os.getpriority(os.PRIO_PROCESS, 0))
            return True
        except PermissionError:
            return False
        finally:
            niced.kill()


def test_the_build_runs_at_low_priority_until_a_test_waits_for_it(tmp_path: Path) -> None:
    """Nice 19 while other tests run; the suite's own once a test waits (where allowed): nothing else is left."""
    nice, own = tmp_path / "nice", os.getpriority(os.PRIO_PROCESS, 0)
    # Field 19 of /proc/PID/stat is the nice value (Linux); the script's name has no space to shift it.
    script = _script(
        tmp_path,
        f"""read -r -a stat < /proc/$$/stat; echo "${{stat[18]}}" > {nice}.start
        for _ in $(seq 100); do read -r -a stat < /proc/$$/stat; [ "${{stat[18]}}" = {own} ] && break; sleep 0.05; done
        echo "${{stat[18]}}" > {nice}.waited; echo building; echo "$PWD/out"
        """,
    )
    build = llamakit.Build(script)
    deadline = time.monotonic() + 10
    while not Path(f"{nice}.start").exists():
        assert time.monotonic() < deadline, "the script did not start"
        time.sleep(0.05)
    done = build.wait()
    assert done.returncode == 0 and done.folder == f"{os.getcwd()}/out", done
    assert Path(f"{nice}.start").read_text().strip() == "19", "a compiler would take CPU from timed tests"
    assert Path(f"{nice}.waited").read_text().strip() == str(own if _may_raise_a_priority() else 19)


def test_a_failed_build_shows_the_tail_of_its_log_and_its_errors(tmp_path: Path) -> None:
    log = "".join(f"[{n}/300] Building CXX object\n" for n in range(300))
    script = _script(tmp_path, f"cat <<'EOF'\n{log}error: no space left\nEOF\necho 'cmake failed' >&2\nexit 2\n")
    build = llamakit.Build(script)
    deadline = time.monotonic() + 10
    while build.running():
        assert time.monotonic() < deadline, "the script did not end"
        time.sleep(0.05)
    ended_by = time.monotonic() - build.started
    time.sleep(1)  # asked a while after it ended: its time is still its own
    done = build.wait()
    assert done.seconds <= ended_by, done
    failure = done.failure()
    assert "exit 2" in failure and "error: no space left" in failure and "cmake failed" in failure
    assert len(failure) < 6000


def test_stopping_an_unfinished_build_stops_every_process_it_started(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = _script(tmp_path, f"sleep 60 & echo $! > {pids}; sleep 60\n")
    build = llamakit.Build(script)
    deadline = time.monotonic() + 10
    while not pids.exists() or not pids.read_text().strip():
        assert time.monotonic() < deadline, "the script did not start"
        time.sleep(0.05)
    build.stop()
    assert not build.running()
    child = int(pids.read_text())
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child}").exists() and "zombie" not in Path(f"/proc/{child}/status").read_text():
        assert time.monotonic() < deadline, "a child of the build outlived stop()"
        time.sleep(0.05)
