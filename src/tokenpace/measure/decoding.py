"""Where decoding runs while streams are timed: never beside a timed stream when only a few are in flight.

Decoding a finished stream (SSE parsing, JSON, o200k counts) costs milliseconds of Python. On a thread it holds
the GIL, and on a busy core the kernel can preempt that thread (at nice 19, for a scheduler tick of ~4 ms)
while it holds the GIL: the loop then waits for the GIL behind a thread that is not even running, and a
token that arrives meanwhile is stamped late. bench/fidelity.py saw it at one stream: 1-2 requests in 15 had
their first token stamped 3-4 ms late, and gaps showed 2-4 ms hiccups. So at low concurrency (at most
``defer_up_to`` streams at once) decoding waits until no stream has been in flight for ``idle_s``, or until
the run drains; at higher concurrency streams overlap all the time, there is no such moment, and each
decoding goes to the thread as its stream ends, as before.

The engine says when each stream starts and ends (:meth:`Decoder.stream_started`, :meth:`Decoder.stream_ended`),
submits decoding with :meth:`Decoder.submit` and awaits :meth:`Decoder.drain` before it reads the results;
work that must run at once (building the prompts before the clock starts) goes to :meth:`Decoder.run_now`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from tokenpace.errors import ConfigError

T = TypeVar("T")

DEFER_UP_TO = 4  # concurrency at or below which decoding waits for a moment with no stream in flight
IDLE_S = 0.05  # how long no stream must have been in flight before held decoding runs
HOLD_MAX = 2_000  # decodings held at most: past this they all run anyway (memory of a long run at 1 stream)


def _lowest_priority() -> None:
    """Lowest CPU priority for the decoding thread, so on a busy core the kernel runs the timing loop first."""
    with contextlib.suppress(AttributeError, OSError):  # not every platform lets a thread change its own
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


def _settle(outer: asyncio.Future[T], inner: asyncio.Future[T]) -> None:
    """Hand what ``inner`` ended with to ``outer``, unless ``outer`` was cancelled meanwhile."""
    if outer.done():
        return
    if inner.cancelled():
        outer.cancel()
    elif (exc := inner.exception()) is not None:
        outer.set_exception(exc)
    else:
        outer.set_result(inner.result())


class Decoder:
    """One decoding thread, and the rule for when it may run (see the module's docstring)."""

    def __init__(
        self, concurrency: int, defer_up_to: int = DEFER_UP_TO, idle_s: float = IDLE_S, hold_max: int = HOLD_MAX
    ) -> None:
        if concurrency < 1 or defer_up_to < 0 or idle_s < 0 or hold_max < 1:
            raise ConfigError("decoder: concurrency and hold_max must be >= 1, defer_up_to and idle_s >= 0")
        self.defers = concurrency <= defer_up_to
        self.idle_s = idle_s
        self.hold_max = hold_max
        self.in_flight = 0
        self._pool: ThreadPoolExecutor | None = None
        self._held: list[tuple[asyncio.Future[Any], Callable[..., Any], tuple[Any, ...]]] = []
        self._idle: asyncio.TimerHandle | None = None

    @property
    def held(self) -> int:
        """Decodings waiting for a moment with no stream in flight."""
        return len(self._held)

    def start(self) -> None:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="tokenpace-decode", initializer=_lowest_priority)

    def close(self) -> None:
        """Stop the thread after what it was given; decodings still held (never drained) are cancelled."""
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        for outer, _, _ in self._held:
            outer.cancel()
        self._held.clear()
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def stream_started(self) -> None:
        self.in_flight += 1
        if self._idle is not None:  # not idle after all: what is held waits on
            self._idle.cancel()
            self._idle = None

    def stream_ended(self) -> None:
        self.in_flight = max(0, self.in_flight - 1)
        self._when_idle()

    def run_now(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Run ``fn(*args)`` on the thread at once, whatever is in flight."""
        if self._pool is None:
            raise RuntimeError("Decoder.start() first")
        return asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """``fn(*args)`` on the thread: at once above ``defer_up_to`` streams, else once streams are idle."""
        if not self.defers:
            return self.run_now(fn, *args)
        outer: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._held.append((outer, fn, args))
        if len(self._held) >= self.hold_max:
            self._release()
        else:
            self._when_idle()
        return outer

    async def drain(self) -> None:
        """Run everything held now and wait until all of it has finished (its failures are the callers')."""
        pending = self._release()
        await asyncio.gather(*pending, return_exceptions=True)

    def _when_idle(self) -> None:
        if self.in_flight == 0 and self._held and self._idle is None:
            self._idle = asyncio.get_running_loop().call_later(self.idle_s, self._release)

    def _release(self) -> list[asyncio.Future[Any]]:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        held, self._held = self._held, []
        for outer, fn, args in held:
            if not outer.cancelled():
                inner = self.run_now(fn, *args)
                inner.add_done_callback(functools.partial(_settle, outer))
        return [outer for outer, _, _ in held]
