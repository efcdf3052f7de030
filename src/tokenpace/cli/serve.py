"""``tokenpace serve``: the sampler and the leaderboard's web server, on one event loop (Ctrl-C stops).

``--simulate`` serves a config file's board offline: each endpoint a simulator at its own path, on a clock
``--speedup`` times faster (config/offline.py); it needs no key and sends nothing past this machine.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from tokenpace.cli import options as opt
from tokenpace.cli.signals import CODES, run_async
from tokenpace.cli.stderr import err
from tokenpace.cli.store import close_store
from tokenpace.errors import ConfigError, TokenpaceError


@click.command("serve")
@opt.config("TOML file declaring providers, plans, budgets and cadences (default: discover, else simulate).")
@opt.listen_host("Address the web server listens on.")
@opt.listen_port(8000, "Port the web server listens on (0: any free one).")
@opt.store()
@opt.grace(
    5.0,
    "Seconds runs in flight may take to finish after SIGINT/SIGTERM; then they are stored as cancelled "
    "(keep it under your supervisor's stop timeout: docker's is 10 s).",
)
@click.option(
    "--simulate",
    is_flag=True,
    help="Offline: each endpoint of --config is a simulator speaking its protocol at its path, at the figures of "
    "the file's offline tables (labelled simulated); no key is read and nothing leaves this machine.",
)
@click.option(
    "--speedup",
    type=opt.Finite(min=1, max=100_000),
    default=None,
    help="With --simulate: the file's cadences, limit windows and idle times run this many times faster "
    "(default 360: an hour in 10 s).",
)
def serve_command(
    config_path: Path | None,
    host: str,
    port: int,
    db: str | None,
    grace: float,
    simulate: bool,
    speedup: float | None,
) -> None:
    """Measure endpoints on a schedule and publish the leaderboard at http://HOST:PORT (Ctrl-C stops).

    Without --config it measures the providers whose key variables are set (GROQ_API_KEY...), local servers on
    their usual ports (Ollama 11434, llama.cpp 8080, vLLM 8000, SGLang 30000), and, where it finds nothing,
    built-in simulated endpoints, labelled as such everywhere.
    """
    from tokenpace.board.console import log_lines, shown
    from tokenpace.board.platforms import cadence_line, platforms
    from tokenpace.config import endpoints
    from tokenpace.serve import service  # the web stack loads only for the command that serves it
    from tokenpace.store.database import default_db_path, open_store
    from tokenpace.store.serving import ServingLock

    log_lines()  # one line per run and per skipped run, so a terminal shows the service at work

    if simulate and config_path is None:
        raise ConfigError("--simulate runs a config file's board offline: give it --config FILE")
    if speedup is not None and not simulate:
        raise ConfigError("--speedup paces --simulate's offline board: add --simulate, or leave --speedup out")
    cfg = endpoints.read_config(config_path) if config_path is not None else None
    if cfg is not None and not cfg.endpoints:
        raise ConfigError(f"{cfg.source} declares no endpoints: add a [providers.NAME] table with models")
    notes: list[str] = []  # what discovery found, printed after the address: the first line is the address
    if cfg is not None and simulate:
        from tokenpace.config import offline

        cfg = offline.offline(cfg, offline.DEFAULT_SPEEDUP if speedup is None else speedup)
        notes.append(offline.pace_line(cfg))
    sock = service.listen(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    where = f"[{bound_host}]" if ":" in bound_host else bound_host  # the address bound, not the name asked
    try:
        store = open_store(db)
    except TokenpaceError:
        sock.close()
        raise
    try:  # before anything starts: a second serve on this store would run the whole schedule again
        holder = f"pid {os.getpid()} on {socket.gethostname()}, http://{where}:{bound_port}"
        lock = ServingLock(store, db or default_db_path(), holder)
    except TokenpaceError:
        sock.close()
        close_store(store)
        raise

    def ready(jobs: Sequence[Any]) -> None:
        err.print(f"tokenpace serving on http://{where}:{bound_port}", soft_wrap=True)
        paces = [cadence_line(p, cfg.speedup) for p in platforms(cfg, jobs)] if cfg is not None and simulate else []
        for line in (*notes, *paces, f"{len(jobs)} scheduled jobs; store {store.url}"):
            err.print(shown(line), soft_wrap=True)  # a note may hold a model name a server chose

    async def go() -> int | None:
        chosen, found = await service.resolve(cfg, os.environ, skip_ports=(bound_port,))
        notes.extend(found)
        return await service.run_service(
            chosen, store, sock, store_url=db or default_db_path(), grace_s=grace, ready=ready
        )

    try:
        heard = run_async(go)
    finally:
        sock.close()
        lock.close()
        close_store(store)
    if heard is not None:  # its one line was said when the signal came
        sys.exit(CODES[heard])
