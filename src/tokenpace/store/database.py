"""Where samples go: SQLite by default, the same schema on PostgreSQL, every write through one writer thread.

Timing code must never wait on a disk, so ``add_sample`` only queues. One thread owns the one writing DB-API
connection (created inside it, so SQLite sees a single writer) and runs every write. Reads run on connections
of their own (``readers``), so a long leaderboard holds up neither the writes queued behind it nor the
sampler's budget checks; a read first waits for the writes queued before it, so it still sees every one of them.

Each sample is committed on its own, with its count in the rollups the windows read (``rollup``; on PostgreSQL
the database's own trigger counts it, ``counting``) in the same transaction: samples arrive seconds apart, so
batching would save little and could lose a batch. SQLite runs in WAL mode with ``synchronous=NORMAL``: a
commit survives the process dying, and only a power cut can take back the last few, the price of not syncing
every commit to disk.

Foreign errors (sqlite3, psycopg, OS) become :class:`StoreError` here and nowhere else, as one line that never
holds the URL's password. A write that fails is not lost: its record stays in ``Store.unsaved`` (samples) or
``Store.unsaved_runs``, the next :meth:`Store.flush` raises, and it goes in with the next write that succeeds
(past UNSAVED_KEPT waiting, to the rescue file instead); past MAX_QUEUED writes queued, a write waits for them.
A PostgreSQL connection lost to a restart or a dropped link is opened again. Values are made storable first
(``refusals``); a record refused all the same for its data, which no retry could fix, goes to the rescue file
(``Store.rescue_path``) instead, with the reason logged and raised by the next flush.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import sqlite3
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import platformdirs

from tokenpace.errors import StoreError
from tokenpace.measure.sample import RunRecord, Sample
from tokenpace.measure.timing import Timeline
from tokenpace.store import columns, migrations, rollup
from tokenpace.store.dialects import Connection, Dialect, hide_password, postgres_dialect, say, sqlite_dialect
from tokenpace.store.readers import Readers, WriteOrder
from tokenpace.store.refusals import default_rescue_path, is_data_error, rescue, storable

T = TypeVar("T")
log = logging.getLogger(__name__)
RESCUED_KEPT = 10_000  # rescued samples remembered (lightly) so that budgets still count them
MAX_QUEUED = 1_000  # writes queued and not done past which add_sample waits (each holds its sample)
UNSAVED_KEPT = 1_000  # records a failed write keeps in memory for the next one; more go to the rescue file
ACCEPTED = "a file path, sqlite:///ABSOLUTE/PATH.db or postgresql://USER[:PASSWORD]@HOST[:PORT]/DB"
_FOREIGN: tuple[type[Exception], ...] = (sqlite3.Error, OSError)  # and the driver's: Dialect.errors
_SAMPLE_COLUMNS = columns.SAMPLE_COLUMNS
_RUN_COLUMNS = tuple(f.name for f in dataclasses.fields(RunRecord))


def default_db_path() -> str:
    """``$TOKENPACE_DB`` if set (a path or a URL), else tokenpace.db in the user's data folder (outliving checkouts)."""
    return os.environ.get("TOKENPACE_DB") or str(Path(platformdirs.user_data_dir("tokenpace")) / "tokenpace.db")


def open_store(url: str | None = None) -> Store:
    """Open (creating and migrating as needed) the store a URL names; None means the default store."""
    if url is None:
        hide_password(given := default_db_path())  # refuses a misread password or a keyword string, as --db's
        if "://" in given:
            return open_store(given)
        path = Path(given)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the folder for {path}: {exc.strerror or exc}") from None
        return Store(f"sqlite://{path.absolute()}", sqlite_dialect(path))
    shown, secrets = hide_password(url)  # first: it refuses a string whose password would be misread as a path
    scheme, sep, rest = url.partition("://")
    if url.strip() and not sep:
        return Store(f"sqlite://{Path(url).absolute()}", sqlite_dialect(Path(url)))
    if scheme == "sqlite" and rest.startswith("/"):
        return Store(url, sqlite_dialect(Path(rest)))
    if scheme in ("postgresql", "postgres"):
        return Store(shown, postgres_dialect(url), secrets)
    raise StoreError(f"unsupported store {shown!r}: give {ACCEPTED}")


def _insert_sql(table: str, columns: Sequence[str], ph: str, upsert: bool = False) -> str:
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
    return tuple(_to_db(v) for v in columns.sample_values(s).values())


def _run_row(r: RunRecord) -> tuple[Any, ...]:
    return tuple(_to_db(v) for v in dataclasses.astuple(r))


@dataclasses.dataclass(frozen=True, slots=True)
class _Table:
    kind: str  # what one record is called in messages
    sql: str
    columns: tuple[str, ...]
    row: Callable[[Any], tuple[Any, ...]]
    unsaved: list[Any]  # the Store's own list, shared


_EMPTY = Timeline(t_sent_ns=0, t_headers_ns=None, t_end_ns=0, events=())


class Store:
    """Samples and runs in one database; writes are queued to a single writer thread and never block."""

    def __init__(
        self, url: str, dialect: Dialect, secrets: Sequence[str] = (), rescue_path: Path | None = None
    ) -> None:
        self.url = url  # for display: the password, if any, is masked
        self.unsaved: list[Sample] = []
        self.unsaved_runs: list[RunRecord] = []
        self.rescue_path = rescue_path or default_rescue_path(dialect.file)
        # Samples refused for their data, lightened (no timeline): in no database, spent all the same.
        self.rescued: deque[Sample] = deque(maxlen=RESCUED_KEPT)
        self._secrets = secrets
        self._foreign = (*_FOREIGN, *dialect.errors)
        self._lost = dialect.lost
        self._data_errors = dialect.refused
        self._errors: list[str] = []  # touched only by the writer thread
        self._closed = False
        self._ph = dialect.placeholder
        self._begin = dialect.begin
        self._locked = dialect.locked
        self.dialect = dialect.name
        self.writes = 0  # records this Store has committed: lets a cache tell cheaply that nothing is new
        # A queued job's request is stored once, whoever retried it (agent restarts, the queue's retry).
        insert = _insert_sql("samples", _SAMPLE_COLUMNS, self._ph) + " ON CONFLICT (job_id, job_seq) DO NOTHING"
        self._samples = _Table("sample", insert, _SAMPLE_COLUMNS, _sample_row, self.unsaved)
        # A run may be written when it starts and again when it ends: the last write wins.
        upsert = _insert_sql("runs", _RUN_COLUMNS, self._ph, upsert=True)
        self._runs = _Table("run", upsert, _RUN_COLUMNS, _run_row, self.unsaved_runs)
        self._tables = (self._samples, self._runs)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenpace-store")
        self._readers = Readers(dialect.read or dialect.connect, dialect.lost)
        self._order = WriteOrder()  # so that a read sees every write queued before it

        def connect() -> Connection:
            conn = dialect.connect()
            try:
                migrations.apply(conn, dialect, url)
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
        return say(self.url, exc, self._secrets)

    def _call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the writer thread and wait: the one place foreign errors become StoreError."""
        if self._closed:
            raise StoreError(f"{self.url}: the store is closed")
        try:
            return self._pool.submit(fn).result()
        except self._foreign as exc:
            raise StoreError(self._say(exc)) from None

    def _write(self, table: _Table, record: Any) -> None:
        """Insert one record and commit, its values made storable first (and the change said once)."""
        values, changed = storable(table.columns, table.row(record))
        if self._begin:
            self._conn.execute(self._begin)
        inserted = self._conn.execute(table.sql, values).rowcount != 0
        if table is self._samples and inserted and self.dialect == "sqlite":  # PostgreSQL's trigger counts it
            rollup.add(self._conn, self._ph, values)  # the rollups, in the same transaction
        self._conn.commit()
        self.writes += 1
        if changed:
            why = "NUL, a lone surrogate, a number the column cannot hold or a figure no measurement can produce"
            why += ": the timeline keeps what was sent"
            log.warning("%s %s: %s stored sanitised (%s)", table.kind, record.id, ", ".join(changed), why)

    def _refusal(self, table: _Table, record: Any, exc: Exception, new: bool = False) -> bool:
        """After a failed write: a record refused for its own data, or a ``new`` one with UNSAVED_KEPT waiting
        already, goes to the rescue file (True); else False."""
        with contextlib.suppress(Exception):
            self._conn.rollback()
        data = is_data_error(exc, self._data_errors)
        if not data and not (new and len(table.unsaved) >= UNSAVED_KEPT):
            return False
        why = self._say(exc) + ("" if data else f"; {UNSAVED_KEPT} records waited in Store.unsaved already")
        try:
            rescue(self.rescue_path, record, why)
        except Exception as failed:  # the rescue file cannot be written either: the record is kept in memory
            self._errors.append(f"{why}; and the rescue file failed: {self._say(failed)}")
            return False
        log.warning("%s %s refused (%s): written to %s", table.kind, record.id, why, self.rescue_path)
        self._errors.append(f"{why}; the {table.kind} was written to {self.rescue_path}")
        if isinstance(record, Sample):  # spent all the same: budgets count it
            self.rescued.append(dataclasses.replace(record, timeline=_EMPTY, prompt_text=None))
        return True

    def _enqueue(self, table: _Table, item: Any) -> None:
        def write() -> None:  # on the writer thread, so even the timeline's JSON costs the caller nothing
            try:
                self._on_connection(lambda: self._write(table, item))
            except Exception as exc:  # anything at all: rescue a data refusal, keep the record otherwise
                if not self._refusal(table, item, exc, new=True):
                    table.unsaved.append(item)
                    self._errors.append(f"{self._say(exc)}; the records are kept in Store.unsaved")
                return
            self._write_unsaved()  # the database takes writes again

        if self._closed:
            raise StoreError(f"{self.url}: the store is closed")
        self._order.wait_below(MAX_QUEUED)
        self._pool.submit(self._order.queue(write))

    def _write_unsaved(self) -> None:
        """What the database refused before goes in now, oldest first (on the writer thread)."""
        for pending in self._tables:
            while pending.unsaved:
                try:
                    self._write(pending, pending.unsaved[0])
                except Exception as exc:  # still refused: kept for the next successful write, or rescued
                    if not self._refusal(pending, pending.unsaved[0], exc):
                        break
                pending.unsaved.pop(0)

    def retry_unsaved(self) -> None:
        """Queue a try of what the database did not take (``Store.unsaved``), as the next write would make."""

        def write() -> None:
            with contextlib.suppress(Exception):  # a link still lost is opened again here, if it can be
                self._on_connection(lambda: self._conn.execute("SELECT 1").fetchall())
                self._conn.rollback()  # (PostgreSQL opened a transaction)
            self._write_unsaved()

        self._pool.submit(self._order.queue(write))

    def written_elsewhere(self) -> None:
        """Another process (a region's agent) wrote to this database: what is cached on ``writes`` starts over."""
        self.writes += 1  # (a race with the writer thread may lose one step, never the change)

    def add_sample(self, sample: Sample) -> None:
        """Queue a sample for writing and return at once; :meth:`flush` reports a failed write."""
        self._enqueue(self._samples, sample)

    def add_run(self, run: RunRecord) -> None:
        """Queue a run for writing (replacing any earlier record of the same id) and return at once."""
        self._enqueue(self._runs, run)

    def _take_errors(self) -> list[str]:
        errors, self._errors = self._errors, []
        return errors

    def flush(self) -> None:
        """Wait until everything queued is committed; raise if any write since the last flush failed."""
        errors = self._call(self._take_errors)
        if errors:
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            raise StoreError(f"write failed: {errors[0]}{more}")

    def query(
        self, sql: str, params: Sequence[Any] = (), *, fresh: bool = False, ordered: bool = True
    ) -> list[tuple[Any, ...]]:
        """Rows of a read written with ``?`` placeholders, on a reader once the writes queued before it are done.

        ``fresh``: on the writer thread, between two writes, as a budget needs: a sample whose write failed moves
        to ``Store.unsaved`` (or ``rescued``) on that thread, so it is then in the database or there, never neither.
        ``ordered=False``: at once, not after the queued writes (which wait out another process's write lock).
        """
        sql = sql.replace("?", self._ph)

        def read(conn: Connection) -> list[tuple[Any, ...]]:
            rows = [tuple(r) for r in conn.execute(sql, params).fetchall()]
            conn.rollback()  # end a read transaction PostgreSQL opened; a no-op on SQLite and autocommit
            return rows

        if fresh:
            return self._call(lambda: self._on_connection(lambda: read(self._conn)))
        if self._closed:
            raise StoreError(f"{self.url}: the store is closed")
        if ordered:
            self._order.wait()
        try:
            return self._readers.run(read)
        except self._foreign as exc:
            raise StoreError(self._say(exc)) from None

    def busy(self) -> bool:
        """Whether another process holds the database's write lock now (SQLite), so writes queue behind it."""
        if self._locked is None or self._closed:
            return False
        try:
            return self._locked()
        except self._foreign as exc:
            raise StoreError(self._say(exc)) from None

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """One write of the store's own modules, on the writer thread after the writes queued before it, committed;
        returns the rows it changed. For small tables beside the samples (``agents``), not for samples or runs."""
        sql = sql.replace("?", self._ph)
        return self.transaction(lambda conn, _: int(conn.execute(sql, params).rowcount))

    def transaction(self, step: Callable[[Connection, str], T]) -> T:
        """``step(connection, placeholder)`` in one committed transaction on the writer thread, after the writes
        queued before it: :meth:`execute`'s, and maintenance's (``tokenpace db rebuild-rollups``)."""

        def write() -> T:
            if self._begin:
                self._conn.execute(self._begin)
            try:
                done = step(self._conn, self._ph)
            except BaseException:
                with contextlib.suppress(Exception):
                    self._conn.rollback()
                raise
            self._conn.commit()
            return done

        return self._call(lambda: self._on_connection(write))

    def samples(self, run_id: str | None = None, limit: int | None = None) -> list[Sample]:
        """Samples oldest first (of one run if given); ``limit`` keeps the first ``limit`` of them."""
        sql = f"SELECT {', '.join(_SAMPLE_COLUMNS)} FROM samples"  # noqa: S608 (column names only)
        params: list[Any] = []
        if run_id is not None:
            sql, params = sql + " WHERE run_id = ?", [run_id]
        sql += " ORDER BY started_at, id"
        if limit is not None:
            sql, params = sql + " LIMIT ?", [*params, limit]
        return [columns.sample_from(dict(zip(_SAMPLE_COLUMNS, r, strict=True))) for r in self.query(sql, params)]

    def runs(self) -> list[RunRecord]:
        """Every run, oldest first."""
        sql = f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs ORDER BY started_at, id"  # noqa: S608
        return [columns.run_from(dict(zip(_RUN_COLUMNS, r, strict=True))) for r in self.query(sql, ())]

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
            self._readers.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
