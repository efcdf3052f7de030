"""Simulators in their own process: what a simulated provider answers never runs on the loop that times it.

``tokenpace serve``'s embedded default, ``run --sim``, ``bench --sim`` and an agent's simulated providers each
start their simulators here: one child process holds them all, each provider on its own port. In the measuring
process they shared the event loop with the client, so every token the simulator wrote was work the client's
timestamps waited behind, and a sample was client-bound for the demo's own sake (issue 29).

The child is spawned (a fork would copy this process's threads' locks in whatever state they are in), says
where each simulator listens within :data:`START_S`, and stops when told, when the pipe to its parent closes,
or when its parent dies outright (kill -9): it never outlives the process that started it. It ignores SIGINT and
SIGTERM, which a terminal or a supervisor sends to the whole process group (children.py): its parent stops it,
once, and says so itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import multiprocessing
import multiprocessing.connection
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from tokenpace.children import child_started, deaf_children
from tokenpace.clients import protocol_for
from tokenpace.config.offline import address
from tokenpace.errors import SimulatorError
from tokenpace.load.interpreter import event_loop_factory
from tokenpace.sim.scenario import Scenario
from tokenpace.sim.server import Simulator, serve
from tokenpace.sim.standin import Stand

if TYPE_CHECKING:
    from tokenpace.config.endpoints import Endpoint

START_S = 60.0  # the longest the child may take to import, bind and say where it listens (a busy 2-core machine)
STOP_S = 5.0  # the longest a stop waits for the child to leave before it is killed
_STOP = "stop"


class SimulatorProcess:
    """A child process serving one simulator per provider (or per plan that stands in for a real one, a
    :class:`Stand`); ``roots`` maps each to its server root."""

    def __init__(self, scenarios: Mapping[str, Scenario | Stand]) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_main, args=(dict(scenarios), child), name="tokenpace-sim", daemon=True)
        with deaf_children():
            self._process.start()
        child.close()  # the child's end lives in the child: our copy closed, its EOF means the child is gone
        self.roots: dict[str, str] = {}

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def wait_ready(self, timeout_s: float = START_S) -> dict[str, str]:
        """Each provider's server root (``http://127.0.0.1:PORT``), once the child listens; SimulatorError
        (the child stopped first) when it cannot start within ``timeout_s``."""
        answer: dict[str, str] | str = f"the simulators' process did not start within {timeout_s:g} s"
        try:
            if self._conn.poll(timeout_s):
                answer = self._conn.recv()
        except (EOFError, OSError):
            answer = "the simulators' process stopped before it listened"
        if isinstance(answer, str):  # the child's one line, or ours: why it could not start
            self.stop()
            raise SimulatorError(answer)
        self.roots = answer
        return self.roots

    def stop(self) -> None:
        """Tell the child to stop and wait ``STOP_S`` for it; past that it is killed. Idempotent."""
        with contextlib.suppress(OSError):
            self._conn.send(_STOP)
        self._process.join(STOP_S)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._conn.close()


async def started_for(
    endpoints: Sequence[Endpoint], scenarios: Mapping[str, Scenario | Stand], stack: contextlib.AsyncExitStack
) -> list[Endpoint]:
    """The endpoints, each simulated one whose provider has a scenario pointed at a simulator started for that
    provider in a child process (stopped with ``stack``), at the base URL its protocol takes, and each that
    stands in for a real one (config/offline.py) at its own path on its plan's; the others as they are. No
    scenario, no process."""
    if not scenarios:
        return list(endpoints)
    started = SimulatorProcess(scenarios)
    stack.callback(started.stop)
    roots = await asyncio.to_thread(started.wait_ready)
    return [_pointed(e, roots, scenarios) for e in endpoints]


def _pointed(e: Endpoint, roots: Mapping[str, str], scenarios: Mapping[str, Scenario | Stand]) -> Endpoint:
    """A simulated endpoint at its simulator: a provider's at root + its protocol's base, a stand-in's at its path."""
    key, path = address(e)
    if not e.simulated or key not in roots:
        return e
    found = scenarios[key]
    rest = path.removeprefix(found.root) if isinstance(found, Stand) else protocol_for(e.protocol).default_base
    return dataclasses.replace(e, base_url=roots[key] + rest)


# In the child process only.


def _main(scenarios: dict[str, Scenario | Stand], conn: multiprocessing.connection.Connection) -> None:
    child_started()  # a terminal's Ctrl-C reaches the group: the parent stops us, and we never outlive it
    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        runner.run(_serve_all(scenarios, conn))


def _simulator(found: Scenario | Stand) -> Simulator:
    if isinstance(found, Scenario):
        return Simulator(found)
    return Simulator(models=found.models, root=found.root, served_on=found.served_on)


async def _serve_all(scenarios: dict[str, Scenario | Stand], conn: multiprocessing.connection.Connection) -> None:
    """Serve every scenario until the parent says stop or goes away; the roots, or one line why not, first."""
    async with contextlib.AsyncExitStack() as stack:
        try:
            roots = {p: (await stack.enter_async_context(serve(_simulator(sc)))).removesuffix("/v1")
                     for p, sc in scenarios.items()}  # fmt: skip
        except SimulatorError as exc:
            conn.send(str(exc))
            return
        conn.send(roots)
        with contextlib.suppress(EOFError, OSError):
            await asyncio.to_thread(conn.recv)  # "stop", or EOF: the parent closed its end
