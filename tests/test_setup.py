"""The README's two set-up commands: the service installs only what it needs, and the test command what it adds.

The service's environment leaves out the dev group (test tools, Playwright, the providers' own SDKs) and the
PostgreSQL driver (the extra ``tokenpace[postgresql]``); the store imports that driver only for a postgresql://
URL and says in one line how to install it where it is missing.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

# Run in a subprocess where importing psycopg fails, as it does where the extra is not installed.
WITHOUT_PSYCOPG = "import sys; sys.modules['psycopg'] = None\n"


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_PSYCOPG + code, *args], capture_output=True, text=True, check=False, cwd=ROOT
    )


def _setup_commands() -> list[str]:
    section = README.split("## Set-up: two commands", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "the set-up section has a sh block"
    return [line.split("#", 1)[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_the_service_installs_neither_the_dev_group_nor_the_postgresql_driver() -> None:
    assert PYPROJECT["tool"]["uv"]["default-groups"] == []
    assert not any(d.startswith("psycopg") for d in PYPROJECT["project"]["dependencies"])
    assert any(d.startswith("psycopg[binary]") for d in PYPROJECT["project"]["optional-dependencies"]["postgresql"])
    assert "tokenpace[postgresql]" in PYPROJECT["dependency-groups"]["dev"], "the tests use PostgreSQL"
    serve, test = _setup_commands()
    assert serve.endswith("&& uv run tokenpace serve")
    assert "--group dev" in test and test.endswith(" pytest")


def test_ci_runs_exactly_the_readme_test_command() -> None:
    test = _setup_commands()[1]
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert test in ci


def test_a_sqlite_store_needs_no_postgresql_driver(tmp_path: Path) -> None:
    code = "from tokenpace.store.database import open_store\nopen_store(sys.argv[1]).close()\nprint('ok')"
    done = _python(code, str(tmp_path / "t.db"))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_a_postgresql_url_without_the_driver_says_how_to_install_it() -> None:
    code = "from tokenpace.cli import main\nmain()"
    done = _python(code, "leaderboard", "--db", "postgresql://someone:hunter2@127.0.0.1:5432/test")
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "uv run --extra postgresql" in lines[0] and "pip install 'tokenpace[postgresql]'" in lines[0]
    assert "hunter2" not in done.stderr + done.stdout
