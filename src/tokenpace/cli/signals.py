"""Ctrl-C and SIGTERM: every command stops on either, with exit 130 or 143 and one line on stderr.

Also while it prepares (reads a config, a corpus or a dataset file, builds prompts): SIGTERM raises
:class:`Terminated` in the main thread as SIGINT raises KeyboardInterrupt, and the command group (exits.py)
turns either into the exit code. Inside :func:`run_async`'s event loop SIGTERM cancels the main task instead,
as asyncio.Runner does on SIGINT, so the command's cleanup runs (raised from a signal handler mid-loop,
Terminated could leave a server waiting on its connections). A command that keeps what it measured (run,
bench) takes the stop from :func:`run_stoppable`, writes what it has, then exits with the same code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

Returned = TypeVar("Returned")

INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it
TERMINATED = 143  # 128 + SIGTERM
SAME_SIGNAL_S = 1.0  # a SIGTERM this soon after the first is the first again (uv's copy of its group's)
CODES: dict[int, int] = {signal.SIGINT: INTERRUPTED, signal.SIGTERM: TERMINATED}


class Terminated(BaseException):
    """SIGTERM arrived: raised in the main thread wherever it is, so preparation stops as Ctrl-C stops it."""


def raise_terminated(signum: int, frame: object) -> None:
    """The main thread's SIGTERM handler while a command runs (the group installs it)."""
    raise Terminated


@dataclasses.dataclass(frozen=True)
class Stop:
    """How a signal stopped a measuring loop: the exit code it ends the command with, and the words for it."""

    code: int
    said: str


def stop_of(signum: int) -> Stop:
    """How ``signum`` (SIGINT or SIGTERM) stops a command."""
    return Stop(CODES[signum], "stopped (SIGTERM)" if signum == signal.SIGTERM else "interrupted (Ctrl-C)")


@contextlib.contextmanager
def cancelled_by(*signums: int, heard: list[int] | None = None, repeat_s: float = 0.0) -> Iterator[None]:
    """While inside, each of these signals cancels the running task (noted in ``heard``); the handlers are removed
    on the way out: left behind (uvloop does) they point at a closed loop, and SIGTERM would no longer stop a
    process that ran a command in-process (a test run). A signal within ``repeat_s`` of the first is that one
    again, not a second: `uv run` passes SIGTERM on to a process that had it from its group already."""
    import asyncio
    import time

    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    assert task is not None
    first: list[float] = []

    def cancel(signum: int) -> None:
        if first and time.monotonic() - first[0] <= repeat_s:
            return
        first.append(time.monotonic())
        if heard is not None:
            heard.append(signum)
        task.cancel()

    for signum in signums:
        loop.add_signal_handler(signum, cancel, signum)
    try:
        yield
    finally:
        for signum in signums:
            loop.remove_signal_handler(signum)


def run_async(main: Callable[[], Coroutine[Any, Any, Returned]]) -> Returned:
    """Run ``main`` on a fresh event loop (uvloop where installed); SIGTERM cancels it and raises Terminated."""
    import asyncio

    from tokenpace.load.interpreter import run_loop

    handler = signal.getsignal(signal.SIGTERM)
    heard: list[int] = []

    async def guarded() -> Returned:
        if handler is not raise_terminated:  # not under the command group: SIGTERM is left as it was
            return await main()
        # `uv run` passes on a SIGTERM its group had already: that copy must not cut short what the first asked,
        # a stopped bench's worker processes ending their requests as samples (load/workers.py).
        with cancelled_by(signal.SIGTERM, heard=heard, repeat_s=SAME_SIGNAL_S):
            return await main()

    try:
        return run_loop(guarded())
    except asyncio.CancelledError:
        if heard:
            raise Terminated from None
        raise
    finally:  # a loop that handled SIGTERM sets it back to the default (a silent kill) when it closes
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN:  # ignored: a stop heard is being carried out
            signal.signal(signal.SIGTERM, handler)


def run_stoppable(main: Callable[[], Coroutine[Any, Any, Returned]]) -> Returned | Stop:
    """:func:`run_async`, but Ctrl-C or SIGTERM returns how it stopped rather than raising, so a command that
    measures still stores, prints and writes what was taken before it exits with :attr:`Stop.code`."""
    import asyncio

    try:
        return run_async(main)
    except Terminated:
        return Stop(TERMINATED, "stopped (SIGTERM)")
    except (KeyboardInterrupt, asyncio.CancelledError):
        return Stop(INTERRUPTED, "interrupted")
