"""One `tokenpace serve` per store: a lock the serving process holds for its life, and who holds it.

Two serves on one store would both run the whole schedule: every provider measured twice as often as its
plan says, and twice the load. So serve takes this lock before it starts anything, and a second one is refused
in one line that names the store and the process serving it.

SQLite: ``flock`` on a file beside the database (``NAME.serve.lock``), which says who holds it; the kernel lets
go when the process ends, however it ends (a lock file by its mere presence would outlive a killed process).
PostgreSQL: a session advisory lock (``pg_try_advisory_lock``) keyed by the schema, on a connection of its own
named after the holder; the server lets go when that connection ends. Agents and one-off runs take no lock:
they measure what they are given, not a schedule.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from pathlib import Path
from typing import Any

from tokenpace.errors import ConfigError, StoreError
from tokenpace.store.database import Store
from tokenpace.store.dialects import hide_password, say

SHOWN_MAX = 200  # characters of a holder's words quoted: the file or the row is anyone's to write


class ServingLock:
    """The store's serving lock, held until :meth:`close` (or the process's end)."""

    def __init__(self, store: Store, url: str, holder: str) -> None:
        """Take the lock of the store opened from ``url`` for ``holder`` (words naming this process), or raise
        ConfigError naming the process that holds it."""
        self._file: int | None = None
        self._conn: Any = None
        self._key = 0
        if store.dialect == "sqlite":
            self._take_file(Path(store.url.removeprefix("sqlite://")), store.url, holder)
        else:
            self._take_advisory(url, store.url, holder)

    def _take_file(self, db: Path, shown: str, holder: str) -> None:
        path = db.with_name(db.name + ".serve.lock")
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited: a child must not keep it
        except OSError as exc:
            raise StoreError(f"cannot open {path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.pread(fd, SHOWN_MAX, 0).decode(errors="replace")
            os.close(fd)
            raise _taken(shown, other) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder.encode(), 0)
        self._file = fd

    def _take_advisory(self, url: str, shown: str, holder: str) -> None:
        import psycopg

        secrets = hide_password(url)[1]
        try:
            conn = psycopg.connect(url, autocommit=True, application_name=holder[:63])  # NAMEDATALEN - 1
            (schema,) = conn.execute("SELECT current_schema()").fetchone() or ("",)
            key = int.from_bytes(hashlib.sha256(f"tokenpace serve {schema}".encode()).digest()[:8], signed=True)
            (taken,) = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone() or (False,)
            if not taken:
                # A bigint key shows in pg_locks as its high and low 32 bits (classid, objid), objsubid 1.
                row = conn.execute(
                    "SELECT a.application_name, a.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                    "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.classid = %s "
                    "AND l.objid = %s AND l.database = (SELECT oid FROM pg_database WHERE datname = "
                    "current_database())",
                    ((key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF),
                ).fetchone()
                conn.close()
                raise _taken(shown, f"{row[0] or 'a process'} (backend pid {row[1]})" if row else "")
        except psycopg.Error as exc:
            raise StoreError(say(shown, exc, secrets)) from None
        self._conn, self._key = conn, key

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._file, 0)
            os.close(self._file)  # the lock goes with the descriptor
            self._file = None
        if self._conn is not None:
            with contextlib.suppress(Exception):  # a closed connection's lock goes when its backend ends, later
                self._conn.execute("SELECT pg_advisory_unlock(%s)", (self._key,))
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None


def _taken(shown: str, holder: str) -> ConfigError:
    words = " ".join(holder.split())[:SHOWN_MAX]
    who = f" ({words})" if words else ""
    return ConfigError(f"{shown} is already served by another `tokenpace serve`{who}: stop it, or give another --db")
