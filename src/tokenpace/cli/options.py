"""Options more than one command takes, each declared once here; numbers that must be finite; option groups.

A command's own help words may differ (`run` measures, `bench` load-tests), so an option shared with different
words takes them as ``help``; its names, type and default are the ones declared here. Only click is imported:
`tokenpace --help` must stay light (tests/cli/test_imports.py).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from tokenpace.config.presets import PROTOCOLS
from tokenpace.measure.bounds import MAX_REQUEST_S

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

SEED_MAX = 2**31 - 1  # runs.seed is an INTEGER column: 32 bits on PostgreSQL
DEFAULT_WORKLOAD = "1k"  # workload.DEFAULT's name, without loading the prompt builder for --help
STORE_HELP = "SQLite file or postgresql:// URL (default: the user data directory)."


class Finite(click.FloatRange):
    """A FloatRange that also refuses nan and inf (each passes a plain range check, then breaks a timer)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


def option_group(into: str, group: type[Any], *options: Decorator) -> Decorator:
    """The values of ``options`` reach the command as one frozen ``group`` (a dataclass whose fields are the
    options' names), in its keyword ``into``; --help lists the options in the order given, where the group is.

    A field with a default may have no option: a command that does not offer it gets the default (one group
    type serves `run` and `bench`, each with options the other lacks)."""
    fields = dataclasses.fields(group)
    names = [field.name for field in fields]
    needed = [f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def called(**values: Any) -> Any:
            grouped = group(**{name: values.pop(name) for name in added})  # the options' values only
            return command(**values, **{into: grouped})

        declared = len(getattr(command, "__click_params__", []))
        decorated: Callable[..., Any] = called
        for option in reversed(options):
            decorated = option(decorated)
        added = [str(p.name) for p in getattr(decorated, "__click_params__", [])[declared:]]
        if not set(needed) <= set(added) <= set(names) or len(set(added)) != len(added):
            raise TypeError(f"{group.__name__}'s fields {names} are not its options' names {added}")
        return decorated

    return decorate


def config(help: str = "TOML file declaring providers and models.") -> Decorator:
    return click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), help=help)


def store(help: str = STORE_HELP, *, required: bool = False, from_env: bool = False) -> Decorator:
    """--db; ``from_env``: TOKENPACE_DB when it is not given (an agent's machine sets it once)."""
    return click.option("--db", required=required, envvar="TOKENPACE_DB" if from_env else None, help=help)


def as_json(help: str) -> Decorator:
    return click.option("--json", "as_json", is_flag=True, help=help)


def quiet(help: str, *aliases: str) -> Decorator:
    return click.option("-q", "--quiet", *aliases, "quiet", is_flag=True, help=help)


def listen_host(help: str) -> Decorator:
    return click.option("--host", default="127.0.0.1", show_default=True, help=help)


def listen_port(default: int, help: str) -> Decorator:
    return click.option("--port", default=default, show_default=True, type=click.IntRange(0, 65535), help=help)


def grace(default: float, help: str) -> Decorator:
    return click.option("--grace", default=default, show_default=True, type=Finite(min=0), help=help)


def region(help: str, *, required: bool = False) -> Decorator:
    return click.option("--region", required=required, help=help)


def api_key_env(help: str = "Name of the environment variable holding the API key.") -> Decorator:
    return click.option("--api-key-env", help=help)


# The endpoint the command line describes, when it is not a name from --config (cli/target.py builds it).
base_url = click.option("--base-url", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1.")
model = click.option("--model", help="Model name to request (with --base-url).")
protocol = click.option("--protocol", type=click.Choice(PROTOCOLS), default="openai-chat", show_default=True,
                        help="Wire protocol (with --base-url or --sim).")  # fmt: skip
provider = click.option("--provider", help="Provider label (default: the URL's host).")
headers = click.option("--header", "headers", multiple=True, help="Extra request header 'Name: value' (repeatable).")


def use_sim(help: str) -> Decorator:
    return click.option("--sim", "use_sim", is_flag=True, help=help)


# How many requests, how many at once, of which prompts.
def requests(help: str, type: click.IntRange, default: int | None = None) -> Decorator:
    return click.option("-n", "--requests", default=default, show_default=default is not None, type=type, help=help)


def concurrency(help: str, default: int | None = None) -> Decorator:
    return click.option("-c", "--concurrency", default=default, show_default=default is not None,
                        type=click.IntRange(1, 4096), help=help)  # fmt: skip


def workload(help: str, default: str | None = DEFAULT_WORKLOAD) -> Decorator:
    return click.option("-w", "--workload", "workload_name", default=default, show_default=default is not None,
                        help=help)  # fmt: skip


max_tokens = click.option("--max-tokens", type=click.IntRange(min=1), help="Override the workload's output cap.")


def corpus(help: str) -> Decorator:
    return click.option("--corpus", type=click.Path(file_okay=False, path_type=Path), help=help)


def seed(help: str) -> Decorator:
    return click.option("--seed", type=click.IntRange(0, SEED_MAX), help=help)


# How long a request may take.
def first_token_timeout(help: str) -> Decorator:
    return click.option("--first-token-timeout", default=60.0, show_default=True, type=Finite(min=0, min_open=True),
                        help=help)  # fmt: skip


# At most a day: measure/bounds.py bounds every stored time by it.
total_timeout = click.option("--total-timeout", default=300.0, show_default=True,
                             type=Finite(min=0, min_open=True, max=MAX_REQUEST_S),
                             help="Seconds a whole request may take (at most a day).")  # fmt: skip
