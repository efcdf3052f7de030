"""Closing a command's store: what it could not write goes to its rescue file, and the command says so."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenpace.errors import StoreError

if TYPE_CHECKING:
    from tokenpace.store.database import Store


def close_store(store: Store) -> None:
    """Close the store; records it could not write go to its rescue file (Store.rescue_path), not nowhere.

    Whether or not closing raises: under serve the sampler's own flushes have already reported (and cleared)
    the write errors, so only ``Store.unsaved`` and ``Store.unsaved_runs`` still tell of records the database
    does not hold.
    """
    problem: StoreError | None = None
    try:
        store.close()
    except StoreError as exc:
        problem = exc
    if store.unsaved or store.unsaved_runs:
        count = store.rescue_unsaved(str(problem) if problem else "the store had not taken it when tokenpace stopped")
        why = f"{problem}; " if problem else ""
        raise StoreError(f"{why}{count} records the store did not take were written to {store.rescue_path}")
    if problem is not None:
        raise problem
