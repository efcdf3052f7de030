"""The taxonomy of failed requests: every request ends as a sample, and a failed one says why.

=====================  ==========================================================================
kind                   meaning
=====================  ==========================================================================
connect_error          no TCP/TLS connection could be made (refused, DNS, reset before a response)
connect_timeout        the connection was not made within the connect timeout
first_token_timeout    no generated text arrived within the first-token timeout
idle_timeout           the stream went quiet for longer than the idle timeout between events
total_timeout          the whole request took longer than the total timeout
rate_limited           HTTP 429: the provider refused for rate or quota reasons
http_error             any other non-2xx HTTP status; the provider's message is kept
redirect               a redirect to another origin (scheme, host, port), not followed: the key would go there
bad_response           the server answered with something that is not valid HTTP (a header over 8 KiB,
                       broken chunked framing)
response_too_large     the response passed its byte cap (whole response, or one line), so reading stopped
malformed_stream       an event could not be parsed (bad JSON, not SSE)
incomplete_stream      the stream ended without its terminator (``[DONE]`` or a finish reason)
stream_error           the provider sent an error inside the stream
empty_output           the stream finished cleanly but generated no text
cancelled              the client cancelled the request (Ctrl-C, shutdown)
=====================  ==========================================================================
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ErrorKind(enum.StrEnum):
    CONNECT_ERROR = "connect_error"
    CONNECT_TIMEOUT = "connect_timeout"
    FIRST_TOKEN_TIMEOUT = "first_token_timeout"  # noqa: S105 (a name, not a password)
    IDLE_TIMEOUT = "idle_timeout"
    TOTAL_TIMEOUT = "total_timeout"
    RATE_LIMITED = "rate_limited"
    HTTP_ERROR = "http_error"
    REDIRECT = "redirect"
    BAD_RESPONSE = "bad_response"
    RESPONSE_TOO_LARGE = "response_too_large"
    MALFORMED_STREAM = "malformed_stream"
    INCOMPLETE_STREAM = "incomplete_stream"
    STREAM_ERROR = "stream_error"
    EMPTY_OUTPUT = "empty_output"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a request failed: its kind, a one-line message and the HTTP status if there was one; a 429 also
    keeps when the server asked to be tried again and its rate-limit headers (clients/ratelimits.py)."""

    kind: ErrorKind
    message: str
    http_status: int | None = None
    retry_after_s: float | None = None  # seconds from the response's arrival; None: no usable Retry-After
    ratelimits: tuple[tuple[str, str], ...] = ()  # (lower-case name, value), as the server sent them
