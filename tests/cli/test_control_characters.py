"""Names holding terminal escapes (OSC 52 writes the clipboard, OSC 0 the window title) reach no reader raw.

A config refuses a provider, plan or model name holding a control character (or a bidi control) in one line;
a store another process wrote, an agent or a server can still hold one, and a config names workloads. Every
output shows such a name with its control characters as pictures (ESC as "␛"): `tokenpace run`,
`leaderboard`, `workloads`, error lines, the board's pages, `/metrics`, the CSV exports and the bench report.
The CLI is the real one, over a real simulator and store.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from tokenpace.board.console import Console
from tokenpace.board.loadtable import print_result
from tokenpace.cli import main
from tokenpace.config import endpoints
from tokenpace.load.results import read_result
from tokenpace.store.database import open_store
from tokenpace.web import create_app
from tokenpace.web.paths import endpoint_path, model_path
from tokenpace.web.report import render_report

CLIPBOARD = "\x1b]52;c;aGFja2Vk\x07"  # OSC 52: "hacked" onto the reader's clipboard
TITLE = "\x1b]0;pwned\x1b\\"  # OSC 0 ended by ST: the window's title
CSI = "\x9b2J"  # C1 CSI: clear the screen, in one character
PROVIDER, MODEL = f"evil{CLIPBOARD}co", f"m{TITLE}odel{CSI}\u202egnp.exe"  # U+202E: reads "exe.png"


def toml(text: str) -> str:
    """A TOML basic string of ``text``, its control characters as \\uXXXX escapes (TOML allows no raw ones)."""
    escaped = (f"\\u{ord(ch):04x}" if ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F or ch in '"\\' else ch for ch in text)
    return '"' + "".join(escaped) + '"'


WORKLOAD = f"w{TITLE}"
CONFIG = f"""
[providers.evilco]
simulate = {{ ttft_ms = 5, tokens_per_s = 2000, output_tokens = 8 }}
models = ["evilmodel"]

[workloads.{toml(WORKLOAD)}]
input_tokens = 300
max_tokens = 8
"""
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")  # but tab and newline


def raw_controls(text: str) -> list[str]:
    return [f"{m.group()!r} at {m.start()}" for m in RAW.finditer(text)]


def rename(db: str, names: dict[str, str]) -> None:
    """The store's providers and models renamed, in every table, as a store another process wrote could name
    them: no config may (it refuses a control character in a name)."""
    with sqlite3.connect(db) as c:
        for (table,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            columns = {row[1] for row in c.execute(f"PRAGMA table_info({table})")}
            for column in sorted({"provider", "model"} & columns):
                for old, new in names.items():
                    c.execute(f"UPDATE {table} SET {column} = ? WHERE {column} = ?", (new, old))  # noqa: S608


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """The config, a store holding a run of its endpoint by the real `tokenpace run`, and what the run printed."""
    folder = tmp_path_factory.mktemp("controls")
    config, db = folder / "evil.toml", str(folder / "t.db")
    config.write_text(CONFIG)
    run = CliRunner(env={"COLUMNS": "300"}).invoke(
        main, ["run", "--config", str(config), "-n", "3", "--publish", "--db", db]
    )
    assert run.exit_code == 0, run.output
    rename(db, {"evilco": PROVIDER, "evilmodel": MODEL})
    assert not raw_controls(run.output), raw_controls(run.output)
    return config, db, run.output


@pytest.mark.parametrize(
    ("table", "said"),
    [
        (f"[providers.{toml(PROVIDER)}]\nsimulate = {{}}", "providers.evil␛]52;c;aGFja2Vk␇co: "),
        (f"[providers.x]\nsimulate = {{}}\nmodels = [{toml(MODEL)}]", "providers.x.models[0]: "),
        (f"[providers.x]\nsimulate = {{}}\n[providers.x.plans.{toml('p' + CSI)}]\nmodels = ['m']", "plans.p\ufffd2J: "),
        ('[providers.x]\nsimulate = {}\nmodels = ["a\\nFORGED"]', "providers.x.models[0]: "),
        ('[providers.x]\nsimulate = {}\nmodels = ["b\u202ecod.exe"]', "providers.x.models[0]: "),
    ],
    ids=["provider", "model", "plan", "newline", "bidi"],
)
def test_a_config_refuses_a_name_with_a_control_character_in_one_line(tmp_path: Path, table: str, said: str) -> None:
    """A provider, plan or model name is shown as written everywhere: one holding a control character or a bidi
    control is a mistake, said in one line naming the key (its characters as pictures)."""
    config = tmp_path / "bad.toml"
    config.write_text(table + "\n")
    run = CliRunner().invoke(main, ["run", "--config", str(config), "--db", str(tmp_path / "x.db")])
    assert run.exit_code == 2 and len(run.output.strip().splitlines()) == 1, run.output
    assert f"{said}give a name on one line, without control characters or bidi controls" in run.output, run.output
    assert not raw_controls(run.output) and "\u202e" not in run.output


def test_the_command_line_refuses_such_a_name_too(tmp_path: Path) -> None:
    args = ["run", "--base-url", "http://127.0.0.1:9/v1", "--model", "a\nFORGED", "--db", str(tmp_path / "x.db")]
    run = CliRunner().invoke(main, args)
    assert run.exit_code == 2 and run.output.strip().splitlines()[-1].startswith("Error: --model: give a name on one")


@pytest.mark.parametrize("columns", ["80", "300"])  # the narrow form, three lines an endpoint, and the table
def test_leaderboard_shows_the_names_escapes_as_pictures(measured: tuple[Path, str, str], columns: str) -> None:
    config, db, _ = measured
    args = ["leaderboard", "--config", str(config), "--db", db, "--min-samples", "1", "-w", "1k"]
    board = CliRunner(env={"COLUMNS": columns}).invoke(main, args)
    assert board.exit_code == 0, board.output
    assert not raw_controls(board.output), raw_controls(board.output)
    assert "evil␛]52;c;aGFja2Vk␇co" in board.output.replace("\n", "")


def test_workloads_and_error_lines_show_them_as_pictures(measured: tuple[Path, str, str]) -> None:
    config, _, _ = measured
    listed = CliRunner(env={"COLUMNS": "300"}).invoke(main, ["workloads", "--config", str(config)])
    assert listed.exit_code == 0 and not raw_controls(listed.output), raw_controls(listed.output)
    assert "w␛]0;pwned␛\\" in listed.output
    wrong = CliRunner().invoke(main, ["run", "--config", str(config), f"nobody{CLIPBOARD}", "--db", "x.db"])
    assert wrong.exit_code == 2 and not raw_controls(wrong.output), wrong.output


def test_pages_metrics_and_json_carry_no_raw_control(measured: tuple[Path, str, str]) -> None:
    config, db, _ = measured
    cfg = endpoints.read_config(config)
    with open_store(db) as store, TestClient(create_app(store, cfg)) as c:
        (row,) = c.get("/leaderboard.json?workload=1k&min_samples=1").json()["entries"]
        assert row["provider"] == PROVIDER  # JSON carries the name as it is, escaped by JSON itself
        page = endpoint_path(row["provider"], row["plan"], row["model"])
        pages = ["/?min_samples=1", page, model_path(row["model"]), "/metrics", "/methodology"]
        for path in pages:
            r = c.get(path)
            assert r.status_code == 200, path
            assert not raw_controls(r.text), (path, raw_controls(r.text)[:3])
        assert "evil␛]52;c;aGFja2Vk␇co" in c.get("/?min_samples=1").text
        assert "{U+202E}gnp.exe" in c.get(page).text  # as text: not a tag, in the page or in its charts' SVG


def test_the_bench_report_carries_no_raw_control(tmp_path: Path, measured: tuple[Path, str, str]) -> None:
    """A result file names its endpoint as it likes: its report and its table in the terminal show pictures."""
    config, _, _ = measured
    out = tmp_path / "out"
    args = ["bench", "--config", str(config), "evilco/evilmodel", "-c", "1", "-n", "2", "--warmup", "0"]
    bench = CliRunner(env={"COLUMNS": "160"}).invoke(main, [*args, "--db", str(tmp_path / "b.db"), "--out", str(out)])
    assert bench.exit_code == 0, bench.output
    (written,) = out.glob("*.json")
    result = dataclasses.replace(read_result(written), endpoint=f"{PROVIDER}/{MODEL}\nFORGED")
    html = render_report(result)
    assert not raw_controls(html), raw_controls(html)[:3]
    assert "evil␛]52;c;aGFja2Vk␇co" in html
    shown = io.StringIO()
    print_result(Console(file=shown, width=160), result)
    assert not raw_controls(shown.getvalue()) and "evil␛]52;c;aGFja2Vk␇co" in shown.getvalue()
    assert not [line for line in shown.getvalue().splitlines() if line.startswith("FORGED")]


def test_log_lines_under_serve_and_agent_are_cleaned() -> None:
    """serve and agent log a server's error messages: their handler's Formatter cleans the line."""
    import logging

    from tokenpace.board.console import Formatter

    record = logging.LogRecord("tokenpace", logging.WARNING, __file__, 1, "run failed: %s", (CLIPBOARD,), None)
    assert Formatter("%(message)s").format(record) == "run failed: ␛]52;c;aGFja2Vk␇"


FORMULA_PROVIDER, FORMULA_MODEL = "=cmd|' /C calc'!A0", "+SUM(1+1)"
FORMULA_CONFIG = f"""
[providers.{toml(FORMULA_PROVIDER)}]
simulate = {{ ttft_ms = 5, tokens_per_s = 2000, output_tokens = 8 }}
models = [{toml(FORMULA_MODEL)}, "@m", "-1"]
"""


def test_every_csv_export_quotes_formulas_and_shows_controls_as_pictures(tmp_path: Path) -> None:
    """`run --output`, `/samples.csv` and `/leaderboard.csv`: no text cell a spreadsheet would run as a formula
    (OWASP: one starting = + - @ tab or CR gets a leading quote), no raw control character; numbers stay numbers."""
    config, db, out = tmp_path / "f.toml", str(tmp_path / "f.db"), tmp_path / "out.csv"
    config.write_text(FORMULA_CONFIG)
    run = CliRunner().invoke(
        main, ["run", "--config", str(config), "-n", "1", "--publish", "--db", db, "--output", str(out)]
    )
    assert run.exit_code == 0, run.output
    rename(db, {"@m": "@m" + CLIPBOARD})  # the pages' exports carry what the store holds
    with open_store(db) as store, TestClient(create_app(store, endpoints.read_config(config))) as c:
        files = {
            "run --output": out.read_text(encoding="utf-8"),
            "/samples.csv": c.get("/samples.csv").text,
            "/leaderboard.csv": c.get("/leaderboard.csv?min_samples=1").text,
        }
    for name, text in files.items():
        rows = list(csv.reader(io.StringIO(text)))
        header, cells = rows[0], [cell for row in rows[1:] for cell in row]
        assert len(rows) == 4 and not raw_controls(text), (name, raw_controls(text))
        assert not [c for c in cells if c.startswith(("=", "+", "@", "\t", "\r"))], name
        assert not [c for c in cells if c.startswith("-") and not re.fullmatch(r"-[\d.e-]+", c)], name
        names = {r[header.index("provider")] + " " + r[header.index("model")] for r in rows[1:]}
        held = "@m" if name == "run --output" else "@m␛]52;c;aGFja2Vk␇"
        assert names == {f"'{FORMULA_PROVIDER} '{m}" for m in (FORMULA_MODEL, held, "-1")}, name


NEWLINE_MODEL, BIDI_MODEL = "a\nFORGED 1/1 ok", "b\u202ecod.exe"  # the latter reads "bexe.doc"
LINE_CONFIG = """
[providers.x]
simulate = { ttft_ms = 5, tokens_per_s = 2000, output_tokens = 8 }
models = ["a", "b"]
"""


@pytest.mark.parametrize("columns", ["80", "300"])
def test_a_newline_or_a_bidi_override_in_a_name_forges_no_line(tmp_path: Path, columns: str) -> None:
    """`leaderboard` (and `run`, whose names a config gives) shows a name from the store on its line, its newline
    as "␤", and a bidi control as its code point."""
    config, db = tmp_path / "l.toml", str(tmp_path / "l.db")
    config.write_text(LINE_CONFIG)
    runner = CliRunner(env={"COLUMNS": columns})
    run = runner.invoke(main, ["run", "--config", str(config), "-n", "1", "--publish", "--db", db])
    assert run.exit_code == 0, run.output
    rename(db, {"a": NEWLINE_MODEL, "b": BIDI_MODEL})
    board = runner.invoke(main, ["leaderboard", "--db", db, "--min-samples", "1"])
    for said in (board,):
        assert said.exit_code == 0, said.output
        lines = said.output.splitlines()
        assert not [line for line in lines if "FORGED" in line and "a␤" not in line], said.output
        assert "\u202e" not in said.output and "b{U+202E}cod.exe" in said.output.replace("\n", "")


def test_a_name_spelling_an_emoji_code_is_shown_as_written() -> None:
    """rich turns ``:free:`` into an emoji: an OpenRouter model id ends in ``:free``, a plan may be called free."""
    drawn = io.StringIO()
    Console(file=drawn, color_system=None, width=200).print("openrouter/llama:free: 3 samples; ollama-cloud:free:")
    assert drawn.getvalue() == "openrouter/llama:free: 3 samples; ollama-cloud:free:\n"
