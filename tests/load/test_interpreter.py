"""The interpreter kept quiet while runs overlap: collection held off, but at bounded intervals."""

from __future__ import annotations

import gc
import time
import weakref

import pytest

from tokenpace.load import interpreter


def test_overlapping_runs_collect_garbage_at_bounded_intervals(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs that overlap for good would hold collection off for good: one entering late collects first."""
    monkeypatch.setattr(interpreter, "QUIET_MAX_S", 0.3)

    def cycle() -> weakref.ref[Node]:
        node = Node()
        node.me = node  # only the cyclic collector frees it
        return weakref.ref(node)

    with interpreter.quiet_interpreter():
        early = cycle()
        with interpreter.quiet_interpreter():  # entered at once: collection stays off
            assert early() is not None and not gc.isenabled()
        time.sleep(0.4)
        with interpreter.quiet_interpreter():  # past QUIET_MAX_S of quiet: collected on the way in
            assert early() is None and not gc.isenabled()
            late = cycle()
            with interpreter.quiet_interpreter():  # the timer restarted: no second collection yet
                assert late() is not None
    assert gc.isenabled()


def test_a_run_collects_the_whole_heap_at_most_every_quiet_max_s(monkeypatch: pytest.MonkeyPatch) -> None:
    """A full collection on the way in is a pause the loop pays (the board's readers too): young ones suffice."""
    calls: list[int] = []
    collect = gc.collect

    def counted(generation: int = 2) -> int:
        calls.append(generation)
        return collect(generation)

    monkeypatch.setattr(gc, "collect", counted)
    monkeypatch.setattr(interpreter, "_full_at", time.monotonic())  # a full collection just happened
    with interpreter.quiet_interpreter():
        pass
    monkeypatch.setattr(interpreter, "_full_at", time.monotonic() - interpreter.QUIET_MAX_S - 1)
    for _ in range(2):
        with interpreter.quiet_interpreter():
            pass
    assert calls == [1, 2, 1] and gc.isenabled()


def test_garbage_a_run_makes_is_collected_between_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """Collection off for a whole run held every request's cyclic garbage to its end: memory grew with the
    request count. Past GARBAGE_OBJECTS new objects a request's end collects them; the heap from before the run
    is frozen, so that collection walks only what the run made."""
    monkeypatch.setattr(interpreter, "GARBAGE_OBJECTS", 500)
    before = Node()
    before.me = before
    kept = weakref.ref(before)
    with interpreter.quiet_interpreter():
        del before  # garbage now, but frozen with the heap as the run found it: not walked while it runs
        made = []
        for _ in range(200):
            node = Node()
            node.me = node
            made.append(weakref.ref(node))
        del node
        interpreter.request_ended()  # 200 nodes and their dicts: still under 500 new objects
        assert all(r() is not None for r in made)
        for _ in range(400):
            node = Node()
            node.me = node
        del node
        interpreter.request_ended()
        assert all(r() is None for r in made) and kept() is not None and not gc.isenabled()
    gc.collect()
    assert kept() is None and gc.isenabled()  # unfrozen when the run ends


class Node:
    me: object = None


def test_a_loops_result_is_handed_back_without_a_repr_of_it() -> None:
    """Python 3.11's asyncio.Runner makes a repr of its main task's result as it puts SIGINT back; a run's kept
    samples took seconds to repr, so run_loop keeps the result off that task."""
    reprs: list[int] = []

    class Big:
        def __repr__(self) -> str:
            reprs.append(1)
            return "Big()"

    big = Big()

    async def main() -> Big:
        return big

    assert interpreter.run_loop(main()) is big
    assert reprs == []
