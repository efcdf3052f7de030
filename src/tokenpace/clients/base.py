"""The one interface every wire protocol implements, and what protocols share to build and decode.

A protocol builds its request bytes before the clock starts (``request``) and decodes a recorded stream after
it ended (``decode``); the timed part in between is ``transport.record``, the same for every protocol.
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from tokenpace.clients.connect import split
from tokenpace.clients.head import encode_head
from tokenpace.clients.scrub import redact, scrub, scrub_events
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.headers import FRESH_VALUE
from tokenpace.config.presets import ProtocolName
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.timing import Event, EventKind, Recording, Timeline, Usage, token_count
from tokenpace.prompts.prompt import Prompt

MAX_MESSAGE = 300
MIN_SECRET = 8  # shorter header values ("speed", "1") are words a model may write: scrubbing them would change text
MAX_RAW = 100  # characters of an invalid usage value kept for the record
HAS_TOKEN_PREFIX = 64 * 1024


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """A POST, and its request line and headers as they go on the wire (``head``), built with it: off the clock."""

    url: str
    headers: Mapping[str, str] = field(repr=False)  # they hold the key
    body: bytes = field(repr=False)
    secrets: tuple[str, ...] = field(default=(), repr=False)  # the key and header values, to scrub wherever echoed
    head: bytes = field(init=False, repr=False, compare=False)  # b"" where the URL is none (the send says so)

    def __post_init__(self) -> None:
        try:
            origin, target = split(self.url)
            head = encode_head("POST", target, origin.authority, dict(self.headers), len(self.body))
        except ValueError:
            head = b""
        object.__setattr__(self, "head", head)


def timeline(
    rec: Recording,
    events: list[Event],
    usage: Usage | None = None,
    response_id: str | None = None,
    server_timings: dict[str, Any] | None = None,
    problem: Failure | None = None,
    usage_raw: dict[str, str] | None = None,
) -> Timeline:
    """Assemble a decoded stream; the failure is the transport's, else the stream's, else how it ended.

    This is the one way out of every decoder, so it is where secrets a server echoed are scrubbed (text,
    ids, server timings, messages) and where events after the end marker stop counting.
    """
    sent = rec.t_sent_ns if rec.t_sent_ns is not None else rec.t_start_ns
    events, late = _until_end(events)
    failure = rec.failure or problem or late or _ending_failure(events)
    secrets = rec.secrets
    connect = None
    if rec.t_connect_start_ns is not None and rec.t_connected_ns is not None:
        connect = rec.t_connected_ns - rec.t_connect_start_ns
    return Timeline(
        t_sent_ns=sent,
        t_headers_ns=rec.t_headers_ns,
        t_end_ns=rec.t_end_ns if rec.t_end_ns is not None else sent,
        events=tuple(scrub_events(events, secrets)),
        connect_ns=connect,
        queued_ns=sent - rec.t_start_ns,
        usage=usage,
        response_id=scrub(response_id or rec.request_id, secrets),
        server_timings=scrub(server_timings, secrets),
        failure=None if failure is None else dataclasses.replace(failure, message=scrub(failure.message, secrets)),
        usage_raw=scrub(usage_raw, secrets) or None,
    )


def undecodable(rec: Recording, exc: Exception) -> Timeline:
    """The timeline of a recording its decoder failed on: no events, a malformed stream (or the transport's failure)."""
    return timeline(rec, [], problem=Failure(ErrorKind.MALFORMED_STREAM, f"undecodable stream: {type(exc).__name__}"))


def _until_end(events: list[Event]) -> tuple[list[Event], Failure | None]:
    """Text after the protocol's end marker is kept in the timeline as OTHER (never counted) and fails the sample."""
    end = next((i for i, e in enumerate(events) if e.kind is EventKind.DONE), len(events))
    if not any(e.is_token for e in events[end + 1 :]):
        return events, None
    late = [Event(e.t_ns, EventKind.OTHER, e.text) if e.is_token else e for e in events[end + 1 :]]
    return events[: end + 1] + late, Failure(ErrorKind.MALFORMED_STREAM, "generated text after the end marker")


def _ending_failure(events: list[Event]) -> Failure | None:
    """A stream that ended cleanly must have been terminated and must have produced text."""
    kinds = {e.kind for e in events}
    if EventKind.DONE not in kinds and EventKind.FINISH not in kinds:
        return Failure(ErrorKind.INCOMPLETE_STREAM, "stream ended without its end marker or a finish reason")
    if not any(e.is_token for e in events):
        return Failure(ErrorKind.EMPTY_OUTPUT, "stream finished without generating any text")
    return None


class WireProtocol(abc.ABC):
    """A streaming API: how to ask (request bytes) and how to read what came back (decode)."""

    name: ProtocolName
    # The path a base URL conventionally ends with (``https://host`` + this): a hint for building one.
    default_base: str = "/v1"

    @abc.abstractmethod
    def request(self, endpoint: Endpoint, prompt: Prompt) -> HttpRequest:
        """The request for one prompt, fully built so sending it costs no CPU on the clock."""

    @abc.abstractmethod
    def decode(self, recording: Recording) -> Timeline:
        """The typed timeline of a recorded stream, with the failure (if any) the stream shows."""

    def warm_url(self, endpoint: Endpoint) -> str:
        """A cheap GET that opens a keep-alive connection before measuring."""
        return f"{endpoint.base_url}/models"

    def has_token(self, recording: Recording) -> bool:
        """Whether generated text has arrived yet (used only when the first-token deadline passes, off the loop).

        Text usually comes early, so the first HAS_TOKEN_PREFIX bytes are decoded first, the rest only if needed.
        """
        chunks, seen = recording.chunks, 0
        for n, (_, data) in enumerate(chunks):
            seen += len(data)
            if seen >= HAS_TOKEN_PREFIX and n + 1 < len(chunks):
                prefix = dataclasses.replace(recording, chunks=chunks[: n + 1], failure=None)
                if any(e.is_token for e in self.decode(prefix).events):
                    return True
                break
        return any(e.is_token for e in self.decode(recording).events)

    def without_extras(self, request: HttpRequest, failure: Failure) -> HttpRequest | None:
        """The request minus optional fields ``failure`` says the endpoint refused; None when none apply."""
        return None


def json_request(
    endpoint: Endpoint,
    url: str,
    body: Mapping[str, Any],
    *,
    auth: str = "Authorization",
    accept: str = "text/event-stream",
    extra: Mapping[str, str] | None = None,
) -> HttpRequest:
    """A JSON POST whose key travels only in the ``auth`` header (``Authorization`` as ``Bearer``), never the URL.

    The endpoint's own headers override the defaults and the protocol's ``extra`` ones (names compared
    without case, so none is sent twice), but not the key's header: the configured key always wins. One whose
    value is FRESH_VALUE gets a new random value in each request (a gateway's session header: OpenCode Go's).
    """
    key = endpoint.api_key()
    own = [(name, uuid.uuid4().hex if value == FRESH_VALUE else value) for name, value in endpoint.headers]
    headers = _merged({"Content-Type": "application/json", "Accept": accept, **(extra or {})}, own)
    if key:
        headers = _merged(headers, [(auth, f"Bearer {key}" if auth == "Authorization" else key)])
    secrets = ((key,) if key else ()) + tuple(v for _, v in endpoint.headers if len(v) >= MIN_SECRET)
    return HttpRequest(url, headers, json.dumps(body).encode(), secrets)


def _merged(headers: Mapping[str, str], overrides: Iterable[tuple[str, str]]) -> dict[str, str]:
    out = dict(headers)
    for name, value in overrides:
        out = {k: v for k, v in out.items() if k.lower() != name.lower()}
        out[name] = value
    return out


@dataclass(slots=True)
class Decoded:
    """What a decoder has read of a stream so far; the first stream problem it notes is the one reported."""

    recording: Recording
    events: list[Event] = field(default_factory=list)
    usage: Usage | None = None
    response_id: str | None = None
    server_timings: dict[str, Any] | None = None
    problem: Failure | None = None
    usage_raw: dict[str, str] = field(default_factory=dict)

    def add(self, t_ns: int, kind: EventKind, text: str = "") -> None:
        self.events.append(Event(t_ns, kind, text))

    def json(self, data: str) -> dict[str, Any] | None:
        """``data`` as a JSON object; None (the stream noted as malformed) when it is not one."""
        try:
            doc = orjson.loads(data)  # a third of json's cost, once per streamed token
        except orjson.JSONDecodeError:  # what json reads and orjson refuses (NaN, 1e999) is still read
            try:
                doc = json.loads(data)
            except (ValueError, RecursionError):  # RecursionError: nested deeper than the interpreter's stack
                doc = None
        if isinstance(doc, dict):
            return doc
        bad = one_line(f"bad event: {redact(data[:1000], self.recording.secrets)}", 120)
        self.problem = self.problem or Failure(ErrorKind.MALFORMED_STREAM, bad)
        return None

    def error(self, t_ns: int, error: Any) -> None:
        """An error the provider sent inside the stream: an ERROR event, and the sample fails as stream_error."""
        message = str(error.get("message", error)) if isinstance(error, dict) else str(error)
        message = redact(message, self.recording.secrets)  # before any cut, so no part of the key survives
        self.add(t_ns, EventKind.ERROR, message)
        self.problem = self.problem or Failure(ErrorKind.STREAM_ERROR, one_line(f"stream error: {message}"))

    def count(self, name: str, value: Any) -> int | None:
        """A usage field as a sane token count, or None; an unusable value is kept (as JSON) for the record."""
        n = token_count(value)
        if n is None and value is not None:
            self.usage_raw[name] = json.dumps(value, ensure_ascii=False)[:MAX_RAW]
        return n

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Around a decoder's loop: bytes that are not UTF-8 or an event of an unexpected shape end the decoding
        as a malformed stream, keeping what was decoded, instead of losing the sample to an exception."""
        try:
            yield
        except (ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError) as exc:
            message = one_line(f"undecodable stream: {type(exc).__name__}: {exc}", 120)
            self.problem = self.problem or Failure(ErrorKind.MALFORMED_STREAM, message)

    def timeline(self) -> Timeline:
        d = self
        return timeline(d.recording, d.events, d.usage, d.response_id, d.server_timings, d.problem, d.usage_raw)


def one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
