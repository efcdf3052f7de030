"""The engine keeps no state of its own between calls: what one caller's runs learn travels in objects it passes.

A module global that a function changes (rebinds with ``global``, or mutates in place) would be shared by every
caller in the process: two samplers, or two tests, would learn from each other's endpoints. Read-only tables
and ``functools.cache`` of pure functions are not state; the one exception is listed with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "tokenpace"
ENGINE = ("measure", "load")  # the packages that measure: a caller's runs must not leak into another's
MUTATORS = {"append", "extend", "insert", "add", "update", "setdefault", "pop", "popitem", "remove", "discard", "clear"}
# The interpreter's own settings (garbage collection, GIL switch interval) are process-wide, so the count of
# runs that changed them must be too: overlapping runs restore them only when the last one ends.
ALLOWED = {("load/interpreter.py", n) for n in ("_quiet_runs", "_quiet_restore", "_quiet_since", "_full_at")}
# An event loop's lag watch is shared by every run timed on that loop (each run its own watch made the loop they
# time the bottleneck under serve): the watches, one per loop, are found by the loop.
ALLOWED |= {("load/lag.py", "_watches")}


def _module_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _root(node: ast.expr) -> str | None:
    """The name an attribute or subscript chain starts from: ``_cache`` of ``_cache[k].x``."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def changed_globals(source: str) -> set[str]:
    """Module-level names that a function rebinds (``global``) or mutates in place."""
    tree = ast.parse(source)
    names, found = _module_names(tree), set()
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.Global):
                found.update(node.names)
            elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
                targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
                found.update(r for t in targets if not isinstance(t, ast.Name) and (r := _root(t)) in names)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
                found.add(_root(node.func.value) or "")
    return {n for n in found if n in names}


def test_no_measuring_module_changes_a_global() -> None:
    changed = {
        (path.relative_to(SRC).as_posix(), name)
        for package in ENGINE
        for path in sorted((SRC / package).rglob("*.py"))
        for name in changed_globals(path.read_text(encoding="utf-8"))
    }
    assert changed <= ALLOWED, sorted(changed - ALLOWED)


def test_the_scan_sees_each_way_of_changing_a_global() -> None:
    source = """
_seen: dict[str, int] = {}
_order = []
_count = 0

def f(k):
    global _count
    _count += 1
    _seen[k] = 1
    _order.append(k)
"""
    assert changed_globals(source) == {"_seen", "_order", "_count"}
