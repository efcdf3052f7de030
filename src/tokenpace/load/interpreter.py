"""The interpreter kept quiet while streams are timed: garbage collected only in short, counted pauses, a short GIL
switch interval, and the decoder thread at the lowest CPU priority."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

DECODER_SWITCH_INTERVAL_S = 0.0002
QUIET_MAX_S = 300.0  # the longest garbage collection is held off while runs overlap (see quiet_interpreter)
# Objects made and not freed since the last collection (gc.get_count()[0]) past which a request's end collects
# the young generation while quiet. A request that leaves no reference cycle frees all it made (a million
# against the simulator made none), but one that does (an exception's traceback, a library's cycle) would
# otherwise hold its garbage to the end of the run: memory growing with the request count. A young collection
# of this many objects takes a few milliseconds; as in CPython's own schedule, every tenth also collects the
# middle generation and every hundredth the whole heap the run made (the heap from before it is frozen).
GARBAGE_OBJECTS = 50_000
_quiet_lock = threading.Lock()
_quiet_runs = 0  # runs overlap under `tokenpace serve`: the first one in quiets, the last one out restores
_quiet_restore: tuple[bool, float] = (True, 0.005)
_quiet_since = 0.0  # time.monotonic() of the last collection while quiet
_full_at = 0.0  # time.monotonic() of the last full collection on the way in


@contextlib.contextmanager
def quiet_interpreter() -> Iterator[None]:
    """No long pauses of the interpreter's own while streams are timed; everything is restored afterwards.

    A full garbage collection over tens of thousands of chunk records stalled the loop for ~100 ms at 256
    streams (bench/fidelity.py), so automatic collection is off until the run ends, and the heap as the run
    found it is frozen (gc.freeze): the collections :func:`request_ended` makes between requests, should the run
    leave garbage, walk only what the run made. A short GIL switch interval makes the decoder thread hand the GIL back
    within a fraction of a millisecond when bytes arrive (default 5 ms).
    Under serve, overlapping runs could keep collection off for good: a run that enters after more than
    QUIET_MAX_S without one collects first, one bounded pause every five minutes at worst rather than
    unbounded memory. On the way in, only the young generations are collected unless a full collection is
    QUIET_MAX_S old: under serve a full one walks the whole heap (pages and rows kept for readers), a pause of
    tens of milliseconds on the loop that serves the board and times the runs already in flight elsewhere.
    """
    global _quiet_runs, _quiet_restore, _quiet_since, _full_at
    with _quiet_lock:
        if _quiet_runs == 0:
            if time.monotonic() - _full_at > QUIET_MAX_S:
                gc.collect()
                _full_at = time.monotonic()
            else:
                gc.collect(1)
            _quiet_restore = (gc.isenabled(), sys.getswitchinterval())
            gc.disable()
            gc.freeze()
            sys.setswitchinterval(DECODER_SWITCH_INTERVAL_S)
            _quiet_since = time.monotonic()
        elif _quiet_restore[0] and time.monotonic() - _quiet_since > QUIET_MAX_S:  # (only if it was on before)
            gc.collect()
            _quiet_since = time.monotonic()
        _quiet_runs += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_runs -= 1
            if _quiet_runs == 0:
                sys.setswitchinterval(_quiet_restore[1])
                gc.unfreeze()
                if _quiet_restore[0]:
                    gc.enable()


def request_ended() -> None:
    """At a request's end, while quiet: collect the young generation once GARBAGE_OBJECTS objects are new since
    the last collection (the older ones in CPython's proportions); on the loop's thread, a pause the loop-lag
    watch sees and judges the figures it may have moved by."""
    young, middle, old = gc.get_count()
    if young < GARBAGE_OBJECTS or not _quiet_runs or not _quiet_restore[0]:
        return
    gc.collect(2 if old >= 9 else 1 if middle >= 9 else 0)


def yield_to_the_loop() -> None:
    """Lowest CPU priority for the decoder thread, so on a busy core the kernel runs the timing loop first."""
    with contextlib.suppress(AttributeError, OSError):  # not every platform lets a thread change its own
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop where it is installed: its lower per-event cost is timing accuracy here."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run_loop(main: Coroutine[Any, Any, T]) -> T:
    """``main`` run to its end on a fresh event loop (uvloop where installed), and its result.

    The result is handed back past the loop's main task, never kept as that task's: Python 3.11's asyncio.Runner
    makes a repr of its main task, result and all, as it puts back the SIGINT handler (signal._int_to_enum), and
    a load test's kept samples took over a second of CPU to repr, counted in bench/fidelity.py's CPU per event.
    """
    returned: list[T] = []

    async def kept() -> None:
        returned.append(await main)

    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        runner.run(kept())
    return returned[0]
