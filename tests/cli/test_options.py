"""Option groups: a command takes one frozen value per group, its options listed in --help where it stands."""

from __future__ import annotations

import dataclasses

import click
import pytest
from click.testing import CliRunner

from tokenpace.cli import options as opt


@dataclasses.dataclass(frozen=True)
class Pair:
    first: int
    second: str | None


PAIR = opt.option_group(
    "pair", Pair,
    click.option("--first", default=1, type=int, help="The first."),
    click.option("--second", help="The second."),
)  # fmt: skip


@click.command()
@click.option("--before", is_flag=True, help="Declared above the group.")
@PAIR
@click.option("--after", is_flag=True, help="Declared below it.")
def command(before: bool, pair: Pair, after: bool) -> None:
    click.echo(f"{before} {pair!r} {after}")


def test_a_group_reaches_the_command_as_one_value_between_the_others() -> None:
    result = CliRunner().invoke(command, ["--second", "b", "--after"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "False Pair(first=1, second='b') True"
    shown = CliRunner().invoke(command, ["--help"]).output.splitlines()
    listed = [line.split()[0] for line in shown if line.startswith("  --")]
    assert listed == ["--before", "--first", "--second", "--after", "--help"]


def test_a_group_whose_fields_are_not_its_options_is_refused_when_declared() -> None:
    with pytest.raises(TypeError, match="are not its options' names"):
        opt.option_group("pair", Pair, click.option("--first", type=int, help="Only one."))(lambda **_: None)


def test_bench_takes_a_value_per_group() -> None:
    from tokenpace.cli.bench import bench

    assert bench.callback is not None
    assert list(bench.callback.__wrapped__.__annotations__) == [  # type: ignore[attr-defined]
        "target", "shape", "levels", "objectives", "prompts", "sending", "output", "return",
    ]  # fmt: skip
    assert len(bench.params) == 32  # every flag and the argument, as before the groups
