"""``tokenpace leaderboard``: the board from the store in the terminal, ranked and filtered as the web page."""

from __future__ import annotations

import json
from pathlib import Path

import click

from tokenpace.cli import options as opt
from tokenpace.cli.store import close_store


@click.command("leaderboard")
@opt.config("As served.")
@opt.store()
@click.option("--window", default="72h", show_default=True, type=click.Choice(["72h", "24h", "7d"]),
              help="72h (median), 24h (mean) or 7d (median).")  # fmt: skip
@opt.workload("Default: 1k, or the config's first scheduled workload.", default=None)
@click.option("--provider", help="Only this provider.")
@click.option("--plan", help="Only this plan.")
@click.option("--sort", default="speed", show_default=True, help="The column to sort by.",
              type=click.Choice(["speed", "ttft", "e2e", "success", "samples", "name"]))  # fmt: skip
@click.option("--order", type=click.Choice(["asc", "desc"]), help="Default: the column's natural order.")
@click.option("--min-samples", type=click.IntRange(min=0), help="Rank only with this many (default: the config's, 3).")
@click.option("--client-bound", default="exclude", show_default=True, type=click.Choice(["exclude", "include"]),
              help="include: figures also of samples timed while the client lagged.")  # fmt: skip
@opt.region("A region's name, all (pooled), local or * (a row per region); default: the config's first region, "
            "else all.")  # fmt: skip
@opt.as_json("Print the leaderboard as JSON (as /leaderboard.json).")
def leaderboard_command(
    config_path: Path | None,
    db: str | None,
    window: str,
    workload_name: str | None,
    provider: str | None,
    plan: str | None,
    sort: str,
    order: str | None,
    min_samples: int | None,
    client_bound: str,
    region: str | None,
    as_json: bool,
) -> None:
    """Print the leaderboard from the store: the same table, sorting and filters as the web page.

    With the config `tokenpace serve` runs, staleness, long windows and the ranking minimum are the page's.
    """
    from datetime import UTC, datetime

    from tokenpace.board import ranking, regions, terminal
    from tokenpace.board.console import Console
    from tokenpace.board.query import Query
    from tokenpace.board.rules import rules as board_rules
    from tokenpace.config import endpoints
    from tokenpace.schedule import cadence
    from tokenpace.store.database import open_store

    cfg = endpoints.read_config(config_path) if config_path is not None else endpoints.Config()
    scheduled = cadence.jobs(cfg, cfg.endpoints)
    rules = board_rules(cfg, scheduled)
    given = {"window": window, "workload": workload_name, "sort": sort, "provider": provider, "plan": plan}
    given |= {"order": order, "client_bound": client_bound, "region": region}
    given |= {"min_samples": str(min_samples)} if min_samples is not None else {}
    query = Query.from_params(
        {k: v for k, v in given.items() if v}, min_samples=rules.min_samples, workload=rules.workload,
        region=regions.default(cfg),
    )  # fmt: skip
    store = open_store(db)
    try:
        now = datetime.now(UTC)
        board = ranking.read_board(
            store,
            query,
            now,
            stale_after=rules.stale_after,
            long_workloads=rules.long_workloads,
            config=cfg,
            expected=[j.key for j in scheduled],
        )
    finally:
        close_store(store)
    if as_json:
        click.echo(json.dumps(ranking.as_dict(board), indent=2))
    else:
        terminal.print_leaderboard(Console(), board)
