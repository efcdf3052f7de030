"""``tokenpace db``: a region agent's PostgreSQL rights (``grant-agent``), and the rollups rebuilt from the samples
(``rebuild-rollups``)."""

from __future__ import annotations

import click

from tokenpace.cli import options as opt
from tokenpace.cli.stderr import err


@click.group("db")
def db_group() -> None:
    """The store's upkeep: region agents' PostgreSQL rights, the rollups rebuilt."""


@db_group.command("grant-agent")
@click.argument("role")
@opt.region("The one region whose jobs the role may take.", required=True)
@opt.store("Apply the statements to this postgresql:// store (else print them).", from_env=True)
def grant_agent_command(role: str, region: str, db: str | None) -> None:
    """Print (or apply with --db) the GRANTs for an agent's own PostgreSQL ROLE: its region's jobs, inserting
    samples and heartbeats, nothing else. Create the role first (CREATE ROLE ... LOGIN PASSWORD ...)."""
    from tokenpace.config.regions import check_name
    from tokenpace.errors import ConfigError
    from tokenpace.store import grants

    try:
        check_name(region)
        statements = grants.for_agent(role, region)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if db is None:
        click.echo("\n".join(f"{s};" for s in statements))
        return
    grants.grant_agent(db, role, region)
    err.print(f"granted {role} an agent's rights for region {region}")


@db_group.command("rebuild-rollups")
@opt.store(from_env=True)
def rebuild_rollups_command(db: str | None) -> None:
    """Recompute the board's rollups from the samples: after deleting samples (the rollups keep what was counted)."""
    from tokenpace.cli.store import close_store
    from tokenpace.store import guards
    from tokenpace.store.database import open_store

    store = open_store(db)
    try:
        counted = store.transaction(guards.rebuild_rollups)
    finally:
        close_store(store)
    err.print(f"rollups of {store.url} rebuilt: {counted} published samples counted")
