"""What every command shares: one-line errors with their exit codes, finite numbers, stderr, the event loop."""

from __future__ import annotations

import math
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from tokenpace.board.numbers import printable
from tokenpace.errors import ConfigError, StoreError, TokenpaceError

if TYPE_CHECKING:
    from tokenpace.board.console import Console
    from tokenpace.store.database import Store

T = TypeVar("T")

_stderr: list[Console] = []


def stderr() -> Console:
    """rich's Console on stderr, made on first use (importing rich costs more than all of `--help`)."""
    if not _stderr:
        from tokenpace.board.console import Console

        _stderr.append(Console(stderr=True))
    return _stderr[0]


class _Stderr:
    """``err.print(...)`` in any command, with the Console made only when something is printed."""

    def __getattr__(self, name: str) -> Any:
        return getattr(stderr(), name)


err = cast("Console", _Stderr())  # where a real Console must be passed (a context manager), use stderr()


def run_async(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    import asyncio

    from tokenpace.measure.run import event_loop_factory

    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        return runner.run(main())


class _Mistake(click.ClickException):
    exit_code = ConfigError.exit_code  # 2, as click's own usage errors: fix the command or the file


class _Stopped(click.ClickException):
    exit_code = TokenpaceError.exit_code  # 3: tokenpace could not work (database, vocabulary)


class Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except TokenpaceError as exc:
            # A message may quote a config's or a server's text: its control characters are shown, not obeyed.
            message = printable(str(exc))
            raise (_Mistake if exc.exit_code == _Mistake.exit_code else _Stopped)(message) from None


class Finite(click.FloatRange):
    """A FloatRange that also refuses nan and inf (each passes a plain range check, then breaks a timer)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


def close_store(store: Store) -> None:
    """Close the store; records it could not write go to its rescue file (Store.rescue_path), not nowhere.

    Whether or not closing raises: under serve the sampler's own flushes have already reported (and cleared)
    the write errors, so only ``Store.unsaved`` and ``Store.unsaved_runs`` still tell of records the database
    does not hold.
    """
    problem: StoreError | None = None
    try:
        store.close()
    except StoreError as exc:
        problem = exc
    if store.unsaved or store.unsaved_runs:
        count = store.rescue_unsaved(str(problem) if problem else "the store had not taken it when tokenpace stopped")
        why = f"{problem}; " if problem else ""
        raise StoreError(f"{why}{count} records the store did not take were written to {store.rescue_path}")
    if problem is not None:
        raise problem
