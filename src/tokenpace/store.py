"""Where samples go: SQLite by default, the same schema on PostgreSQL, all of it through one writer thread.

Timing code must never wait on a disk, so ``add_sample`` only queues. One thread owns the one DB-API
connection (created inside it, so SQLite sees a single connection and a single writer) and runs every
statement, reads included; a read therefore sees every write queued before it.

Each sample is committed on its own: samples arrive seconds apart, so batching would save little and could
lose a batch. SQLite runs in WAL mode with ``synchronous=NORMAL``: a commit survives the process dying, and
only a power cut can take back the last few, the price of not syncing every commit to disk.

Foreign errors (sqlite3, psycopg, OS) become :class:`StoreError` here and nowhere else, as one line that never
holds the URL's password. A write that fails is not lost: its record stays in ``Store.unsaved`` (samples) or
``Store.unsaved_runs``, the next :meth:`Store.flush` raises, and it goes in with the next write that succeeds.
A PostgreSQL connection lost to a restart or a dropped link is opened again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

import platformdirs

from tokenpace.config import Endpoint
from tokenpace.errors import StoreError
from tokenpace.failures import ErrorKind, Failure
from tokenpace.metrics import Metrics
from tokenpace.migrations import BOOTSTRAP, MIGRATIONS
from tokenpace.sample import RunRecord, Sample
from tokenpace.timing import Timeline

T = TypeVar("T")
ACCEPTED = "a file path, sqlite:///ABSOLUTE/PATH.db or postgresql://USER[:PASSWORD]@HOST[:PORT]/DB"
_FOREIGN: tuple[type[Exception], ...] = (sqlite3.Error, OSError)  # and the driver's: _Dialect.errors
_METRICS = tuple(f.name for f in dataclasses.fields(Metrics))
_ENDPOINT = ("provider", "plan", "model", "base_url", "protocol", "api_key_env", "simulated")
_PROMPT = ("input_tokens", "prompt_fingerprint", "image_bytes", "image_pixels", "group_id", "prompt_text")
_ORIGIN = ("source", "published", "client_bound")
_SAMPLE_COLUMNS = (
    *("id", "run_id", *_ENDPOINT, "workload", "started_at"),
    *("ok", "error_kind", "error_message", "http_status", *_METRICS, "timeline", "tool_version", *_PROMPT),
    *_ORIGIN,
)
_RUN_COLUMNS = tuple(f.name for f in dataclasses.fields(RunRecord))


def default_db_path() -> Path:
    """``$TOKENPACE_DB`` if set, else tokenpace.db in the user's data folder: results outlive any checkout."""
    override = os.environ.get("TOKENPACE_DB")
    return Path(override) if override else Path(platformdirs.user_data_dir("tokenpace")) / "tokenpace.db"


class _Connection(Protocol):
    """What both sqlite3 and psycopg connections offer, all the store needs."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Any: ...
    def commit(self) -> None: ...
    def rollback(self) -> None: ...
    def close(self) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True)
class _Dialect:
    name: str  # "sqlite" or "postgresql": for the rare SQL the two spell differently
    connect: Callable[[], _Connection]
    placeholder: str  # SQL here is written with "?"; PostgreSQL wants "%s"
    lock_migrations: str  # opens the migration transaction, so that two processes cannot both migrate
    errors: tuple[type[Exception], ...] = ()  # the driver's own errors, foreign like sqlite3's
    lost: tuple[type[Exception], ...] = ()  # the driver's errors for a lost connection, which is reopened


def _sqlite(path: Path) -> _Dialect:
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

    return _Dialect("sqlite", connect, "?", "BEGIN IMMEDIATE")


def _postgres(url: str) -> _Dialect:
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
    return _Dialect("postgresql", lambda: psycopg.connect(url, autocommit=False), "%s", lock, (psycopg.Error,), lost)


def _hide(url: str) -> tuple[str, list[str]]:
    """The URL with its password masked, and every spelling of that password (userinfo or ``?password=``)."""
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


def open_store(url: str | None = None) -> Store:
    """Open (creating and migrating as needed) the store a URL names; None means the default SQLite file."""
    if url is None:
        path = default_db_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the folder for {path}: {exc.strerror or exc}") from None
        return Store(f"sqlite://{path.absolute()}", _sqlite(path))
    scheme, sep, rest = url.partition("://")
    if url.strip() and not sep:
        return Store(f"sqlite://{Path(url).absolute()}", _sqlite(Path(url)))
    if scheme == "sqlite" and rest.startswith("/"):
        return Store(url, _sqlite(Path(rest)))
    shown, secrets = _hide(url)
    if scheme in ("postgresql", "postgres"):
        return Store(shown, _postgres(url), secrets)
    raise StoreError(f"unsupported store {shown!r}: give {ACCEPTED}")


def _insert(table: str, columns: Sequence[str], ph: str, upsert: bool = False) -> str:
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join([ph] * len(columns))})"  # noqa: S608
    if upsert:  # ON CONFLICT is portable: SQLite since 3.24, PostgreSQL since 9.5
        sql += " ON CONFLICT (id) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in columns[1:])
    return sql


def epoch(t: datetime) -> float:
    """A time as the database holds it: UTC epoch seconds; a naive datetime means UTC, as Sample documents."""
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()


def utc(seconds: float | None) -> datetime | None:
    """A time the database held, back as a UTC datetime; None stays None."""
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


def _to_db(value: Any) -> Any:
    return epoch(value) if isinstance(value, datetime) else int(value) if isinstance(value, bool) else value


def _sample_row(s: Sample) -> tuple[Any, ...]:
    kind = None if s.error_kind is None else s.error_kind.value
    head = (s.id, s.run_id, *(getattr(s.endpoint, f) for f in _ENDPOINT), s.workload, s.started_at, s.ok)
    tail = (kind, s.error_message, s.http_status, *dataclasses.astuple(s.metrics), s.timeline.to_json())
    prompt = (getattr(s, f) for f in _PROMPT)
    origin = (getattr(s, f) for f in _ORIGIN)
    return tuple(_to_db(v) for v in (*head, *tail, s.tool_version, *prompt, *origin))


def _run_row(r: RunRecord) -> tuple[Any, ...]:
    return tuple(_to_db(v) for v in dataclasses.astuple(r))


def _sample(row: dict[str, Any]) -> Sample:
    kind = row["error_kind"]
    failure = None if kind is None else Failure(ErrorKind(kind), row["error_message"], row["http_status"])
    endpoint = Endpoint(**{f: row[f] for f in _ENDPOINT} | {"simulated": bool(row["simulated"])})
    return Sample(
        id=row["id"],
        run_id=row["run_id"],
        endpoint=endpoint,
        workload=row["workload"],
        started_at=datetime.fromtimestamp(row["started_at"], UTC),
        metrics=Metrics(**{f: row[f] for f in _METRICS}),
        timeline=Timeline.from_json(row["timeline"], failure),
        tool_version=row["tool_version"],
        **{f: row[f] for f in _PROMPT},
        source=row["source"],
        published=bool(row["published"]),
        client_bound=bool(row["client_bound"]),
    )


def _run(row: dict[str, Any]) -> RunRecord:
    when = {f: datetime.fromtimestamp(row[f], UTC) for f in ("started_at", "finished_at")}
    return RunRecord(**row | when | {"client_bound": bool(row["client_bound"])})


def _migrate(conn: _Connection, dialect: _Dialect, url: str) -> None:
    """Apply the missing migrations in one transaction, under a lock so two processes cannot both do it."""
    conn.execute(dialect.lock_migrations)
    conn.execute(BOOTSTRAP)
    have = {v for (v,) in conn.execute("SELECT version FROM schema_migrations").fetchall()}
    known = MIGRATIONS[-1][0]
    if have and max(have) > known:
        newer = f"database schema version {max(have)} is newer than this tokenpace knows ({known})"
        raise StoreError(f"{url}: {newer}: upgrade tokenpace")
    for version, statements in MIGRATIONS:
        if version not in have:
            for statement in statements:
                conn.execute(statement)
            conn.execute(
                _insert("schema_migrations", ("version", "applied_at"), dialect.placeholder),
                (version, time.time()),
            )
    conn.commit()


class Store:
    """Samples and runs in one database; writes are queued to a single writer thread and never block."""

    def __init__(self, url: str, dialect: _Dialect, secrets: Sequence[str] = ()) -> None:
        self.url = url  # for display: the password, if any, is masked
        self.unsaved: list[Sample] = []
        self.unsaved_runs: list[RunRecord] = []
        self._secrets = secrets
        self._foreign = (*_FOREIGN, *dialect.errors)
        self._lost = dialect.lost
        self._errors: list[str] = []  # touched only by the writer thread
        self._closed = False
        self._ph = dialect.placeholder
        self.dialect = dialect.name
        self.writes = 0  # records this Store has committed: lets a cache tell cheaply that nothing is new
        self._insert_sample = _insert("samples", _SAMPLE_COLUMNS, self._ph)
        # A run may be written when it starts and again when it ends: the last write wins.
        self._upsert_run = _insert("runs", _RUN_COLUMNS, self._ph, upsert=True)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenpace-store")

        def connect() -> _Connection:
            conn = dialect.connect()
            try:
                _migrate(conn, dialect, url)
            except BaseException:
                with contextlib.suppress(*self._foreign):
                    conn.close()
                raise
            return conn

        self._connect = connect
        try:
            self._conn = self._call(connect)
        except BaseException:
            self._pool.shutdown()
            raise

    def _on_connection(self, op: Callable[[], T]) -> T:
        """``op`` on the connection; one lost to a server restart or a dropped link is opened again, once.

        A long-running ``tokenpace serve`` outlives PostgreSQL restarts and proxies that close idle links.
        """
        try:
            return op()
        except self._lost:
            if not getattr(self._conn, "closed", False):  # the link is fine: the statement itself failed
                raise
            self._conn = self._connect()
            return op()

    def _say(self, exc: BaseException) -> str:
        """One line naming the store, with every spelling of the password blanked out."""
        text = " ".join(str(exc).split()) or type(exc).__name__
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return f"{self.url}: {text}"

    def _call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the writer thread and wait: the one place foreign errors become StoreError."""
        if self._closed:
            raise StoreError(f"{self.url}: the store is closed")
        try:
            return self._pool.submit(fn).result()
        except self._foreign as exc:
            raise StoreError(self._say(exc)) from None

    def _enqueue(self, sql: str, item: Any, row: Callable[[Any], tuple[Any, ...]], unsaved: list[Any]) -> None:
        def insert(record: Any, sql: str, row: Callable[[Any], tuple[Any, ...]]) -> None:
            self._conn.execute(sql, row(record))
            self._conn.commit()
            self.writes += 1

        def write() -> None:  # on the writer thread, so even the timeline's JSON costs the caller nothing
            try:
                self._on_connection(lambda: insert(item, sql, row))
            except Exception as exc:  # anything at all: keep the record, report it at flush
                with contextlib.suppress(Exception):
                    self._conn.rollback()
                unsaved.append(item)
                self._errors.append(self._say(exc))
                return
            # The database takes writes again: what it refused before goes in now, oldest first.
            for pending, pending_sql, pending_row in (
                (self.unsaved, self._insert_sample, _sample_row),
                (self.unsaved_runs, self._upsert_run, _run_row),
            ):
                while pending:
                    try:
                        insert(pending[0], pending_sql, pending_row)
                    except Exception:  # still refused: kept for the next successful write
                        with contextlib.suppress(Exception):
                            self._conn.rollback()
                        break
                    pending.pop(0)

        if self._closed:
            raise StoreError(f"{self.url}: the store is closed")
        self._pool.submit(write)

    def add_sample(self, sample: Sample) -> None:
        """Queue a sample for writing and return at once; :meth:`flush` reports a failed write."""
        self._enqueue(self._insert_sample, sample, _sample_row, self.unsaved)

    def add_run(self, run: RunRecord) -> None:
        """Queue a run for writing (replacing any earlier record of the same id) and return at once."""
        self._enqueue(self._upsert_run, run, _run_row, self.unsaved_runs)

    def _take_errors(self) -> list[str]:
        errors, self._errors = self._errors, []
        return errors

    def flush(self) -> None:
        """Wait until everything queued is committed; raise if any write since the last flush failed."""
        errors = self._call(self._take_errors)
        if errors:
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            raise StoreError(f"write failed: {errors[0]}{more}; the records are kept in Store.unsaved")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of a read written with ``?`` placeholders; it runs after every write queued before it."""

        def read() -> list[tuple[Any, ...]]:
            rows = [tuple(r) for r in self._conn.execute(sql.replace("?", self._ph), params).fetchall()]
            self._conn.rollback()  # end the read transaction PostgreSQL opened; a no-op on SQLite
            return rows

        return self._call(lambda: self._on_connection(read))

    def samples(self, run_id: str | None = None, limit: int | None = None) -> list[Sample]:
        """Samples oldest first (of one run if given); ``limit`` keeps the first ``limit`` of them."""
        sql = f"SELECT {', '.join(_SAMPLE_COLUMNS)} FROM samples"  # noqa: S608 (column names only)
        params: list[Any] = []
        if run_id is not None:
            sql, params = sql + " WHERE run_id = ?", [run_id]
        sql += " ORDER BY started_at, id"
        if limit is not None:
            sql, params = sql + " LIMIT ?", [*params, limit]
        return [_sample(dict(zip(_SAMPLE_COLUMNS, r, strict=True))) for r in self.query(sql, params)]

    def runs(self) -> list[RunRecord]:
        """Every run, oldest first."""
        sql = f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs ORDER BY started_at, id"  # noqa: S608
        return [_run(dict(zip(_RUN_COLUMNS, r, strict=True))) for r in self.query(sql, ())]

    def close(self) -> None:
        """Flush, then close the connection and stop the writer; raises as flush does, but closes first."""
        if self._closed:
            return
        try:
            self.flush()
        finally:
            self._closed = True
            self._pool.submit(self._conn.close)
            self._pool.shutdown(wait=True)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
