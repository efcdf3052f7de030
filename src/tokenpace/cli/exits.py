"""How a command ends: a TokenpaceError as one line and its exit code, Ctrl-C and SIGTERM as theirs."""

from __future__ import annotations

import signal
import sys
from typing import Any

import click

from tokenpace.board.numbers import printable
from tokenpace.cli.signals import INTERRUPTED, TERMINATED, Terminated, raise_terminated
from tokenpace.errors import ConfigError, TokenpaceError


class _Mistake(click.ClickException):
    exit_code = ConfigError.exit_code  # 2, as click's own usage errors: fix the command or the file


class _CouldNotWork(click.ClickException):
    exit_code = TokenpaceError.exit_code  # 3: tokenpace could not work (database, vocabulary)


class ExitCodeGroup(click.Group):
    """The command group that gives every command its exit codes (see each command's help)."""

    def invoke(self, ctx: click.Context) -> Any:
        # Without this, SIGTERM killed the process silently mid-preparation, and Ctrl-C reached click, which
        # printed "Aborted!" and exited 1.
        previous = signal.signal(signal.SIGTERM, raise_terminated)
        try:
            return super().invoke(ctx)
        except TokenpaceError as exc:
            # A message may quote a config's or a server's text: its control characters are shown, not obeyed.
            message = printable(str(exc))
            raise (_Mistake if exc.exit_code == _Mistake.exit_code else _CouldNotWork)(message) from None
        except KeyboardInterrupt:
            _stop(INTERRUPTED, "interrupted (Ctrl-C)")
        except Terminated:
            _stop(TERMINATED, "stopped (SIGTERM)")
        finally:
            if signal.getsignal(signal.SIGTERM) is raise_terminated:  # not after _stop: the exit is on its way
                signal.signal(signal.SIGTERM, previous)


def _stop(code: int, line: str) -> None:
    """One line and the signal's exit code, a second signal meanwhile ignored (it would print a traceback)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    click.echo(line, err=True)  # not rich: importing it would delay the exit
    sys.exit(code)
