"""The two databases: SQLite's WAL and sync settings, accepted URLs, passwords never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.store.test_database import raw
from tokenpace.errors import StoreError
from tokenpace.store.database import open_store


def test_sqlite_runs_in_wal_mode_with_normal_sync(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    with open_store(f"sqlite://{path}") as store:
        assert store._call(lambda: store._conn.execute("PRAGMA synchronous").fetchall()) == [(1,)]  # NORMAL
        assert store._call(lambda: store._conn.execute("PRAGMA busy_timeout").fetchall()) == [(5000,)]
        assert store.url == f"sqlite://{path}"
    assert raw(str(path), "PRAGMA journal_mode") == [("wal",)]


@pytest.mark.parametrize("bad", ["mysql://root:s3cret@db/x", "sqlite://relative.db", "", "http://u:s3cret@[::1/x"])
def test_unsupported_url_says_what_is_accepted(bad: str) -> None:
    with pytest.raises(StoreError) as err:
        open_store(bad)
    message = str(err.value)
    assert "postgresql://" in message and "sqlite:///" in message
    assert "s3cret" not in message and "\n" not in message


@pytest.mark.parametrize("form", ["user:password@", "postgres://", "?password="])
def test_password_is_masked_in_url(pg_url: str, form: str) -> None:
    # A fresh schema (pg_url), never the shared database's own: another tokenpace may have migrated that.
    url = {
        "user:password@": pg_url.replace("postgres@", "postgres:s3cret@"),
        "postgres://": pg_url.replace("postgresql://postgres@", "postgres://postgres:s3cret@"),
        "?password=": f"{pg_url}&password=s3cret&connect_timeout=5",
    }[form]
    with open_store(url) as store:  # the test server trusts local connections, so any password works
        assert "s3cret" not in store.url and "***" in store.url
        assert store.url.partition("://")[2].startswith("postgres")  # the rest stays readable


def test_password_is_masked_in_errors() -> None:
    with pytest.raises(StoreError) as err:
        open_store("postgresql://postgres:s3cret@127.0.0.1:1/test?connect_timeout=5")
    message = str(err.value)
    assert "s3cret" not in message and "\n" not in message
    assert message.startswith("postgresql://postgres:***@127.0.0.1:1/test")
