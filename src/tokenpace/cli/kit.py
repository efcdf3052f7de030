"""What every command shares: one-line errors with their exit codes, finite numbers, stderr, the event loop.

Every command stops on Ctrl-C with exit 130 and on SIGTERM with exit 143, one line on stderr, also while it
prepares (reads a config, a corpus or a dataset file, builds prompts): SIGTERM raises :class:`Terminated` in
the main thread as SIGINT raises KeyboardInterrupt, and ``Group.invoke`` turns either into the exit code. A
command that measures replaces the handler inside its event loop and stops on its own terms (what was taken
is kept), then exits with the same codes.
"""

from __future__ import annotations

import math
import signal
import sys
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

    from tokenpace.load.run import event_loop_factory

    handler = signal.getsignal(signal.SIGTERM)
    terminated: list[bool] = []

    async def guarded() -> T:
        # Inside the loop SIGTERM cancels the main task, as asyncio.Runner does on SIGINT, so its cleanup runs
        # (raised from a signal handler mid-loop, Terminated could leave a server waiting on its connections).
        # A command that handles SIGTERM itself replaces this handler with its own.
        if handler is _on_sigterm:
            task = asyncio.current_task()
            assert task is not None

            def on_sigterm() -> None:
                terminated.append(True)
                task.cancel()

            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, on_sigterm)
        return await main()

    try:
        with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
            return runner.run(guarded())
    except asyncio.CancelledError:
        if terminated:
            raise Terminated from None
        raise
    finally:  # a loop that handled SIGTERM itself sets it back to the default (a silent kill) when it closes
        signal.signal(signal.SIGTERM, handler)


class _Mistake(click.ClickException):
    exit_code = ConfigError.exit_code  # 2, as click's own usage errors: fix the command or the file


class _Stopped(click.ClickException):
    exit_code = TokenpaceError.exit_code  # 3: tokenpace could not work (database, vocabulary)


INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it
TERMINATED = 143  # 128 + SIGTERM


class Terminated(BaseException):
    """SIGTERM arrived: raised in the main thread wherever it is, so preparation stops as Ctrl-C stops it."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated


class Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        # Without this, SIGTERM killed the process silently mid-preparation, and Ctrl-C reached click, which
        # printed "Aborted!" and exited 1.
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
        try:
            return super().invoke(ctx)
        except TokenpaceError as exc:
            # A message may quote a config's or a server's text: its control characters are shown, not obeyed.
            message = printable(str(exc))
            raise (_Mistake if exc.exit_code == _Mistake.exit_code else _Stopped)(message) from None
        except KeyboardInterrupt:
            _stop(INTERRUPTED, "interrupted (Ctrl-C)")
        except Terminated:
            _stop(TERMINATED, "stopped (SIGTERM)")
        finally:
            if signal.getsignal(signal.SIGTERM) is _on_sigterm:  # not after _stop: the exit is on its way
                signal.signal(signal.SIGTERM, previous)


def _stop(code: int, line: str) -> None:
    """One line and the signal's exit code, a second signal meanwhile ignored (it would print a traceback)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    click.echo(line, err=True)  # not rich: importing it would delay the exit
    sys.exit(code)


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
