"""The package's shape: imports go only down the data flow, and no module imports another that imports it back.

``python -m tests.test_layers`` prints the layers and the arrows between packages, counted;
``python -m tests.test_layers web store`` the module imports behind one arrow.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

# Lowest first. A module may import its own package and any package of a lower layer, never a higher one or a
# neighbour in its own layer. The package root only re-exports names (loaded lazily) and is imported by nothing.
LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(layer.split())
    for layer in (
        "errors text version children",
        "config",
        "prompts",
        "measure",
        "clients",
        "load",
        "store sim",
        "schedule agent",
        "board",
        "web",
        "serve",
        "cli",
        "__main__",
    )
)
LAYER = {package: i for i, layer in enumerate(LAYERS) for package in layer}


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((SRC / "tokenpace").rglob("*.py"))}


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Every tokenpace module that ``name`` imports, at its top or inside a function (a lazy import counts)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
            # `from tokenpace.x import y` names a module when y is one, else a name inside tokenpace.x
            found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names)
    return {m for m in found if m == "tokenpace" or m.startswith("tokenpace.")}


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports(name, path, set(found)) - {name} for name, path in found.items()}


def package_of(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def test_every_module_belongs_to_a_layer() -> None:
    assert {package_of(m) for m in modules()} - set(LAYER) == {""}  # "" is the package root


def test_imports_only_go_down_a_layer() -> None:
    upward = [
        f"{m} -> {n}"
        for m, targets in graph().items()
        if package_of(m)
        for n in targets
        if n == "tokenpace" or (package_of(n) != package_of(m) and LAYER[package_of(n)] >= LAYER[package_of(m)])
    ]
    assert upward == []


def test_a_probe_agent_imports_only_what_measuring_and_storing_need() -> None:
    """An agent runs far from the board (issue 11): no scheduler, board, web, serve or simulator comes with it."""
    used = {package_of(n) for m, targets in graph().items() if package_of(m) == "agent" for n in targets}
    assert used - {"agent"} <= {"errors", "text", "version", "config", "prompts", "measure", "clients", "load", "store"}


def test_pages_import_the_samplers_status_not_its_loop() -> None:
    """A page shows what the sampler reports (schedule/status.py); the loop itself is serve's to run (issue 31)."""
    pages = [f"{m} -> {n}" for m, targets in graph().items() if package_of(m) in ("board", "web") for n in targets]
    assert [p for p in pages if p.endswith("tokenpace.schedule.sampler")] == []


def cycle(g: dict[str, set[str]]) -> list[str]:
    """One import cycle in ``g`` as the modules along it, or [] (depth-first search, iterative)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in g:
        if start in state:
            continue
        path, stack = [start], [iter(sorted(g[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            elif nxt not in state and nxt in g:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(g[nxt])))
    return []


def test_there_are_no_import_cycles() -> None:
    assert cycle(graph()) == []


def test_a_cycle_and_an_upward_import_are_seen() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) == []
    lazy = imports("tokenpace.cli.workloads", SRC / "tokenpace/cli/workloads.py", set(modules()))
    assert "tokenpace.config.endpoints" in lazy  # imported inside the command: a lazy import is seen too


def arrows() -> Counter[tuple[str, str]]:
    """Imports between packages, counted by module pairs."""
    return Counter(
        (package_of(m) or "tokenpace", package_of(n) or "tokenpace")
        for m, targets in graph().items()
        for n in targets
        if package_of(m) != package_of(n)
    )


def module_arrows(source: str, target: str) -> list[str]:
    """Each import from a module of package ``source`` to one of package ``target``, as "module -> module"."""
    g = graph()
    return [
        f"{m} -> {n}" for m in sorted(g) if package_of(m) == source for n in sorted(g[m]) if package_of(n) == target
    ]


if __name__ == "__main__":
    if len(sys.argv) == 3:  # `python -m tests.test_layers web store`: the imports behind one arrow
        print("\n".join(module_arrows(*sys.argv[1:])))
        sys.exit(0)
    counted = arrows()
    for i, layer in enumerate(LAYERS):
        print(f"layer {i}: {' '.join(sorted(layer))}")
    print(f"\n{sum(counted.values())} imports between packages, {len(counted)} arrows:")
    for (a, b), n in sorted(counted.items(), key=lambda item: (LAYER.get(item[0][0], 99), item[0])):
        print(f"  {a:>9} -> {b:<9} {n}")
    sys.exit(0)
