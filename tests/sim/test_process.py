"""Simulators in their own process: they answer, leave with the stack that started them, ignore a terminal's
Ctrl-C (their parent stops them) and never outlive a parent killed outright."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
import urllib.request

from tokenpace import sim
from tokenpace.config.endpoints import Endpoint
from tokenpace.sim.process import SimulatorProcess

SIMULATED = Endpoint(provider="demo", plan="default", model="sim", base_url="simulated://demo", simulated=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is gone too, only not yet reaped
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def _wait_gone(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


async def test_simulators_answer_from_a_child_process_that_leaves_with_their_stack() -> None:
    async with contextlib.AsyncExitStack() as stack:
        (endpoint,) = await sim.started_for([SIMULATED], {"demo": sim.Scenario(ttft_ms=5)}, stack)
        (child,) = multiprocessing.active_children()
        assert child.pid != os.getpid() and endpoint.base_url.startswith("http://127.0.0.1:")
        # Blocking this loop on purpose: a simulator on this loop could never answer.
        with urllib.request.urlopen(endpoint.base_url + "/models", timeout=10) as answer:  # noqa: ASYNC210
            assert answer.headers[sim.SIMULATOR_HEADER] == "1" and json.load(answer)["data"][0]["id"] == "sim"
    assert multiprocessing.active_children() == [] and child.exitcode is not None  # stopped and reaped


async def test_no_scenario_starts_no_process() -> None:
    async with contextlib.AsyncExitStack() as stack:
        real = Endpoint(provider="groq", plan="free", model="m", base_url="https://example.invalid/v1")
        assert await sim.started_for([real], {}, stack) == [real]
        assert multiprocessing.active_children() == []


def test_a_terminals_ctrl_c_leaves_the_simulators_to_their_parent() -> None:
    started = SimulatorProcess({"demo": sim.Scenario()})
    try:
        root = started.wait_ready()["demo"]
        assert started.pid is not None
        os.kill(started.pid, signal.SIGINT)  # what a terminal sends the whole process group
        time.sleep(0.5)
        with urllib.request.urlopen(root + "/health", timeout=10) as answer:
            assert answer.status == 200
    finally:
        started.stop()
    assert not _alive(started.pid)


def test_a_ctrl_c_while_the_simulators_start_is_ignored_there_too() -> None:
    """Sent before the child could ignore anything (it still imports aiohttp): a KeyboardInterrupt traceback
    from the child reached the terminal under a loaded machine, as the signal mask did not survive the spawn."""
    started = SimulatorProcess({"demo": sim.Scenario()})
    try:
        assert started.pid is not None
        for _ in range(20):  # through the child's interpreter start and imports
            os.kill(started.pid, signal.SIGINT)
            time.sleep(0.01)
        root = started.wait_ready()["demo"]
        with urllib.request.urlopen(root + "/health", timeout=10) as answer:
            assert answer.status == 200
    finally:
        started.stop()


def test_the_simulators_never_outlive_a_parent_killed_outright() -> None:
    script = (
        "from tokenpace import sim\n"
        "from tokenpace.sim.process import SimulatorProcess\n"
        "if __name__ == '__main__':\n"
        "    p = SimulatorProcess({'demo': sim.Scenario()})\n"
        "    p.wait_ready()\n"
        "    print(p.pid, flush=True)\n"
        "    import time; time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)
        parent.kill()  # kill -9: no stop, no clean-up of its own
        parent.wait(10)
        assert _wait_gone(child, within_s=10)
    finally:
        parent.kill()
        parent.wait()
