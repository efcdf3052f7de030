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
        count = rescue_unsaved(store, str(problem) if problem else "the store had not taken it when tokenpace stopped")
        why = f"{problem}; " if problem else ""
        raise StoreError(f"{why}{count} records the store did not take were written to {store.rescue_path}")
    if problem is not None:
        raise problem


def rescue_unsaved(store: Store, why: str) -> int:
    """Append every record still unsaved to the rescue file (for a closed store); returns how many went."""
    from tokenpace.store.refusals import rescue

    count = 0
    for unsaved in (store.unsaved, store.unsaved_runs):
        while unsaved:
            try:
                rescue(store.rescue_path, unsaved[0], why)
            except OSError as exc:
                where = f"cannot write the rescue file {store.rescue_path}"
                raise StoreError(f"{where}: {exc.strerror or exc}") from None
            unsaved.pop(0)
            count += 1
    return count
