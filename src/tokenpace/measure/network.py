"""The network between a probe agent and an endpoint, measured just before a run: what TTFT holds besides the provider.

TTFT from one place includes that place's distance to the provider. An agent measures the path on its own,
right before each job, so the board can show TTFT with one network round trip taken off beside the raw figure:

- ``connect_ms``: the TCP handshake on a fresh connection (one round trip to whatever terminates TCP: the
  provider's edge, or a proxy on the way);
- ``tls_ms``: the TLS handshake after it (None for ``http://``);
- ``rtt_ms``: the fastest of a few cheap requests (the protocol's model list) on one kept connection: a round
  trip to the HTTP server itself, with the least of its own work in it.

Corrected TTFT = TTFT - rtt_ms. It removes the distance; it cannot remove a provider's queueing or prompt
processing, which is what TTFT is for, nor the time a cheap request itself takes on the server.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Network:
    """The path to an endpoint as one agent saw it before a run (milliseconds; None where not measured)."""

    connect_ms: float | None = None
    tls_ms: float | None = None
    rtt_ms: float | None = None


def corrected_ttft(ttft_ms: float | None, rtt_ms: float | None) -> float | None:
    """TTFT - rtt: the first token's wait without one network round trip (None if either is unknown)."""
    if ttft_ms is None or rtt_ms is None:
        return None
    return ttft_ms - rtt_ms
