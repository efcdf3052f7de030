"""`tokenpace route MODEL`: the routing feed in the terminal, as /route.json, and its exports."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from tests.store.test_windows import put
from tests.web.test_route import GROQ, HOSTILE, MODEL, check_litellm
from tests.webkit import SECRET, SECRET_ENV
from tokenpace.cli import main
from tokenpace.store.database import open_store


def test_route_command_prints_the_table_and_each_export(tmp_path: Path) -> None:
    db, now = str(tmp_path / "cli.db"), datetime.now(UTC)
    with open_store(db) as store:
        for i in range(4):
            put(store, GROQ, now - timedelta(minutes=2 + i), gap_ms=2)
            put(store, HOSTILE, now - timedelta(minutes=2 + i), gap_ms=20)
        store.flush()
    toml = tmp_path / "route.toml"  # groq as served; the hostile endpoint is measured by no job any more
    toml.write_text(f'[providers.groq]\nmodels = ["{MODEL}"]\napi_key_env = "{SECRET_ENV}"\n')
    runner = CliRunner(env={SECRET_ENV: SECRET})
    table = runner.invoke(main, ["route", MODEL, "--db", db, "--config", str(toml)])
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert lines[0].split()[:2] == ["1", f"groq/{MODEL}"] and "30 min" in lines[0] and "n=4" in lines[0]
    assert "out: not measured any more" in lines[1] and "\x1b" not in table.stdout

    def exported(*extra: str) -> Any:
        result = runner.invoke(main, ["route", MODEL, "--db", db, "--config", str(toml), *extra])
        assert result.exit_code == 0 and SECRET not in result.stdout, result.output
        return json.loads(result.stdout)

    assert [e["rank"] for e in exported("--format", "json")["entries"]] == [1, None]
    check_litellm(exported("--format", "litellm")["model_list"])
    assert exported("--format", "openrouter", "--by", "ttft")["provider"]["order"] == ["groq"]
    bad = runner.invoke(main, ["route", MODEL, "--db", db, "--max-price", "lots"])
    assert bad.exit_code != 0 and "max_price 'lots': use a number" in bad.output and "Traceback" not in bad.output
