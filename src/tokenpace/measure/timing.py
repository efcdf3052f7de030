"""Raw timing of one stream: what arrived, and when, on the client's monotonic clock.

Clients record ``time.perf_counter_ns()`` as bytes arrive and parse later; a wire-protocol decoder then turns
the recorded chunks into a :class:`Timeline` of typed :class:`Event` s. Metrics are derived from a timeline
and the timeline is stored with every sample, so every figure can be recomputed from what was measured.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

from tokenpace.measure.failures import Failure


class EventKind(enum.StrEnum):
    CONTENT = "c"  # answer text
    REASONING = "r"  # reasoning / thinking text
    TOOL_CALL = "t"  # tool-call name or argument text
    USAGE = "u"  # token usage reported by the provider
    FINISH = "f"  # finish reason (text holds it)
    DONE = "d"  # the protocol's end-of-stream marker
    OTHER = "o"  # role-only, keep-alive, metadata: never a token
    ERROR = "e"  # an error reported inside the stream

    @property
    def carries_tokens(self) -> bool:
        return self in _TOKEN_KINDS


_TOKEN_KINDS = frozenset({EventKind.CONTENT, EventKind.REASONING, EventKind.TOOL_CALL})


@dataclass(frozen=True, slots=True)
class Event:
    """One decoded protocol event: arrival time (ns, client clock), kind and any text it carries."""

    t_ns: int
    kind: EventKind
    text: str = ""

    @property
    def is_token(self) -> bool:
        return bool(self.text) and self.kind.carries_tokens


MAX_TOKEN_COUNT = 10**9  # more than any context window by far; fits every database's BIGINT and sums of them


def token_count(value: object) -> int | None:
    """``value`` if it is a sane token count: an integer (an integral float too) with 0 <= n <= 10**9, else None."""
    if isinstance(value, bool):  # JSON true is no count, though Python's bool is an int
        return None
    if isinstance(value, float) and value.is_integer():  # inf and nan are not
        value = int(value)
    return value if isinstance(value, int) and 0 <= value <= MAX_TOKEN_COUNT else None


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts as the provider reported them (its own tokenizer), each checked with :func:`token_count`."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None  # input tokens the provider says it served from its prompt cache


@dataclass(slots=True)
class Recording:
    """What the client saw on the wire, kept as cheap as possible while the stream runs.

    ``t_start_ns`` is when the client began the request; ``t_sent_ns`` when its bytes were handed to the
    socket. Time between the two is the client's own delay (connection pool, other streams' work) and is
    kept out of TTFT.
    """

    t_start_ns: int = 0
    t_sent_ns: int | None = None
    t_connected_ns: int | None = None  # set only when this request opened a new connection
    t_connect_start_ns: int | None = None
    t_headers_ns: int | None = None
    t_end_ns: int | None = None
    http_status: int | None = None
    request_id: str | None = None  # the server's x-request-id header, for streams that carry no id
    chunks: list[tuple[int, bytes]] = field(default_factory=list)
    # Reads that brought several packets, stamped with the last: stamp -> how much earlier their first bytes may
    # have come, ns. Empty while the loop keeps up (load/lag.py).
    doubt: dict[int, int] = field(default_factory=dict)
    failure: Failure | None = None
    secrets: tuple[str, ...] = field(default=(), repr=False)  # the request's key and header values, to scrub


@dataclass(frozen=True, slots=True)
class Timeline:
    """A decoded stream: request-relative event times and the provider's own view of usage and timing."""

    t_sent_ns: int
    t_headers_ns: int | None
    t_end_ns: int
    events: tuple[Event, ...]
    connect_ns: int | None = None  # time to open a new connection, None when one was reused
    queued_ns: int = 0  # client-side delay between starting the request and writing it
    usage: Usage | None = None
    response_id: str | None = None
    server_timings: dict[str, Any] | None = None
    failure: Failure | None = None
    usage_raw: dict[str, str] | None = None  # usage fields that were not sane counts, as the JSON they came as

    @property
    def token_events(self) -> list[Event]:
        """The events that carry generated text (Event.is_token, spelt out: this runs for every event of a request)."""
        return [e for e in self.events if e.text and e.kind in _TOKEN_KINDS]

    def text(self, *kinds: EventKind) -> str:
        """Concatenated text of the events of the given kinds (all token kinds when none given)."""
        wanted = set(kinds) or _TOKEN_KINDS
        return "".join(e.text for e in self.events if e.kind in wanted)

    def to_json(self) -> str:
        """Compact JSON: times in microseconds relative to the request being sent."""

        def rel(t: int | None) -> int | None:
            return None if t is None else (t - self.t_sent_ns) // 1000

        doc: dict[str, Any] = {
            "v": 1,
            "headers_us": rel(self.t_headers_ns),
            "end_us": rel(self.t_end_ns),
            "connect_us": None if self.connect_ns is None else self.connect_ns // 1000,
            "queued_us": self.queued_ns // 1000,
            "events": [[rel(e.t_ns), e.kind.value, e.text] for e in self.events],
        }
        if self.usage is not None:
            u = self.usage
            doc["usage"] = [u.input_tokens, u.output_tokens, u.reasoning_tokens]
            if u.cached_tokens is not None:  # a fourth count only when reported: older rows hold three
                doc["usage"].append(u.cached_tokens)
        if self.response_id:
            doc["id"] = self.response_id
        if self.server_timings:
            doc["server_timings"] = self.server_timings
        if self.usage_raw:
            doc["usage_raw"] = self.usage_raw
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, failure: Failure | None = None) -> Timeline:
        """Rebuild a timeline stored by :meth:`to_json`; times come back relative to a send time of 0."""
        doc = json.loads(text)

        def ns(us: int | None) -> int | None:
            return None if us is None else us * 1000

        usage = Usage(*(token_count(n) for n in doc["usage"])) if "usage" in doc else None  # rows stored unchecked
        return cls(
            t_sent_ns=0,
            t_headers_ns=ns(doc["headers_us"]),
            t_end_ns=doc["end_us"] * 1000,
            events=tuple(Event(us * 1000, EventKind(k), t) for us, k, t in doc["events"]),
            connect_ns=ns(doc.get("connect_us")),
            queued_ns=doc.get("queued_us", 0) * 1000,
            usage=usage,
            response_id=doc.get("id"),
            server_timings=doc.get("server_timings"),
            failure=failure,
            usage_raw=doc.get("usage_raw"),
        )
