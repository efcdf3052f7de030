"""The two databases: SQLite's WAL and sync settings, accepted URLs, passwords never shown."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.store.test_database import raw
from tokenpace.cli import main
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


@pytest.mark.parametrize(
    "given",
    ["postgresql://u:PW@SECRET@127.0.0.1:1/x", "postgresql://u:PW/SECRET@127.0.0.1:1/x", "postgres://u:PW#SECRET@h/x"],
)
def test_a_password_with_a_reserved_character_is_refused_and_never_shown(given: str) -> None:
    """Issue 29: libpq split the first URL at its first '@', and the error naming the host printed SECRET."""
    with pytest.raises(StoreError) as err:
        open_store(given)
    message = str(err.value)
    assert "SECRET" not in message and "PW" not in message and "\n" not in message
    assert "percent-encode" in message and "%40" in message


def test_a_keyword_connection_string_is_refused_never_made_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29: taken as a file path, it silently made a SQLite file named after the password."""
    monkeypatch.chdir(tmp_path)
    given = "host=127.0.0.1 dbname=test user=postgres password=hunter2"
    for command in (["leaderboard", "--db", given], ["db", "grant-agent", "r", "--region", "eu", "--db", given]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code != 0 and "hunter2" not in result.output, result.output
        assert "keyword connection string" in result.output and "postgresql://" in result.output
    with pytest.raises(StoreError, match="keyword connection string"):
        open_store("dbname=test password=hunter2")
    assert list(tmp_path.iterdir()) == []
    with open_store(str(tmp_path / "host=x.db")):  # a file whose name only looks like one, given as a path
        pass


def test_tokenpace_db_is_read_as_db_would_be(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review of issue 29: $TOKENPACE_DB became a file path whatever it held, so a keyword string or a URL made
    folders and a SQLite file named after the password; it is read as --db is, and refused the same way."""
    monkeypatch.chdir(tmp_path)
    for given in ("host=h dbname=x password=hunter2", "postgresql://u:hun/ter2@127.0.0.1:1/x"):
        monkeypatch.setenv("TOKENPACE_DB", given)
        result = CliRunner().invoke(main, ["leaderboard"])
        assert result.exit_code != 0 and "hunter2" not in result.output and "hun/ter2" not in result.output
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("TOKENPACE_DB", str(tmp_path / "env.db"))
    with open_store(None):
        pass
    assert (tmp_path / "env.db").exists()


@pytest.mark.parametrize(
    "url",
    ["postgresql://u:pw@127.0.0.1:1/db?application_name=me@laptop", "postgresql:///db?host=/tmp&user=admin@srv"],
)
def test_an_at_sign_in_the_query_is_no_misread_password(url: str) -> None:
    """Review of issue 29: an '@' in a query parameter was taken for the userinfo's and the URL refused."""
    with pytest.raises(StoreError) as err:  # nothing listens there: refused by the connection, not the check
        open_store(url)
    assert "percent-encode" not in str(err.value)
