"""One request sent and recorded: its timing in a fresh recording, an optional field the endpoint refused left out,
and a model refused on a protocol its gateway does not serve it on told which one does."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime

from tokenpace.clients.base import HttpRequest, WireProtocol, one_line
from tokenpace.clients.pool import Client
from tokenpace.clients.transport import Limits, Timeouts, record
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.presets import served_elsewhere
from tokenpace.load.decodegate import DecodeGate
from tokenpace.measure.failures import Failure
from tokenpace.measure.timing import Recording


class Refusals:
    """The optional request field each endpoint refused: its later requests are built without it.

    Whoever calls the engine (load/engine.py) keeps one for as long as the lesson should last: the sampler for
    its lifetime, since under serve every run would otherwise send a refused request first (billed perhaps,
    never a sample; Job.worst_case allows for one per run), and ``tokenpace run`` for the command. Explicit
    rather than a module global, so two samplers, or two tests, never learn from each other's endpoints.
    """

    def __init__(self) -> None:
        self._by_endpoint: dict[Endpoint, Failure] = {}

    def __contains__(self, endpoint: Endpoint) -> bool:
        return endpoint in self._by_endpoint

    def get(self, endpoint: Endpoint) -> Failure | None:
        """The failure that showed the endpoint refused a field; None while it has refused none."""
        return self._by_endpoint.get(endpoint)

    def remember(self, endpoint: Endpoint, failure: Failure) -> None:
        self._by_endpoint[endpoint] = failure


async def send_request(
    session: Client, proto: WireProtocol, endpoint: Endpoint, request: HttpRequest,
    timeouts: Timeouts, limits: Limits, refusals: Refusals, ended: Callable[[Recording, datetime], None],
    gate: DecodeGate,
) -> None:  # fmt: skip
    """Send one request, its timing in a fresh recording; ``ended(recording, sent at)`` runs once it is over,
    on cancellation too, so a cancelled request is still a sample.

    An optional field the endpoint refused before is left out (the request was built before the clock
    started, like every request); one it refuses now is learnt, and the request asked again without it.
    """
    if (refused := refusals.get(endpoint)) is not None:
        request = proto.without_extras(request, refused) or request
    rec, started = Recording(), datetime.now(UTC)
    try:
        await _record(session, request, timeouts, rec, proto, limits, gate)
        if rec.failure is not None and (plain := proto.without_extras(request, rec.failure)) is not None:
            # A negotiation, not a measurement: ask again without the refused field, clock restarted.
            refusals.remember(endpoint, rec.failure)
            rec, started = Recording(), datetime.now(UTC)
            await _record(session, plain, timeouts, rec, proto, limits, gate)
        rec.failure = misrouted(endpoint, request.url, rec.failure)
    finally:
        ended(rec, started)


async def _record(
    session: Client, request: HttpRequest, timeouts: Timeouts, rec: Recording, proto: WireProtocol,
    limits: Limits, gate: DecodeGate,
) -> None:  # fmt: skip
    """transport.record, decoding held back (``gate``) from the moment it is asked for until it is written."""
    gate.asking(rec)
    try:
        await record(session, request, timeouts, rec, proto.has_token, limits)
    finally:
        gate.written(rec)  # at the latest: one that failed before its write is never written


def misrouted(endpoint: Endpoint, url: str, failure: Failure | None) -> Failure | None:
    """The failure, saying which protocol serves the model where the server refused it (a 404, or a 4xx whose
    message says "not supported") and the endpoint's preset's endpoint table names another than the one asked."""
    if failure is None or (status := failure.http_status) is None:
        return failure
    said = failure.message.removeprefix(f"HTTP {status}: ")
    if status != 404 and not (400 <= status < 500 and "not supported" in said.lower()):
        return failure
    if (note := served_elsewhere(endpoint.provider, endpoint.model, endpoint.protocol)) is None:
        return failure
    path = url.removeprefix(endpoint.base_url).partition("?")[0]
    return dataclasses.replace(failure, message=one_line(f"HTTP {status} on {path}: {note}; the server said: {said}"))
