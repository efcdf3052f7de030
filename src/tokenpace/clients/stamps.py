"""When bytes reached this machine: the kernel's receive time of each read, on the clock every figure uses.

A timestamp the client takes itself is late by however long its event loop was busy (or its process not
scheduled) before it got round to the bytes. Linux stamps each packet as it arrives and, with
``SO_TIMESTAMPNS`` set, hands the stamp of the latest one with every read (``recvmsg``'s ancillary data):
arrival times no busy loop can move. The stamp is on CLOCK_REALTIME; it is moved onto ``perf_counter_ns``
(CLOCK_MONOTONIC) by the two clocks' offset read at the read itself, exact to a microsecond or so, and kept
between the request's write and the read, so a clock step in between cannot move it outside them. Where the
platform gives no stamp, the read's own time is the arrival, and the loop's lag bounds it (load/lag.py).
"""

from __future__ import annotations

import socket
import struct
import sys

# Linux's value on the common architectures (asm-generic): Python's socket module does not name it.
SO_TIMESTAMPNS: int | None = getattr(socket, "SO_TIMESTAMPNS", 35 if sys.platform == "linux" else None)
_TIMESPEC = struct.Struct("@ll")  # struct timespec: seconds, nanoseconds, in the platform's longs
ANCILLARY_BYTES = socket.CMSG_SPACE(_TIMESPEC.size) if hasattr(socket, "CMSG_SPACE") else 0


def enable(sock: socket.socket) -> bool:
    """Ask the kernel for receive stamps on ``sock``; False where it cannot give them."""
    if SO_TIMESTAMPNS is None or not ANCILLARY_BYTES:
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    return True


def arrival(ancillary: list[tuple[int, int, bytes]], now_ns: int, real_ns: int, floor_ns: int) -> int:
    """arrival = kernel stamp - (real_ns - now_ns), the two clocks read back to back at the read, kept within
    [floor_ns, now_ns]; now_ns itself when the read carried no stamp."""
    for level, kind, data in ancillary:  # the stamp is the only item asked for: one turn, on the timed path
        if kind == SO_TIMESTAMPNS and level == socket.SOL_SOCKET and len(data) == _TIMESPEC.size:
            seconds, nanoseconds = _TIMESPEC.unpack(data)
            stamp: int = seconds * 1_000_000_000 + nanoseconds - real_ns + now_ns
            return now_ns if stamp > now_ns else floor_ns if stamp < floor_ns else stamp
    return now_ns
