"""What the store holds in memory is bounded (issue 32): the writer's queue, and the records a failed write keeps.

A load test of a million requests hands the store a sample per request; a writer behind the load (a slow disk,
a database away) must not hold them all.
"""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from pathlib import Path

import pytest

from tests.store.test_database import T0, ok_sample, raw
from tokenpace.errors import StoreError
from tokenpace.store import database
from tokenpace.store.database import open_store


def test_a_writer_behind_holds_the_next_sample_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(database, "MAX_QUEUED", 3)
    gate = threading.Event()
    with open_store(str(tmp_path / "t.db")) as store:
        busy = threading.Thread(target=store.transaction, args=(lambda conn, ph: gate.wait(60),))
        busy.start()  # the writer thread waits on the gate: nothing queued after it is written meanwhile

        def send() -> None:
            for i in range(5):
                store.add_sample(ok_sample(f"run-{i}", T0 + timedelta(seconds=i)))

        sender = threading.Thread(target=send)
        sender.start()
        sender.join(0.5)
        assert sender.is_alive()  # three queued, the fourth waits for the writer
        gate.set()
        sender.join(30)
        busy.join(30)
        assert not sender.is_alive()
        store.flush()
        assert [s.run_id for s in store.samples()] == [f"run-{i}" for i in range(5)]


def test_records_a_failed_write_keeps_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past UNSAVED_KEPT waiting in memory, a sample the database did not take goes to the rescue file."""
    monkeypatch.setattr(database, "UNSAVED_KEPT", 2)
    url = str(tmp_path / "t.db")
    with open_store(url) as store:
        store.add_sample(ok_sample("run-0"))
        store.flush()
        raw(url, "ALTER TABLE samples RENAME TO samples_away")
        for i in range(1, 5):
            store.add_sample(ok_sample(f"run-{i}", T0 + timedelta(seconds=i)))
        with pytest.raises(StoreError, match=r"Store\.unsaved"):
            store.flush()
        assert [s.run_id for s in store.unsaved] == ["run-1", "run-2"]
        lines = store.rescue_path.read_text().splitlines()
        assert [json.loads(line)["sample"]["run_id"] for line in lines] == ["run-3", "run-4"]
        assert "2 records waited in Store.unsaved already" in json.loads(lines[0])["refused"]
        assert [s.run_id for s in store.rescued] == ["run-3", "run-4"]  # budgets still count them
        raw(url, "ALTER TABLE samples_away RENAME TO samples")
        store.add_sample(ok_sample("run-5", T0 + timedelta(seconds=5)))
        store.flush()
        assert store.unsaved == [] and [s.run_id for s in store.samples()] == ["run-0", "run-1", "run-2", "run-5"]
