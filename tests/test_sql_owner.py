"""Only ``tokenpace.store`` speaks SQL to the samples and runs tables (issue 10, item 1).

A query elsewhere (the scheduler's budget reads, the web's CSV) couples its layer to the schema: a migration
would have to find it by grep. The store's modules name each read instead and return plain data.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "tokenpace"
STORE = SRC / "store"
# SQL that names a table; read from string literals only, so prose in comments ("figures from samples...")
# and docstrings never counts, while implicit concatenation and f-strings' literal parts do.
TABLE_SQL = re.compile(r"\b(from|into|update|join|table|exists)\s+(samples|runs)\b", re.IGNORECASE)
RAW_CALLS = {"query", "execute", "executemany"}  # a DB-API or Store call taking SQL text


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def offences(path: Path) -> list[str]:
    """``file:line: what`` for each SQL string against samples/runs and each raw query call in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    where = path.relative_to(SRC.parent)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if match := TABLE_SQL.search(node.value):
                found.append(f"{where}:{node.lineno}: SQL {match.group(0)!r}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RAW_CALLS:
            found.append(f"{where}:{node.lineno}: .{node.func.attr}(...) call")
    return found


def test_no_sql_against_samples_or_runs_outside_the_store() -> None:
    outside = [p for p in sorted(SRC.rglob("*.py")) if STORE not in p.parents]
    assert len(outside) > 50  # the scan did find the package
    assert [o for p in outside for o in offences(p)] == []


def test_the_scan_sees_sql_in_the_store() -> None:
    """The pattern itself works: the store's own modules are full of it."""
    assert any(offences(p) for p in STORE.glob("*.py"))
