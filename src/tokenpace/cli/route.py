"""``tokenpace route MODEL``: the routing feed in the terminal, as ``/route.json`` computes it, or its exports."""

from __future__ import annotations

import json
from pathlib import Path

import click

from tokenpace.cli import options as opt
from tokenpace.cli.store import close_store


@click.command("route")
@click.argument("model")
@opt.config("As served: staleness, prices and the ranking minimum come from it.")
@opt.store()
@click.option("--by", default="speed", show_default=True, type=click.Choice(["speed", "ttft", "e2e", "price"]),
              help="What to send traffic by.")  # fmt: skip
@click.option("--p", "percentile", default="50", show_default=True, type=click.Choice(["50", "90"]),
              help="P50, or P90: the figure nine requests in ten reach.")  # fmt: skip
@click.option("--window", default="72h", show_default=True, type=click.Choice(["72h", "24h", "7d"]),
              help="The board's window, used where no now-window holds enough samples.")  # fmt: skip
@opt.workload("Default: 1k, or the config's first scheduled workload.", default=None)
@opt.region("A region's name, all (pooled) or local; default: the config's first region, else all.")
@click.option("--max-price", help="Leave out endpoints above this blended price, $ per 1M tokens (3:1).")
@click.option("--min-success", help="Leave out endpoints succeeding less often than this share (default 0.9).")
@click.option("--min-samples", type=click.IntRange(min=0), help="Values a figure needs (default: the config's, 3).")
@click.option("--format", "fmt", default="table", show_default=True,
              type=click.Choice(["table", "json", "litellm", "openrouter"]),
              help="json: as /route.json; litellm: a Router model_list; openrouter: provider preferences.")  # fmt: skip
def route_command(
    model: str, config_path: Path | None, db: str | None, by: str, percentile: str, window: str,
    workload_name: str | None, region: str | None, max_price: str | None, min_success: str | None,
    min_samples: int | None, fmt: str,
) -> None:  # fmt: skip
    """Rank MODEL's endpoints for a goal: each one in or out, and why."""
    from datetime import UTC, datetime

    from tokenpace.board import numbers, regions
    from tokenpace.board.route_export import litellm, openrouter
    from tokenpace.board.route_read import goal_from_params, goal_text, read_route, route_dict
    from tokenpace.board.rules import rules as board_rules
    from tokenpace.config import endpoints
    from tokenpace.schedule import cadence
    from tokenpace.store.database import open_store

    cfg = endpoints.read_config(config_path) if config_path is not None else endpoints.Config()
    rules = board_rules(cfg, cadence.jobs(cfg, cfg.endpoints))
    given = {"model": model, "by": by, "p": percentile, "window": window, "workload": workload_name,
             "region": region, "max_price": max_price, "min_success": min_success,
             "min_samples": None if min_samples is None else str(min_samples)}  # fmt: skip
    goal, board_window = goal_from_params(
        {k: v for k, v in given.items() if v is not None}, rules.min_samples, rules.workload, regions.default(cfg)
    )
    store = open_store(db)
    try:
        route = read_route(
            store, cfg, goal, datetime.now(UTC), window=board_window, stale_after=rules.stale_after,
            long_workloads=rules.long_workloads,
        )  # fmt: skip
    finally:
        close_store(store)
    if fmt != "table":
        data = {"json": route_dict, "litellm": lambda r: litellm(r, cfg), "openrouter": openrouter}[fmt](route)
        click.echo(json.dumps(data, indent=2))
        return
    if not route.picks:
        click.echo(f"no endpoint of {numbers.printable(goal.model)} has samples of workload {goal.workload}")
    for p in route.picks:
        rank = "-" if p.rank is None else f"{'=' if p.tied else ''}{p.rank}"
        what = goal_text(goal, p.figure) if p.chosen else "out: " + "; ".join(why for _, why in p.reasons)
        where = f"{p.window.label}, n={p.n}" if p.chosen else ""
        click.echo(f"{rank:>4}  {numbers.printable(p.row.name)}  {numbers.printable(what)}  {where}".rstrip())
