"""``tokenpace workloads``: the built-in workloads and those a config declares, as a table."""

from __future__ import annotations

from pathlib import Path

import click

from tokenpace.cli import options as opt


@click.command("workloads")
@opt.config("Also list these.")
def workloads_command(config_path: Path | None) -> None:
    """List the workloads: built-in ones and those declared in --config."""
    from rich.table import Table

    from tokenpace.board import numbers
    from tokenpace.board.console import Console, shown
    from tokenpace.config import endpoints
    from tokenpace.config.workloads import BUILTIN, Workload

    cfg = endpoints.read_config(config_path) if config_path is not None else endpoints.Config()
    table = Table()
    for col in ("workload", "input tokens", "max tokens", "tasks", "concurrency", "image"):
        table.add_column(col, no_wrap=col != "tasks")
    listed: dict[str, Workload] = {**BUILTIN, **cfg.workloads}
    for w in listed.values():
        image = "-" if w.image is None else f"{w.image[0]}x{w.image[1]}"
        concurrency = "pairs, in turn" if w.paired else "-" if w.concurrency is None else f"{w.concurrency} at once"
        tokens = (numbers.figure_text(w.input_tokens, "int"), numbers.figure_text(w.max_tokens, "int"))
        table.add_row(shown(w.name), *tokens, shown(", ".join(w.tasks)), concurrency, image)
    Console().print(table)
