"""stderr for every command: rich's Console, made the first time something is printed there.

Importing rich costs more than all of `--help` (tests/cli/test_imports.py), so nothing here loads it early.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from tokenpace.board.console import Console

_made: list[Console] = []


def stderr() -> Console:
    """rich's Console on stderr, made on first use."""
    if not _made:
        from tokenpace.board.console import Console

        _made.append(Console(stderr=True))
    return _made[0]


class _Stderr:
    """``err.print(...)`` in any command, with the Console made only when something is printed."""

    def __getattr__(self, name: str) -> Any:
        return getattr(stderr(), name)


err = cast("Console", _Stderr())  # where a real Console must be passed (a context manager), use stderr()
