"""Child processes (the page renderer, simulators): deaf to Ctrl-C and SIGTERM, which only their parent answers.

A terminal's Ctrl-C goes to its whole foreground process group, and so does a supervisor's SIGTERM: every
child gets it too. A Python child would raise KeyboardInterrupt wherever it was and print its traceback, or
die mid-render or mid-stream while the parent, which gives runs in flight their grace, still needs it. So a
child ignores both and stops when its parent closes it, or at once when its parent is gone (killed outright).

Usage: start the child inside :func:`deaf_children` and call :func:`child_started` first thing in it (a
``ProcessPoolExecutor``'s initializer, a ``multiprocessing.Process``'s target). Stop it by telling it (a pool's
shutdown, a pipe closed, an event set) or with ``kill()``: ``terminate()`` sends the SIGTERM it ignores.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from collections.abc import Iterator

STOPS = frozenset({signal.SIGINT, signal.SIGTERM})


@contextlib.contextmanager
def deaf_children() -> Iterator[None]:
    """Children started inside begin with SIGINT and SIGTERM ignored, from the main thread (else blocked).

    An ignored signal stays ignored through fork and exec, so a Ctrl-C while a child's interpreter starts and
    imports (before it could ignore anything itself) never reaches it; Python, started with SIGINT ignored,
    installs no KeyboardInterrupt either. The signal mask did not survive multiprocessing's spawn: a Ctrl-C in
    that window printed the child's traceback. Only the main thread may set a disposition; elsewhere the mask
    is all there is. This process ignores both for as long as the start takes (milliseconds).
    """
    before = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    main = threading.current_thread() is threading.main_thread()
    handlers = {signum: signal.signal(signum, signal.SIG_IGN) for signum in STOPS} if main else {}
    try:
        yield
    finally:
        for signum, handler in handlers.items():  # None: one set outside Python, left as the default
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def child_started() -> None:
    """In the child: ignore SIGINT and SIGTERM from now on, and exit when the parent process is gone."""
    for signum in STOPS:
        signal.signal(signum, signal.SIG_IGN)  # a pending one is discarded here
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
    parent = multiprocessing.parent_process()
    if parent is not None:  # a parent killed outright (kill -9) must not leave its child behind
        threading.Thread(target=_exit_with, args=(parent.sentinel,), daemon=True, name="parent watch").start()


def _exit_with(sentinel: int) -> None:
    multiprocessing.connection.wait([sentinel])
    os._exit(0)
