"""Which databases the store speaks: how to connect to each, and the driver errors that mean what.

SQLite comes with Python; PostgreSQL's driver is the optional extra ``tokenpace[postgresql]``, imported only
when a ``postgresql://`` store is opened.
"""

from __future__ import annotations

import dataclasses
import re
import sqlite3
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from tokenpace.errors import StoreError


class Connection(Protocol):
    """What both sqlite3 and psycopg connections offer, all the store needs."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Any: ...
    def commit(self) -> None: ...
    def rollback(self) -> None: ...
    def close(self) -> None: ...


LOCK_PROBE_S = 0.1  # how long /health's probe waits for SQLite's write lock before calling the store busy


@dataclasses.dataclass(frozen=True, slots=True)
class Dialect:
    name: str  # "sqlite" or "postgresql": for the rare SQL the two spell differently
    connect: Callable[[], Connection]
    placeholder: str  # SQL here is written with "?"; PostgreSQL wants "%s"
    lock_migrations: str  # opens the migration transaction, so that two processes cannot both migrate
    errors: tuple[type[Exception], ...] = ()  # the driver's own errors, foreign like sqlite3's
    lost: tuple[type[Exception], ...] = ()  # the driver's errors for a lost connection, which is reopened
    refused: tuple[type[Exception], ...] = ()  # the driver's errors for a record's own data: retrying cannot help
    file: Path | None = None  # the SQLite file; the rescue file goes beside it
    read: Callable[[], Connection] | None = None  # a connection for reads only (readers.py); None: connect's
    begin: str = ""  # opens a write's transaction where the connection autocommits (SQLite's, by our choice)
    locked: Callable[[], bool] | None = None  # whether a write would wait on another's lock now; None: never asked


def sqlite_dialect(path: Path) -> Dialect:
    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None)  # autocommit: transactions are ours to open
        conn.execute("PRAGMA busy_timeout = 5000")
        # Switching a new file to WAL while another process does the same answers "locked" at once, without
        # waiting for the busy timeout (seen with six processes opening one new file), so wait here instead.
        for attempt in range(100):
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 99:
                    raise
                time.sleep(0.05)
        conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    def read() -> sqlite3.Connection:
        # WAL (set by the writer's connection, and kept in the file) lets this read beside the writer. The pool
        # hands a connection to one thread at a time, but not always the thread that opened it.
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute("PRAGMA query_only = ON")  # a reader never writes: the one writer stays the only one
        return conn

    def locked() -> bool:
        # The write lock tried and let go at once. 0.1 s lets our own writer's commits (milliseconds) pass: a
        # lock held longer is another process's, and every write queued here waits behind it.
        conn = sqlite3.connect(path, isolation_level=None, timeout=LOCK_PROBE_S)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                return True
            raise
        finally:
            conn.close()
        return False

    return Dialect(
        "sqlite", connect, "?", "BEGIN IMMEDIATE", file=path, read=read, begin="BEGIN IMMEDIATE", locked=locked
    )


def postgres_dialect(url: str) -> Dialect:
    # An advisory lock, because PostgreSQL's CREATE TABLE IF NOT EXISTS is not safe against a concurrent one.
    lock = "SELECT pg_advisory_xact_lock(7031990417)"  # any fixed number: tokenpace's migration lock
    try:
        import psycopg  # imported here: the driver is the optional extra tokenpace[postgresql]
    except ImportError:
        raise StoreError(
            "a postgresql:// store needs the PostgreSQL driver: run with `uv run --extra postgresql ...` "
            "or `pip install 'tokenpace[postgresql]'`"
        ) from None
    lost = (psycopg.OperationalError, psycopg.InterfaceError)
    refused = (psycopg.DataError, psycopg.IntegrityError)
    connect = partial(psycopg.connect, url, autocommit=False)
    read = partial(psycopg.connect, url, autocommit=True)  # each read its own snapshot; no transaction left open
    return Dialect("postgresql", connect, "%s", lock, (psycopg.Error,), lost, refused, read=read)


def say(shown: str, exc: BaseException, secrets: Sequence[str]) -> str:
    """``SHOWN: error`` in one line, every spelling of the password blanked out: how the store's errors read."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    for secret in secrets:
        text = text.replace(secret, "***")
    return f"{shown}: {text}"


# A libpq keyword/value string (``host=... dbname=... password=...``): its first keyword, at its start or after a space.
_KEYWORDS = r"host|hostaddr|port|dbname|user|password|passfile|service|sslmode|options|connect_timeout"
_KEYWORD_FORM = re.compile(rf"(?i)(?:^|\s)(?:{_KEYWORDS})\s*=")
PLAIN_URL = "postgresql://USER[:PASSWORD]@HOST[:PORT]/DB"


def refuse_misread(url: str) -> None:
    """StoreError, in one line showing nothing of ``url``, for a store string whose password would be misread.

    A keyword/value string is no file path (taken as one, it made a SQLite file named after the password). In a
    URL whose user or password holds '@', '/', '?' or '#' unescaped, libpq splits the user from the host at
    the first '@' and Python at the last, so an error naming the host printed the password's tail."""
    if "://" not in url and _KEYWORD_FORM.search(url):
        raise StoreError(f"a keyword connection string (host=... password=...) is not taken: give {PLAIN_URL}")
    scheme, _, rest = url.partition("://")
    # the userinfo's '@' comes before the first '=': an '@' after it is a query parameter's (user=me@host)
    eq = rest.find("=")
    at = rest.rfind("@", 0, eq if eq >= 0 else len(rest))
    if scheme in ("postgresql", "postgres") and at >= 0 and any(c in rest[:at] for c in "@/?#"):
        raise StoreError(
            "the store URL (not shown: it holds a password) has '@', '/', '?' or '#' in its user or password:"
            " percent-encode them (%40, %2F, %3F, %23)"
        )


def hide_password(url: str) -> tuple[str, list[str]]:
    """The URL with its password masked, and every spelling of that password (userinfo or ``?password=``);
    StoreError for a string whose password would be misread (:func:`refuse_misread`)."""
    refuse_misread(url)
    try:
        parts = urlsplit(url)
    except ValueError:  # unparseable: show nothing after the scheme
        return url.partition("://")[0] + "://***", [url]
    found = [parts.password or ""] + [v for k, v in parse_qsl(parts.query) if k.lower() == "password"]
    secrets = sorted({s for raw in found if raw for s in (raw, unquote(raw))}, key=len, reverse=True)
    user, _, host = parts.netloc.rpartition("@")
    netloc = f"{user.partition(':')[0]}:***@{host}" if parts.password is not None else parts.netloc
    query = re.sub(r"(?i)(^|&)(password=)[^&]*", r"\1\2***", parts.query)
    return urlunsplit(parts._replace(netloc=netloc, query=query)), secrets
