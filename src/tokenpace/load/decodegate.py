"""Decoding waits while a request is being written: the client never waits on its own decoder.

Streams are decoded on a worker thread after they end, but that thread shares the interpreter lock with the
event loop. When many streams end together (a closed loop's round boundary) their decodes would run exactly
while the next requests are being set up and written, and every hand-back of the lock costs the loop up to a
switch interval: bench/fidelity.py measured that wait as most of the TTFT error counted from the moment a
request was asked for. So the decoder thread checks this gate before each decode and sleeps, without the lock,
while any request is between being asked for (``asking``) and handed to its socket (``written``).

A gate closed for longer than MAX_HOLD_S (a connection that takes seconds to open, an open loop that never
stops sending) holds decoding no longer: results then come late, but they come.
"""

from __future__ import annotations

import threading
import time

MAX_HOLD_S = 0.5  # the longest one closing holds decoding: round boundaries take tens of milliseconds


class DecodeGate:
    """Open while no request is on its way to the socket; ``asking``/``written`` run on the loop's thread."""

    def __init__(self, max_hold_s: float | None = None) -> None:
        self.max_hold_s = MAX_HOLD_S if max_hold_s is None else max_hold_s
        self._asking: set[int] = set()  # ids of the recordings of requests not yet written
        self._open = threading.Event()
        self._open.set()
        self._closed_at = 0.0  # time.monotonic() of the last closing

    def asking(self, key: object) -> None:
        """A request was asked for: decoding waits until it is written."""
        if not self._asking:
            self._closed_at = time.monotonic()
            self._open.clear()
        self._asking.add(id(key))

    def written(self, key: object) -> None:
        """The request is on its socket, or will never be (it failed, or was cancelled): said once or more."""
        self._asking.discard(id(key))
        if not self._asking:
            self._open.set()

    def wait(self) -> None:
        """On the decoder thread: return once no request is being written, or the gate has held MAX_HOLD_S."""
        if not self._open.is_set():
            self._open.wait(max(0.0, self._closed_at + self.max_hold_s - time.monotonic()))
