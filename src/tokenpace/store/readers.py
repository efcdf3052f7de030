"""Connections for reads, apart from the one writer: a long leaderboard never holds up a write or a budget check.

SQLite in WAL mode lets readers run beside its one writer, each on the snapshot committed when its read began;
PostgreSQL readers are autocommit connections, so no read leaves a transaction (and its locks) open. At most
``size`` connections read at once, the rest of the readers wait for one; idle ones are kept for the next read.
A connection lost to a server restart or a dropped link is opened again, once, as the writer's is.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

from tokenpace.store.dialects import Connection

T = TypeVar("T")
MAX_READERS = 4  # the web's view threads (2), the sampler and a CSV export: more would only queue on the disk


class Readers:
    """A small pool of read connections: ``run(op)`` calls ``op`` with one of them, on the caller's thread."""

    def __init__(self, connect: Callable[[], Connection], lost: tuple[type[Exception], ...], size: int = MAX_READERS):
        self._connect = connect
        self._lost = lost
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    def run(self, op: Callable[[Connection], T]) -> T:
        """``op`` on an idle (or new) connection; a connection that raised is closed rather than reused."""
        with self._slots:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                conn = self._connect()
            try:
                result = op(conn)
            except self._lost:
                _close(conn)
                if not getattr(conn, "closed", False):  # the link is fine: the statement itself failed
                    raise
                conn = self._connect()
                try:
                    result = op(conn)
                except BaseException:
                    _close(conn)
                    raise
            except BaseException:
                _close(conn)
                raise
            with self._lock:
                if self._closed:
                    _close(conn)
                else:
                    self._idle.append(conn)
            return result

    def close(self) -> None:
        """Close the idle connections; one still reading is closed when its read ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            _close(conn)


class WriteOrder:
    """Writes queued and writes finished (committed, kept in ``Store.unsaved`` or rescued), counted so that a
    read can wait for the ones queued before it: reads apart, but never behind what the caller already wrote."""

    def __init__(self) -> None:
        self._queued = self._done = 0
        self._changed = threading.Condition()

    def queue(self, write: Callable[[], None]) -> Callable[[], None]:
        """Count a write as queued; returns it wrapped to count itself finished, however it ends."""
        with self._changed:
            self._queued += 1

        def counted() -> None:
            try:
                write()
            finally:
                with self._changed:
                    self._done += 1
                    self._changed.notify_all()

        return counted

    def wait_below(self, pending: int) -> None:
        """Until fewer than ``pending`` writes are queued and not finished."""
        with self._changed:
            self._changed.wait_for(lambda: self._queued - self._done < pending)

    def wait(self) -> None:
        """Until every write queued so far has finished."""
        with self._changed:
            queued = self._queued
            self._changed.wait_for(lambda: self._done >= queued)


def _close(conn: Connection) -> None:
    with contextlib.suppress(Exception):  # closing what failed: its own error is the one worth raising
        conn.close()
