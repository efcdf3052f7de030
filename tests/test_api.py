"""The public API, checked exactly as httpx checks its own: a package's ``__all__`` is its public names, sorted."""

from __future__ import annotations
import __future__

import importlib
import types

import pytest

import tokenpace

# Packages that re-export names from their modules; every other package's __init__ holds only a docstring.
EXPORTING = ["tokenpace.sim", "tokenpace.web", "tokenpace.clients"]


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


def test_the_roots_names_load_on_first_use_and_are_all_listed() -> None:
    assert tokenpace.__all__ == isort_sorted([*tokenpace._HOME, "__version__"])
    for name in tokenpace.__all__:
        assert getattr(tokenpace, name) is not None
    assert public_names(tokenpace) == isort_sorted(list(tokenpace._HOME))  # nothing public beside them once loaded


def test_other_packages_export_nothing() -> None:
    for name in ["config", "measure", "store", "schedule", "board", "serve"]:
        module = importlib.import_module(f"tokenpace.{name}")
        assert public_names(module) == [] and not hasattr(module, "__all__"), name
