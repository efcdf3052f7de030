"""``tokenpace agent``: a probe agent for one region, taking its jobs from the central store's queue."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import click

from tokenpace.cli import options as opt
from tokenpace.cli.options import Finite
from tokenpace.cli.signals import cancelled_by, run_async, stop_of
from tokenpace.cli.stderr import err
from tokenpace.cli.store import close_store


@click.command("agent")
@opt.region("The region it measures from, as named in the config's [regions].", required=True)
@opt.store("The postgresql:// store the central serve uses.", required=True, from_env=True)
@opt.config("The config the central serve uses (default: the embedded one, simulated endpoints).")
@click.option("--name", help="How `tokenpace agents` lists it (default: HOST/REGION; unique per agent).")
@click.option("--concurrency", default=10, show_default=True, type=click.IntRange(1, 1000),
              help="Jobs it runs at once.")  # fmt: skip
@click.option("--heartbeat", default=10.0, show_default=True, type=Finite(min=0.2, max=300),
              help="Seconds between heartbeats; three missed and it is listed down, its job retried once.")  # fmt: skip
@opt.grace(30.0, "Seconds running jobs may take to finish after SIGINT/SIGTERM.")
def agent_command(
    region: str, db: str, config_path: Path | None, name: str | None, concurrency: int, heartbeat: float, grace: float
) -> None:
    """Take REGION's jobs from the queue in --db and measure them (Ctrl-C stops after running jobs end).

    API keys come from this machine's environment, under the variable names the config gives.
    """
    import asyncio
    import contextlib

    from tokenpace import sim
    from tokenpace.agent.worker import Agent
    from tokenpace.board.console import log_lines, shown
    from tokenpace.config import endpoints
    from tokenpace.config.regions import check_name
    from tokenpace.errors import ConfigError
    from tokenpace.prompts import tokens
    from tokenpace.prompts.corpus import load_corpus
    from tokenpace.serve.service import REPEAT_S, default_config
    from tokenpace.store.database import open_store
    from tokenpace.store.queue import Queue

    try:
        check_name(region)
    except ValueError as exc:
        raise ConfigError(f"--region: {exc}") from None
    cfg = endpoints.read_config(config_path) if config_path is not None else default_config()
    if cfg.regions and region not in {r.name for r in cfg.regions}:
        known = ", ".join(r.name for r in cfg.regions)
        raise ConfigError(f"--region {region}: {cfg.source} declares no such region (known: {known})")
    queue = Queue(db)  # refuses anything but PostgreSQL, in one line
    log_lines()
    store = open_store(db)
    heard: list[int] = []

    async def go() -> None:
        loop = asyncio.get_running_loop()
        async with contextlib.AsyncExitStack() as stack:
            found = await sim.started_for(cfg.endpoints, sim.scenarios(cfg), stack)
            for e in found:
                e.api_key()  # a missing key variable is one line now
            await loop.run_in_executor(None, tokens.preload)
            corpus = load_corpus(Path(cfg.corpus)) if cfg.corpus is not None else None
            await queue.open()
            stack.push_async_callback(queue.close)
            agent = Agent(
                cfg, found, store, queue, region, name=name, concurrency=concurrency, heartbeat_s=heartbeat,
                corpus=corpus,
            )  # fmt: skip
            # From here Ctrl-C, as SIGTERM, gives running jobs their grace (again: cancels them), not asyncio's.
            stack.enter_context(cancelled_by(signal.SIGINT, signal.SIGTERM, heard=heard, repeat_s=REPEAT_S))
            line = f"tokenpace agent {agent.name}: region {region}, store {store.url}"
            err.print(shown(line), soft_wrap=True)
            with contextlib.suppress(asyncio.CancelledError):
                await agent.run(grace_s=grace)

    try:
        run_async(go)
    finally:
        close_store(store)
    stop = stop_of(heard[0]) if heard else None
    err.print(f"{stop.said if stop else 'stopped'}: every sample taken is in the store")
    if stop is not None:
        sys.exit(stop.code)
