"""The public API, checked exactly as httpx checks its own: a package's ``__all__`` is its public names, sorted."""

from __future__ import annotations
import __future__

import importlib
import types

import pytest

# Packages that re-export names from their modules; every other package's __init__ holds only a docstring.
EXPORTING = ["tokenpace.sim", "tokenpace.web", "tokenpace.measure.clients"]


def public_names(module: types.ModuleType) -> list[str]:
    """Names a reader of ``module`` may use: not private, not a submodule, not a ``__future__`` feature."""
    names = [
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType | __future__._Feature)
    ]
    return isort_sorted(names)


def isort_sorted(names: list[str]) -> list[str]:
    """Sorted as ruff sorts ``__all__`` (RUF022): CONSTANTS, then Classes, then everything else."""
    return sorted(names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n))


@pytest.mark.parametrize("name", EXPORTING)
def test_all_is_exactly_the_public_names(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__all__ == public_names(module)


def test_other_packages_export_nothing() -> None:
    for name in ["config", "measure", "store", "schedule", "board", "serve"]:
        module = importlib.import_module(f"tokenpace.{name}")
        assert public_names(module) == [] and not hasattr(module, "__all__"), name
