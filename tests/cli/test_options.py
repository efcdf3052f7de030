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
    assert len(bench.params) == 33  # every flag and the argument, as before the groups, and --workers


@dataclasses.dataclass(frozen=True)
class Wide:
    first: int
    second: str = "kept"


def test_a_field_with_a_default_may_go_without_an_option() -> None:
    """One group type serves two commands, one of them offering an option the other lacks (run's --plan)."""

    @click.command()
    @opt.option_group("wide", Wide, click.option("--first", default=1, type=int))
    def narrow(wide: Wide) -> None:
        click.echo(repr(wide))

    assert CliRunner().invoke(narrow, ["--first", "2"]).output.strip() == "Wide(first=2, second='kept')"
    with pytest.raises(TypeError, match="are not its options' names"):
        opt.option_group("wide", Wide, click.option("--second", help="The other."))(lambda **_: None)


def test_a_groups_value_goes_by_its_options_only() -> None:
    """A command's own parameter named as a group's field without an option stays the command's."""

    @click.command()
    @opt.option_group("wide", Wide, click.option("--first", default=1, type=int))
    @click.option("--second", default="own")
    def command(wide: Wide, second: str) -> None:
        click.echo(f"{wide!r} {second}")

    assert CliRunner().invoke(command, []).output.strip() == "Wide(first=1, second='kept') own"


def test_run_and_sim_take_a_value_per_group() -> None:
    from tokenpace.cli.run import run
    from tokenpace.cli.sim import sim_command

    assert run.callback is not None and sim_command.callback is not None
    annotations = run.callback.__wrapped__.__annotations__  # type: ignore[attr-defined]
    assert list(annotations) == ["target", "size", "prompts", "sending", "output", "return"]
    assert len(run.params) == 28  # every flag and the argument, as before the groups
    assert list(sim_command.callback.__wrapped__.__annotations__) == ["host", "port", "root", "settings", "return"]  # type: ignore[attr-defined]
    assert len(sim_command.params) == 20  # --max-requests-per-s (issue 29, item 5) and --root (issue 30) joined them


def test_bench_names_one_endpoint_as_run_names_many() -> None:
    """bench's ENDPOINT fills the endpoints' group run fills with ENDPOINTS, and a second name is still refused."""
    from tokenpace.cli import main

    assert (
        "Usage: tokenpace bench [OPTIONS] [ENDPOINT]\n"
        in CliRunner().invoke(main, ["bench", "--help"], prog_name="tokenpace").output
    )
    result = CliRunner().invoke(main, ["bench", "sim/a", "sim/b"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == "Error: Got unexpected extra argument (sim/b)"
