"""What can go wrong on the wire, raised inside the client and mapped to a failure once (clients/transport.py).

One tree, every class carrying the failure kind it becomes::

    WireError                 kind
    ├── ConnectFailed         connect_error: refused, unresolved, TLS refused, a proxy's tunnel refused
    ├── ConnectTimedOut       connect_timeout: no connection within the connect timeout
    ├── Disconnected          incomplete_stream (connect_error before the response began): the server
    │                         closed or reset the connection; a pooled one may have been stale
    ├── BadResponse           bad_response: not valid HTTP (framing, a header over its cap, an encoding)
    └── IdleTimedOut          idle_timeout: no byte for longer than the idle timeout

Messages never quote what the server sent: only what was wrong with it, and never a header's value.
"""

from __future__ import annotations

from tokenpace.measure.failures import ErrorKind


class WireError(Exception):
    """A request that could not be completed on the wire; ``str(exc)`` is its one-line reason."""

    kind = ErrorKind.CONNECT_ERROR


class ConnectFailed(WireError):
    kind = ErrorKind.CONNECT_ERROR


class ConnectTimedOut(WireError):
    kind = ErrorKind.CONNECT_TIMEOUT


class Disconnected(WireError):
    """The connection closed under a request; ``written`` says whether the request had been written whole."""

    kind = ErrorKind.INCOMPLETE_STREAM

    def __init__(self, message: str, *, written: bool) -> None:
        super().__init__(message)
        self.written = written


class BadResponse(WireError):
    kind = ErrorKind.BAD_RESPONSE


class IdleTimedOut(WireError):
    kind = ErrorKind.IDLE_TIMEOUT
