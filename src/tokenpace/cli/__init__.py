"""The ``tokenpace`` command: parse, call, print. Every TokenpaceError becomes one line (exits.py).

A module per command, named after it (`tokenpace run` in run.py); what several share: their options
(options.py), the endpoint a command line describes (target.py), signals (signals.py), exit codes (exits.py),
stderr (stderr.py), closing the store (store.py). Each command imports what it needs when it runs: `tokenpace
--help` must not pay for aiohttp, tiktoken, the database drivers, pydantic or rich (tests/cli/test_imports.py
checks which modules the help path loads).
"""

from __future__ import annotations

import click

from tokenpace.cli import agent, agents, bench, compare, db, leaderboard, presets, route, run, serve, sim, workloads
from tokenpace.cli.exits import ExitCodeGroup
from tokenpace.version import __version__


@click.group(cls=ExitCodeGroup)
@click.version_option(__version__, prog_name="tokenpace")
def main() -> None:
    """Measure how fast LLM APIs really are."""


for command in (
    run.run,
    bench.bench,
    compare.compare_command,
    agents.agents_command,
    agent.agent_command,
    db.db_group,
    presets.presets_command,
    workloads.workloads_command,
    sim.sim_command,
    serve.serve_command,
    leaderboard.leaderboard_command,
    route.route_command,
):
    main.add_command(command)
