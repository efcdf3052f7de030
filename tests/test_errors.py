"""The exception tree: the drawing in errors' docstring is the tree the code defines, with its exit codes."""

from __future__ import annotations

import re

from tokenpace import errors


def test_the_drawn_tree_is_the_defined_tree() -> None:
    drawn = re.findall(r"[├└]── (\w+)", errors.__doc__ or "")
    defined = [c.__name__ for c in errors.TokenpaceError.__subclasses__()]
    assert drawn == defined and len(drawn) >= 5


def test_mistakes_exit_2_and_failures_to_work_exit_3() -> None:
    assert errors.ConfigError("x").exit_code == errors.BadRequest("x").exit_code == 2
    for cls in (errors.StoreError, errors.TokenizerError, errors.SimulatorError):
        assert cls("x").exit_code == 3, cls
