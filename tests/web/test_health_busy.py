"""/health while another process holds SQLite's write lock: a 503 saying the store is busy, at once.

It used to wait behind the writes queued before it, each waiting out the 5 s busy timeout: a monitor polling
/health hung for as long as the lock was held, then heard of failed writes rather than of the lock.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from starlette.testclient import TestClient

from tests.store.test_windows import GROQ, put
from tokenpace.config.endpoints import Config
from tokenpace.store.database import open_store
from tokenpace.web import create_app

HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")  # the write lock, held until told to let go
print("held", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


def test_health_says_busy_while_another_process_holds_the_write_lock(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    with open_store(str(db)) as store, TestClient(create_app(store, Config())) as c:
        put(store, GROQ, datetime.now(UTC))
        store.flush()
        assert c.get("/health").status_code == 200
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            for _ in range(3):  # queued behind the lock: each waits up to the busy timeout
                put(store, GROQ, datetime.now(UTC))
            r = c.get("/health")
            # Not one queued write had timed out when it answered: it waited behind none of them.
            assert store.unsaved == [], "/health waited out the queued writes' busy timeouts"
            facts = r.json()["store"]
            assert r.status_code == 503 and r.json()["ok"] is False, r.text
            assert facts["busy"] is True and "busy" in facts["error"] and facts["reachable"] is True
            assert facts["samples"] == 1  # what was committed; the queued writes are still waiting
        finally:
            assert holder.stdin is not None
            holder.stdin.write("go\n")
            holder.stdin.close()
            holder.wait(30)
        store.flush()  # the lock let go within the busy timeout: every write went in
        r = c.get("/health")
        assert r.status_code == 200 and r.json()["store"]["busy"] is False and r.json()["store"]["samples"] == 4
