"""``tokenpace compare RUN_A RUN_B``: did run B regress against run A? For CI: the exit status says it.

Exit 0 when no headline figure of B is worse than A's beyond the threshold, 1 when one is, 2 when a file is
not a result document (or the runs share no load level). Only click is imported at the top: `tokenpace
--help` must stay light (tests/cli/test_imports.py).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import click

from tokenpace.cli import options as opt
from tokenpace.errors import ConfigError

MAX_THRESHOLD = 10.0  # 1000 %: beyond it nothing could ever regress, which is a typo, not a setting
_THRESHOLD = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(%?)\s*$")


def parse_threshold(text: str) -> float:
    """``10%`` or ``0.1`` as the fraction 0.1 (0 to 10: a relative change of up to 1000 %)."""
    m = _THRESHOLD.match(text)
    value = float(m[1]) / (100 if m[2] else 1) if m else math.nan
    if not 0 <= value <= MAX_THRESHOLD:
        raise ConfigError(f"--threshold {text!r}: give a relative change such as 10% or 0.1 (0 to 1000%)")
    return value


@click.command("compare")
@click.argument("run_a", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("run_b", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--threshold", default="10%", show_default=True,
              help="A figure counts as worse or better only past this relative change (10% or 0.1).")  # fmt: skip
@opt.as_json("Print the comparison as JSON.")
def compare_command(run_a: Path, run_b: Path, threshold: str, as_json: bool) -> None:
    """Compare two results of `tokenpace bench` (B against A, load level by load level).

    Exit status: 0 when B held up, 1 when a headline figure of B is worse beyond --threshold, 2 for a file that
    is not a result or runs with no load level in common.
    """
    import json

    from tokenpace.board.compare import compare, comparison_dict
    from tokenpace.board.console import Console
    from tokenpace.board.loadtable import print_comparison
    from tokenpace.load.results import read_result

    limit = parse_threshold(threshold)
    a, b = read_result(run_a), read_result(run_b)
    comparison = compare(a, b, limit)
    if comparison.verdict == "incomparable":
        in_a, in_b = (", ".join(p.load.describe() for p in r.points) or "none" for r in (a, b))
        raise ConfigError(
            f"{run_a} and {run_b} share no load level (A: {in_a}; B: {in_b}): compare runs of the same "
            "concurrency or rate"
        )
    if as_json:
        click.echo(json.dumps(comparison_dict(comparison), indent=2))
    else:
        print_comparison(Console(), comparison)
    if comparison.verdict == "regressed":
        click.get_current_context().exit(1)
