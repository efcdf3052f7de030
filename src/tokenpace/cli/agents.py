"""``tokenpace agents``: the probe agents the store knows, as ``/agents`` lists them (board/fleet.py).

Only click is imported at the top: `tokenpace --help` must stay light (tests/cli/test_imports.py).
"""

from __future__ import annotations

import json

import click

from tokenpace.cli import options as opt
from tokenpace.cli.store import close_store


@click.command("agents")
@opt.store()
@opt.as_json("Print the list as JSON (as /agents.json).")
def agents_command(db: str | None, as_json: bool) -> None:
    """List the probe agents: region, state (up, down, stopped), version, host, last heartbeat, jobs, clock offset."""
    from datetime import UTC, datetime

    from rich.table import Table

    from tokenpace.board.console import Console, shown
    from tokenpace.board.fleet import NONE_YET, fleet_dict
    from tokenpace.store import agents
    from tokenpace.store.database import open_store

    store = open_store(db)
    try:
        found, queues = agents.read_all(store), agents.queues(store)
    finally:
        close_store(store)
    data = fleet_dict(found, datetime.now(UTC), queues)
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    if not found:
        click.echo(NONE_YET)
        return
    table = Table()
    columns = ("agent", "region", "state", "version", "host", "heartbeat", "done", "failed", "dropped", "clock offset")
    for col in columns:
        table.add_column(col, justify="right" if col in ("done", "failed", "dropped", "clock offset") else "left")
    for a in data["agents"]:
        offset = "-" if a["clock_offset_ms"] is None else f"{a['clock_offset_ms']:.1f} ms"
        said = (shown(a[k]) for k in ("name", "region", "state", "version", "host"))  # an agent names itself
        table.add_row(
            *said, f"{a['heartbeat_age_s']:.0f} s ago",
            str(a["jobs_done"]), str(a["jobs_failed"]), str(a["jobs_dropped"]), offset,
        )  # fmt: skip
    Console(width=160).print(table)
