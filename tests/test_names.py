"""One name, one meaning: a top-level name is defined in one module of the package, unless ALLOWED says why not.

Two modules each defining ``one_line`` (a bool in one, a string in the other) or ``Agent`` (a worker in one, a
row in the other) make a reader, and an import, guess which is meant. Private names count too: a private helper
written twice is usually the same code twice, which wants one shared function.

``python -m tests.test_names`` prints every name defined in two or more modules, allowed or not.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "tokenpace"

# Names that mean the same thing in every module that defines them, each with the reason it is not one import.
ALLOWED: dict[str, str] = {
    "log": "logging.getLogger(__name__): each module's own logger, named for the module, is the logging idiom",
    "T": "a TypeVar local to each generic module's signatures; sharing one would couple unrelated modules",
}


def top_level_names(tree: ast.Module) -> set[str]:
    """The names a module binds at its top: functions, classes and assignments (dunders such as __all__ aside)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("__")}


def defined_twice(package: Path) -> dict[str, list[str]]:
    """Every top-level name defined in two or more of ``package``'s modules, with those modules' paths."""
    where: defaultdict[str, list[str]] = defaultdict(list)
    for path in sorted(package.rglob("*.py")):
        for name in top_level_names(ast.parse(path.read_text(), str(path))):
            where[name].append(path.relative_to(package).as_posix())
    return {name: paths for name, paths in sorted(where.items()) if len(paths) > 1}


def test_each_top_level_name_is_defined_in_one_module() -> None:
    twice = defined_twice(PACKAGE)
    unexplained = [f"{name}: {' '.join(paths)}" for name, paths in twice.items() if name not in ALLOWED]
    assert unexplained == [], "rename one side, share one definition, or add it to ALLOWED with a reason"


def test_every_listed_name_is_still_defined_twice() -> None:
    """An entry outlives its reason once the duplicate is gone; it would then excuse a new one silently."""
    assert sorted(set(ALLOWED) - set(defined_twice(PACKAGE))) == []


def test_a_name_defined_in_two_modules_is_seen(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("one_line: bool = True\ndef load() -> None: ...\n_cache = {}\n__all__ = []\n")
    (tmp_path / "sub" / "b.py").write_text("def one_line(s: str) -> str: ...\nclass Load: ...\n__all__ = []\n")
    (tmp_path / "sub" / "c.py").write_text("_cache = 1\nif True:\n    load = 2\n")
    assert defined_twice(tmp_path) == {"_cache": ["a.py", "sub/c.py"], "one_line": ["a.py", "sub/b.py"]}


if __name__ == "__main__":
    for name, paths in defined_twice(PACKAGE).items():
        print(f"{name}: {' '.join(paths)}{'  (allowed)' if name in ALLOWED else ''}")
    sys.exit(0)
