"""Region agents as real processes for tests: a simulator process, `tokenpace agent` processes, the central
scheduler (the sampler with its dispatcher) on the test's loop, and configs naming them."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit, urlunsplit

from tokenpace.config.endpoints import read_config
from tokenpace.schedule import cadence
from tokenpace.schedule.dispatch import Dispatcher
from tokenpace.schedule.sampler import Sampler
from tokenpace.store.database import Store
from tokenpace.store.queue import Queue

HEARTBEAT_S = 0.5
STALLED_AFTER_S = 3 * HEARTBEAT_S


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tokenpace", *args]


@contextlib.contextmanager
def sim_process(*args: str, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """`tokenpace sim` on a free port with ``args``; yields its /v1 URL."""
    proc = subprocess.Popen(
        command("sim", "--port", "0", *args), stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}
    )
    try:
        assert proc.stderr is not None
        said = proc.stderr.readline()
        found = re.search(r"tokenpace sim on (http://127\.0\.0\.1:\d+/v1) ", said)
        assert found, said
        yield found.group(1)
    finally:
        proc.terminate()
        proc.wait(10)


DELAY = """
import asyncio, sys
from tokenpace.sim.delay import DelayProxy

async def main() -> None:
    async with DelayProxy(sys.argv[1], int(sys.argv[2]), float(sys.argv[3])) as proxy:
        print(proxy.port, flush=True)
        await asyncio.Event().wait()

import uvloop
uvloop.run(main())
"""


@contextlib.contextmanager
def delay_process(url: str, one_way_ms: float) -> Iterator[str]:
    """A DelayProxy in a process of its own, so the test's own work adds no jitter; yields ``url`` through it."""
    parts = urlsplit(url)
    target = [str(parts.hostname), str(parts.port)]
    proc = subprocess.Popen([sys.executable, "-c", DELAY, *target, str(one_way_ms)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield urlunsplit(parts._replace(netloc=f"127.0.0.1:{port}"))
    finally:
        proc.terminate()
        proc.wait(10)


def write_config(path: Path, provider: str, regions: Sequence[str], every: str = "10s", requests: int = 1) -> Path:
    """A config of one provider (``provider``: the TOML of its table's body) measured from ``regions``."""
    text = f'[providers.far]\n{provider}\nevery = "{every}"\nrequests = {requests}\n'
    text += '[schedule]\nworkloads = ["1k"]\n' + "".join(f"[regions.{r}]\n" for r in regions)
    path.write_text(text)
    return path


class AgentProcess:
    """A `tokenpace agent` process; its output goes to a file the test reads afterwards."""

    def __init__(
        self, url: str, region: str, config: Path, name: str, log: Path, env: Mapping[str, str] = {},
        heartbeat_s: float = HEARTBEAT_S,
    ) -> None:  # fmt: skip
        self.name, self.log = name, log
        self._out: IO[bytes] = log.open("wb")
        self.proc = subprocess.Popen(
            command("agent", "--region", region, "--db", url, "--config", str(config), "--name", name,
                    "--heartbeat", str(heartbeat_s), "--grace", "5"),
            stdout=self._out, stderr=subprocess.STDOUT, env={**os.environ, **env},
        )  # fmt: skip

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while b"tokenpace agent " not in self.log.read_bytes():
            assert self.proc.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.1)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)

    def stop(self) -> str:
        """SIGTERM, wait, and the whole output."""
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)
        self._out.close()
        return self.log.read_text()


@contextlib.asynccontextmanager
async def central(config: Path, store: Store, url: str) -> AsyncIterator[Dispatcher]:
    """The central half of `tokenpace serve` with regions: the sampler queueing orders, on this loop."""
    cfg = read_config(config)
    queue = Queue(url)
    await queue.open()
    await queue.install()
    dispatcher = Dispatcher(queue, poll_s=0.2, stalled_after_s=STALLED_AFTER_S, finished=store.written_elsewhere)
    sampler = Sampler(cadence.jobs(cfg, cfg.endpoints), store, run_job=dispatcher, grace_s=5)
    task = asyncio.create_task(sampler.run())
    try:
        yield dispatcher
    finally:
        sampler.stop(grace_s=0)
        await task
        await dispatcher.close()
        await queue.close()


async def until(check: object, within: float = 60, every: float = 0.3) -> None:
    """Wait until ``check()`` (a callable, run on a thread) is true."""
    assert callable(check)
    deadline = time.monotonic() + within
    while not await asyncio.to_thread(check):
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(every)
