"""``tokenpace presets``: the well-known providers that endpoint names and config tables can refer to."""

from __future__ import annotations

import click


@click.command("presets")
def presets_command() -> None:
    """List the well-known providers that endpoint names and config tables can refer to."""
    from tokenpace.board import terminal
    from tokenpace.board.console import Console
    from tokenpace.config.presets import PRESETS

    terminal.print_presets(Console(), list(PRESETS.values()))
