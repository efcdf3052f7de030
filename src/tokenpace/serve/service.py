"""``tokenpace serve``: the sampler and the leaderboard's web server in one process, on one event loop.

With a config file it measures what the file declares (with ``--simulate``, offline: config/offline.py). Without
one it measures what it can reach (discover.py) and, where that is nothing, the simulated endpoints of the
embedded default config. Simulated providers get a simulator each, and offline plans one each (sim/standin.py),
in a child process (sim/process.py) started here and stopped on the way out.

The web server runs with limits (web/limits.py: a view pool, requests in flight, connections, a request-head
deadline) so readers cannot starve the timing loop; on any address other than loopback it warns that the board
is public and unauthenticated.

With ``[regions]`` in the config (and a PostgreSQL store) it measures nothing itself: each due run becomes an
order in its region's queue (schedule/dispatch.py), taken by ``tokenpace agent`` processes there.

With webhooks in the config's ``[alerts]``, a third task looks for changes in what was sampled and sends them
(serve/alerts.py), and incidents as they open and close (serve/incidents.py); it never holds up the other two,
and stops with them.

SIGINT or SIGTERM stops both halves, with one line: the web server closes and the sampler starts nothing new,
lets runs in flight finish within the grace period, and records what it had to cancel as ``cancelled`` samples.
A second signal cuts the grace period short; the samples are recorded all the same. Its child processes (the
page renderer) ignore both (children.py): a terminal's Ctrl-C reaches them too, and only this process answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import ipaddress
import logging
import signal
import socket
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from importlib import resources
from pathlib import Path

import uvicorn
from starlette.applications import Starlette

from tokenpace import sim
from tokenpace.children import STOPS
from tokenpace.config import endpoints
from tokenpace.config.endpoints import Config
from tokenpace.config.settings import ScheduleSettings
from tokenpace.config.workloads import Workload
from tokenpace.errors import ConfigError, TokenpaceError
from tokenpace.prompts import tokens
from tokenpace.prompts.corpus import Corpus, default_corpus, load_corpus, tokenize
from tokenpace.prompts.prompt import build_prompt
from tokenpace.schedule import cadence
from tokenpace.schedule.dispatch import Dispatcher
from tokenpace.schedule.sampler import MEASURED_AT_ONCE, Sampler
from tokenpace.schedule.status import Status
from tokenpace.serve import discover
from tokenpace.serve.alerts import Sender, Watcher, alerting, body
from tokenpace.serve.incidents import IncidentWatcher
from tokenpace.store.database import Store
from tokenpace.store.queue import Queue
from tokenpace.web.app import create_app
from tokenpace.web.limits import BACKLOG, server_options
from tokenpace.web.renderer import fetch
from tokenpace.web.site import Site

log = logging.getLogger(__name__)
FIRST_PAGES = ("/", "/leaderboard.json", "/leaderboard.csv", "/metrics")  # rendered before the board answers
REPEAT_S = 1.0  # a second signal sooner than this is the first one again (see stop() in run_service)
STOP_SAID: dict[int, tuple[str, str]] = {
    signal.SIGINT: ("interrupted (Ctrl-C)", "Ctrl-C again"),
    signal.SIGTERM: ("stopped (SIGTERM)", "another"),
}


def default_config() -> Config:
    """The embedded default: simulated endpoints only (see default.toml)."""
    with resources.as_file(resources.files("tokenpace.config") / "default.toml") as path:
        return dataclasses.replace(endpoints.read_config(path), source="the embedded default config")


async def resolve(
    cfg: Config | None, env: Mapping[str, str], skip_ports: tuple[int, ...] = ()
) -> tuple[Config, tuple[str, ...]]:
    """The config to serve and why: the file's, else what discovery finds, else the embedded simulators."""
    if cfg is not None:
        count = f"{len(cfg.endpoints)} endpoint{'s' * (len(cfg.endpoints) != 1)}"
        return cfg, (f"measuring the {count} of {cfg.source}",)
    found = await discover.discover(env, skip_ports=skip_ports)
    if found.endpoints:
        only = ScheduleSettings(workloads=discover.WORKLOADS)
        discovered = endpoints.Config(endpoints=found.endpoints, source="discovery", schedule=only)
        return discovered, (*found.notes, f"workloads: {', '.join(discover.WORKLOADS)} (a config file can add more)")
    why = "no config, no provider key set and no local server answering: measuring simulated endpoints"
    return default_config(), (why,)


def listen(host: str, port: int) -> socket.socket:
    """A bound, listening socket, or one ConfigError line that says what to change."""
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        family = socket.AF_INET  # a host name: resolved by bind
    # IPPROTO_TCP named, not 0: asyncio turns Nagle off only on connections whose proto says TCP, and with Nagle
    # on, a response body under one segment waited ~40 ms for the client's delayed ACK of its headers (uvloop
    # turns it off whatever the proto; plain asyncio is what runs where uvloop is not installed).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):  # taken, or below 1024 without the right
            raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror}): pass another --port") from None
        # Anything else is about the address (not this machine's, a name that does not resolve): say so.
        raise ConfigError(f"cannot listen on {host} ({exc.strerror or exc}): pass another --host") from None
    sock.listen(BACKLOG)
    sock.setblocking(False)
    return sock


def public(sock: socket.socket) -> bool:
    """Whether a listening socket is reachable from other machines: bound to anything but loopback."""
    host = sock.getsockname()[0]
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:  # pragma: no cover - getsockname gives addresses, not names
        return True


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def server_config(app: object) -> uvicorn.Config:
    """uvicorn's configuration for the board: every limit of web/limits.py, uvicorn's own logging quiet."""
    return uvicorn.Config(app, **server_options())  # type: ignore[arg-type]


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: :func:`run_service` stops the web server and the sampler together."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def preload_for_runs(workloads: Iterable[Workload], corpus: Corpus | None) -> None:
    """Load, once and before the sampler starts, what runs would otherwise load while others are timed.

    The vocabulary (a second), every document's tokens (tiktoken's offsets are Python: a document met for the
    first time cost a run ~0.1 s of the interpreter), Pillow and its font (the vision chart): loaded by runs,
    they would hold the interpreter while runs beside them are timed, and those samples would be flagged
    client-bound, honestly but for tokenpace's own work.
    """
    tokens.preload()
    tokenize(default_corpus() if corpus is None else corpus)
    for workload in {w.name: w for w in workloads}.values():
        build_prompt(workload, 0, corpus)


async def board(
    store: Store, store_url: str, cfg: Config, status: Callable[[], Status] | None, stack: contextlib.AsyncExitStack
) -> Starlette:
    """The board's app, its pages rendered by a worker process over ``store_url`` (closed with ``stack``).

    The pages most asked for are rendered before it answers anyone: cold, over a million samples, they take
    about a second between them, and the first visitors would wait that long.
    """
    app = create_app(store, cfg, status=status, render_store=store_url)
    site: Site = app.state.site
    if site.renderer is not None:
        stack.callback(site.renderer.close)
    for path in FIRST_PAGES:
        await fetch(app, path)
    return app


async def regional(store: Store, store_url: str, stack: contextlib.AsyncExitStack, said: list[str]) -> Dispatcher:
    """The region queues, opened (their tables created if absent), and their dispatcher; closed by ``stack``.

    What it did is appended to ``said``: serve logs it after the address line, which comes first.
    """
    queue = Queue(store_url)
    await queue.open()
    stack.push_async_callback(queue.close)
    if await queue.install():
        said.append(f"created the region queues' tables (procrastinate) in {queue.shown}")
    dispatcher = Dispatcher(queue, finished=store.written_elsewhere)  # so the board's pages see the samples
    stack.push_async_callback(dispatcher.close)
    return dispatcher


async def run_service(
    cfg: Config,
    store: Store,
    sock: socket.socket,
    *,
    store_url: str,
    grace_s: float = 5.0,
    ready: Callable[[list[cadence.Job]], None] | None = None,
) -> int | None:
    """Sample on schedule and serve the leaderboard on ``sock`` until SIGINT or SIGTERM, and return the one that
    stopped it; ``store_url`` opens ``store`` again for the process rendering pages."""
    loop = asyncio.get_running_loop()
    said: list[str] = []  # logged after ``ready``: the address is the first line a user reads
    heard: list[tuple[int, float]] = []  # the signal that stopped it, and when
    async with contextlib.AsyncExitStack() as stack:
        stack.callback(_unhook, loop, heard)  # the last thing closed: simulators, renderer and queues go first
        if cfg.regions:  # the agents measure, with their own keys and simulators: this process only queues
            dispatcher = await regional(store, store_url, stack, said)
            endpoints = list(cfg.endpoints)
        else:
            dispatcher = None
            simulators: dict[str, sim.Scenario | sim.Stand] = {**sim.scenarios(cfg), **sim.stand_ins(cfg)}
            endpoints = await sim.started_for(cfg.endpoints, simulators, stack)
            for e in endpoints:
                e.api_key()  # a missing key variable is one line now, not a column of failed samples later
        jobs = cadence.jobs(cfg, endpoints)
        corpus = load_corpus(Path(cfg.corpus)) if cfg.corpus is not None else None
        if dispatcher is None:
            await loop.run_in_executor(None, preload_for_runs, [job.workload for job in jobs], corpus)
        bound = None if dispatcher is not None else MEASURED_AT_ONCE  # agents bound theirs (--concurrency)
        sampler = Sampler(jobs, store, grace_s=grace_s, corpus=corpus, run_job=dispatcher, max_in_flight=bound)
        if cfg.alerts.webhooks:  # URLs read now: a missing variable is one line before anything starts
            sender = Sender([w.target() for w in cfg.alerts.webhooks])
            watcher = Watcher(store, [j.key for j in jobs], lambda c: sender.put(body(c, cfg.alerts.board_url)))
            incidents = IncidentWatcher(store, cfg, sender.put)
            alerts = loop.create_task(alerting(watcher, sender, incidents), name="tokenpace alerts")
            stack.push_async_callback(_cancel, alerts)
        app = await board(store, store_url, cfg, sampler.status, stack)
        server = _Server(server_config(app))

        def stop(signum: int) -> None:
            if heard:
                # `uv run` passes SIGTERM on, so the child may see one signal twice, at once.
                if time.monotonic() - heard[0][1] > REPEAT_S:
                    log.warning("cancelling the runs in flight: their samples are stored as cancelled")
                    server.force_exit = True
                    sampler.stop(grace_s=0)
                return
            heard.append((signum, time.monotonic()))
            log.warning("%s", stopping_line(signum, grace_s, any(j.running for j in sampler.status().jobs)))
            server.should_exit = True
            sampler.stop()

        for sig in STOPS:
            loop.add_signal_handler(sig, stop, sig)
        if ready is not None:
            ready(jobs)
        for line in said:
            log.info("%s", line)
        if public(sock):
            host, port = sock.getsockname()[:2]
            log.warning(
                "warning: the leaderboard on %s:%d is public and unauthenticated: anyone who can reach this "
                "address can read it (bind 127.0.0.1 and put a proxy with authentication in front to restrict it)",
                host, port,
            )  # fmt: skip
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(server.serve(sockets=[sock]))
                tg.create_task(sampler.run())
        except* TokenpaceError as group:  # one line for the user, as everywhere else, not an exception group
            raise group.exceptions[0] from None
    return heard[0][0] if heard else None


def _unhook(loop: asyncio.AbstractEventLoop, heard: list[tuple[int, float]]) -> None:
    """The signal handlers removed; after a stop, later signals ignored to the exit: nothing is left to cut short."""
    for sig in STOPS:
        loop.remove_signal_handler(sig)
    if heard:
        for sig in STOPS:
            signal.signal(sig, signal.SIG_IGN)


def stopping_line(signum: int, grace_s: float, in_flight: bool) -> str:
    """The one line serve says when a signal stops it."""
    said, again = STOP_SAID[signum]
    if not in_flight:
        return f"{said}: every sample taken is kept"
    return f"{said}: runs in flight get up to {grace_s:g} s to finish, then are stored as cancelled ({again}: at once)"
