"""What one response may bring (caps on its bytes, counted after ``Content-Encoding`` is undone), and what is kept.

clients/http1.py holds a body to them as it is read (two counters a piece) and inflates a compressed one in
bounded steps, so a gzip bomb costs about the cap in memory and stops as soon as the cap is passed
(tests/clients/test_hostile_wire.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Limits:
    """Bytes one response may bring, counted after decompression: in all, and in one line (an SSE or NDJSON line)."""

    response_bytes: int = 32 * 2**20  # 500 tokens take ~100 kB of SSE; 300 times that is still a measurement
    line_bytes: int = 2**20  # one event's JSON; a 1200x840 image echoed back is ~250 kB


def size(n: int) -> str:
    """``n`` bytes in the largest binary unit that divides it (MiB, KiB), else in bytes."""
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


@dataclass(slots=True)
class Response:
    """A response's status and headers (names lower-cased), and the first ``keep`` bytes of a body not streamed."""

    status: int = 0
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k == name), None)
