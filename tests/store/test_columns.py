"""Every export of samples has the same columns, in the same order (issue 10, item 1): ``run --output`` as CSV
and as JSON Lines, and the web's ``/samples.csv``, all from ``store.columns.EXPORTED``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from click.testing import CliRunner
from starlette.testclient import TestClient

from tokenpace.cli import main
from tokenpace.config.endpoints import Config
from tokenpace.store.columns import EXPORTED, HIDDEN, SAMPLE_COLUMNS
from tokenpace.store.database import open_store
from tokenpace.web import create_app


def test_run_output_and_samples_csv_have_the_same_columns(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    headers: dict[str, list[str]] = {}
    ids: dict[str, list[str]] = {}
    for name in ("out.csv", "out.jsonl"):
        out = tmp_path / name
        # --keep-prompts: the prompt is stored, and still no export shows it.
        args = ["run", "--sim", "-n", "2", "--keep-prompts", "--db", db, "--output", str(out), "--json"]
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        if name.endswith(".csv"):
            rows = list(csv.reader(out.open(newline="", encoding="utf-8")))
            headers[name], ids[name] = rows[0], [r[0] for r in rows[1:]]
            written = rows[1:]
        else:
            docs = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
            assert all(list(d)[-1] == "timeline" and d["timeline"]["events"] for d in docs)  # JSON Lines adds it
            headers[name], ids[name] = [k for k in docs[0] if k != "timeline"], [d["id"] for d in docs]
    with open_store(db) as store:
        assert all(s.prompt_text for s in store.samples())
        with TestClient(create_app(store, Config())) as client:
            web = list(csv.reader(io.StringIO(client.get("/samples.csv").text)))
    headers["/samples.csv"], ids["/samples.csv"] = web[0], [r[0] for r in web[1:]]

    assert headers["out.csv"] == headers["out.jsonl"] == headers["/samples.csv"] == list(EXPORTED)
    assert ids["/samples.csv"] == ids["out.csv"] + ids["out.jsonl"]  # the two runs, oldest first
    assert not HIDDEN & set(EXPORTED) and {"base_url", "prompt_text", "api_key_env"} <= HIDDEN
    assert set(EXPORTED) | HIDDEN == set(SAMPLE_COLUMNS)
    # Not only the columns: the values, as text, are the same in a run's file and on the web.
    assert written == web[1 : 1 + len(written)]
