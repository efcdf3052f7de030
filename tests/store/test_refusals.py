"""Values a database would refuse (issue 9, items 8, 13 and 15): stored sanitised, or rescued, never blocking.

PostgreSQL takes no NUL in text and no integer beyond 32 bits in an INTEGER column; neither database takes a
lone surrogate; SQLite stores an infinite float in an INTEGER column, which later poisons every SUM over it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.store.test_database import ENDPOINT, MS, T0, failed_sample, ok_sample, raw, run_record
from tokenpace.cli import main
from tokenpace.config.settings import Spend
from tokenpace.errors import StoreError
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.sample import make_sample
from tokenpace.measure.timing import Event, EventKind, Timeline
from tokenpace.measure.timing import Usage as Reported
from tokenpace.schedule.sampler import usage
from tokenpace.store.database import open_store
from tokenpace.store.export import write_samples
from tokenpace.store.refusals import INT_MAX, INT_MIN, column_types
from tokenpace.web.ops import health


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An empty database; the working directory is tmp_path, where a PostgreSQL store's rescue file goes."""
    monkeypatch.chdir(tmp_path)
    if request.param == "sqlite":
        return str(tmp_path / "tokenpace.db")
    return str(request.getfixturevalue("pg_url"))


def poisoned_usage(input_tokens: object, output_tokens: object) -> Timeline:
    """A short answer whose provider reported impossible usage, as a hostile server can."""
    events = (Event(300 * MS, EventKind.CONTENT, "Hello"), Event(340 * MS, EventKind.CONTENT, " there"))
    usage = Reported(input_tokens, output_tokens)  # type: ignore[arg-type]  # what a server may send
    return Timeline(t_sent_ns=0, t_headers_ns=100 * MS, t_end_ns=400 * MS, events=events, usage=usage)


def test_out_of_range_counts_are_stored_as_null_and_the_raw_value_kept(url: str) -> None:
    sample = make_sample("run-1", ENDPOINT, "short", T0, poisoned_usage(math.inf, 2**40))
    wide = make_sample("run-1", ENDPOINT, "short", T0 + timedelta(seconds=1), poisoned_usage(-(2**31) - 1, 12.5))
    with open_store(url) as store:
        store.add_sample(sample)
        store.add_sample(wide)
        store.flush()
        back, back_wide = store.samples()
        assert store.unsaved == []
    m = back.metrics
    assert (m.provider_input_tokens, m.provider_output_tokens, m.token_diff) == (None, None, None)
    stored_timeline = raw(url, "SELECT timeline FROM samples WHERE id = ?", (sample.id,))[0][0]
    assert json.loads(stored_timeline)["usage"] == [math.inf, 2**40, None]  # the record keeps what was said
    assert back.metrics.output_tokens == sample.metrics.output_tokens == 2  # tokenpace's own count is intact
    assert (back_wide.metrics.provider_input_tokens, back_wide.metrics.provider_output_tokens) == (None, None)
    stored = raw(url, "SELECT provider_input_tokens, provider_output_tokens, token_diff FROM samples")
    assert stored == [(None, None, None), (None, None, None)]


def test_non_finite_figures_are_stored_as_null(url: str) -> None:
    sample = ok_sample()
    bad = dataclasses.replace(sample, metrics=dataclasses.replace(sample.metrics, output_speed=math.inf))
    nan = dataclasses.replace(
        ok_sample("run-2", T0 + timedelta(seconds=1)), metrics=dataclasses.replace(sample.metrics, ttft_ms=math.nan)
    )
    with open_store(url) as store:
        store.add_sample(bad)
        store.add_sample(nan)
        first, second = store.samples()
    assert first.metrics.output_speed is None and second.metrics.ttft_ms is None
    assert first.metrics.ttft_ms == sample.metrics.ttft_ms  # the finite figures are untouched


def test_a_seed_beyond_64_bits_never_costs_the_run_record(url: str) -> None:
    with open_store(url) as store:
        store.add_run(dataclasses.replace(run_record(), seed=2**70))
        store.add_run(dataclasses.replace(run_record("run-2"), seed=INT_MAX, completed=2**40))
        first, second = store.runs()
        assert store.unsaved_runs == []
    assert first.seed is None and first.completed == 3
    assert second.seed == INT_MAX and second.completed == INT_MAX  # NOT NULL: clamped, never lost
    assert (INT_MIN, INT_MAX) == (-(2**31), 2**31 - 1)


def test_nul_and_lone_surrogates_are_replaced_in_every_text_and_health_stays_ok(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A NUL in a model name or an error message made PostgreSQL refuse the row, and /health 503 for good."""
    evil = dataclasses.replace(ENDPOINT, model="evil\x00model")
    failure = Failure(ErrorKind.HTTP_ERROR, "HTTP 500: bad\x00news \ud800", 500)
    events = (Event(300 * MS, EventKind.CONTENT, "a\x00b"), Event(340 * MS, EventKind.CONTENT, "\\u0000 stays"))
    timeline = Timeline(0, 100 * MS, 400 * MS, events, response_id="id\x00", failure=failure)
    sample = make_sample("run-\x00", evil, "short", T0, timeline)
    with caplog.at_level(logging.WARNING, "tokenpace.store.database"), open_store(url) as store:
        store.add_sample(sample)
        store.flush()
        (back,) = store.samples()
        ok, facts = health(store, None, datetime.now(UTC))
    assert ok and facts["store"]["unsaved"] == 0
    assert back.endpoint.model == "evil\ufffdmodel" and back.run_id == "run-\ufffd"
    assert back.error_message == "HTTP 500: bad\ufffdnews ?"
    assert [e.text for e in back.timeline.events] == ["a\ufffdb", "\\u0000 stays"]  # text that looks like one is not
    assert back.timeline.response_id == "id\ufffd"
    assert all("\x00" not in str(v) for row in raw(url, "SELECT * FROM samples") for v in row)
    (said,) = [r.getMessage() for r in caplog.records if r.name == "tokenpace.store.database"]
    assert said.startswith(f"sample {sample.id}: ") and "model" in said and "error_message" in said


def test_a_row_refused_for_its_data_is_rescued_and_later_writes_go_through(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A refusal no retry can fix (here a duplicate id) goes to the rescue file, not Store.unsaved."""
    sample, later = ok_sample(), failed_sample("run-2", T0 + timedelta(seconds=5))
    with caplog.at_level(logging.WARNING, "tokenpace.store.database"), open_store(url) as store:
        store.add_sample(sample)
        store.add_sample(sample)  # the database refuses the same id twice, however often it is retried
        with pytest.raises(StoreError, match=r"written to .*rescued\.jsonl") as err:
            store.flush()
        assert "\n" not in str(err.value)
        ok, facts = health(store, None, datetime.now(UTC))
        assert ok and store.unsaved == [] and facts["store"]["rescued"] == 1  # well, and says one went aside
        store.add_sample(later)
        store.flush()
        assert [s.id for s in store.samples()] == [sample.id, later.id]
        rescue = store.rescue_path
        # A rescued sample was spent all the same: a budget still counts it.
        spent = Spend(3, 12 + 12, 2 * max(sample.metrics.output_tokens, 9))
        assert usage(store, "groq", "free", T0.timestamp() - 60) == spent
    assert rescue == Path.cwd() / "tokenpace-rescued.jsonl"  # beside a SQLite file; PostgreSQL: the working dir
    (line,) = rescue.read_text().splitlines()
    doc = json.loads(line)
    assert doc["sample"]["id"] == sample.id and doc["sample"]["timeline"]["id"] == "chatcmpl-1"
    assert doc["refused"] and "\n" not in doc["refused"]
    said = [r.getMessage() for r in caplog.records if r.name == "tokenpace.store.database"]
    assert any(str(rescue) in m and f"sample {sample.id}" in m for m in said)


def test_a_run_refused_for_its_data_is_rescued_too(url: str) -> None:
    with open_store(url) as store:
        bad = dataclasses.replace(run_record(), started_at=None)  # type: ignore[arg-type]  # NOT NULL refused
        store.add_run(bad)
        with pytest.raises(StoreError, match="written to"):
            store.flush()
        assert store.unsaved_runs == []
        store.add_run(run_record("run-2"))
        store.flush()
        assert [r.id for r in store.runs()] == ["run-2"]
        (line,) = store.rescue_path.read_text().splitlines()
    assert json.loads(line)["run"]["id"] == "run-1"


def test_a_lost_table_is_not_a_data_refusal(url: str) -> None:
    """Transient trouble keeps today's behaviour: the record waits in Store.unsaved for the next good write."""
    with open_store(url) as store:
        store.add_sample(ok_sample("run-0"))
        store.flush()
        raw(url, "ALTER TABLE samples RENAME TO samples_away")
        store.add_sample(ok_sample("run-1", T0 + timedelta(seconds=1)))
        with pytest.raises(StoreError, match=r"Store\.unsaved"):
            store.flush()
        assert len(store.unsaved) == 1 and not store.rescue_path.exists()
        raw(url, "ALTER TABLE samples_away RENAME TO samples")
        store.add_sample(ok_sample("run-2", T0 + timedelta(seconds=2)))
        store.flush()
        assert store.unsaved == [] and [s.run_id for s in store.samples()] == ["run-0", "run-1", "run-2"]


def test_the_sanitiser_knows_every_numeric_column(url: str) -> None:
    """refusals.column_types must match the migrations, or a new INTEGER column would go unchecked."""
    open_store(url).close()
    if url.startswith("postgresql://"):
        sql = "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema()"
        declared = {c: t.upper() for c, t in raw(url, sql + " AND table_name IN ('samples', 'runs')")}
    else:
        declared = {r[1]: r[2] for t in ("samples", "runs") for r in raw(url, f"PRAGMA table_info({t})")}
    numeric = {c: t for c, t in declared.items() if t != "TEXT"}
    assert numeric == column_types()


def test_records_a_run_could_not_store_go_to_the_rescue_file(tmp_path: Path) -> None:
    """`run` against a database that refuses every write (its samples table gone) keeps the samples in a file."""
    db = tmp_path / "broken.db"
    open_store(str(db)).close()
    raw(str(db), "ALTER TABLE samples RENAME TO gone")
    result = CliRunner().invoke(main, ["run", "--sim", "-n", "2", "--db", str(db), "--json"])
    rescue = tmp_path / "broken-rescued.jsonl"
    assert result.exit_code == StoreError.exit_code, result.output
    assert f"2 records the store did not take were written to {rescue}" in result.output
    docs = [json.loads(line) for line in rescue.read_text().splitlines()]
    assert sorted(d["sample"]["ok"] for d in docs) == [True, True]
    assert all("no such table: samples" in d["refused"] for d in docs)


def test_counts_stored_before_the_sanitiser_are_cleaned_once(url: str) -> None:
    """An older tokenpace stored Inf (SQLite takes it in an INTEGER column); migration 5 makes those NULL."""
    poisoned = ("9e999", "-9e999", str(2**62), "'many'") if not url.startswith("postgresql") else ("-7",)
    with open_store(url) as store:
        for i, _ in enumerate(poisoned):
            store.add_sample(ok_sample(f"run-{i}", T0 + timedelta(seconds=i)))
        store.flush()
    counts = ("provider_input_tokens", "provider_output_tokens", "token_diff", "input_tokens", "http_status")
    for i, value in enumerate(poisoned):
        raw(url, f"UPDATE samples SET {', '.join(f'{c} = {value}' for c in counts)} WHERE run_id = 'run-{i}'")  # noqa: S608
    raw(url, "DELETE FROM schema_migrations WHERE version = 5")  # as a database an older tokenpace wrote
    with open_store(url) as store:
        backs = store.samples()
    cleaned = [[getattr(s.metrics, c) for c in counts[:3]] + [s.input_tokens] for s in backs]
    expected = [[None] * 4] * len(poisoned) if not url.startswith("postgresql") else [[-7] * 4]  # in range: kept
    assert cleaned == expected


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_output_files_take_any_text_a_server_sent(tmp_path: Path, suffix: str) -> None:
    """A lone surrogate (JSON lets a server send one) cannot be UTF-8: --output writes "?" rather than failing."""
    failure = Failure(ErrorKind.HTTP_ERROR, "HTTP 500: bad \ud800 news", 500)
    sample = make_sample("run-1", ENDPOINT, "short", T0, Timeline(0, 100 * MS, 400 * MS, (), failure=failure))
    path = tmp_path / f"out{suffix}"
    write_samples(path, [sample])
    assert "bad ? news" in path.read_text(encoding="utf-8")
