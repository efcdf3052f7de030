"""The scheduling core: when each event of a reply goes out, and which failure breaks it, in any protocol.

Events are scheduled on absolute target times (received + TTFT + token offset / rate), so sleep overshoot
does not accumulate into drift. Each event's send time is taken immediately before its bytes are written and
recorded in the request's :class:`Truth`. What the bytes are is the :class:`Wire` formatter's business.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from aiohttp import web

from tokenpace.measure.metrics import NS_PER_MS
from tokenpace.sim.scenario import Scenario, Truth
from tokenpace.sim.wire import KINDS, Out, Wire, dumps

_MID_ERRORS = frozenset({"malformed", "cut", "midstream"})  # injected once half the tokens are out
MIDSTREAM_MESSAGE = "upstream overloaded"  # a non-streamed "midstream" failure: HTTP 500 with this message


@dataclass(frozen=True)
class ServedRequest:
    """One request being served: its scenario, injected error, seeded randomness and its formatter."""

    request: web.Request
    s: Scenario
    truth: Truth
    wire: Wire
    error: str | None
    rng: random.Random  # jitter
    words: Iterator[str]  # the text, drawn apart from the jitter so it does not depend on timing
    t_start_ns: int = 0  # when generation began: received, or later when it waited for a stream slot
    opening: tuple[str, ...] = ()  # the content's first tokens, before the words: the canary's line

    def at(self, token_offset: int) -> int:
        """Target send time of an event due ``token_offset`` tokens after the first token."""
        return (
            (self.t_start_ns or self.truth.t_received_ns)
            + self.s.first_token_ns(self.truth.prompt_tokens, self.truth.cached_tokens)
            + round(token_offset * 1e9 / self.s.tokens_per_s)
        )


def plan(
    s: Scenario, reasoning: int, content: int, words: Iterator[str], opening: Iterable[str] = ()
) -> Iterator[tuple[int, str, int, str]]:
    """Token events as (send time in tokens after the first, kind, tokens, text), reasoning first, each of
    ``tokens_per_chunk`` tokens; ``final_burst``: the first, then the rest when the last token is due. The
    content's first tokens are ``opening``'s (as many as fit), then words."""
    total, pos = reasoning + content, 0
    for kind, n, source in (("reasoning", reasoning, words), ("content", content, itertools.chain(opening, words))):
        end = pos + n
        while pos < end:
            burst = s.final_burst and pos > 0
            size = end - pos if burst else min(s.tokens_per_chunk, end - pos)
            yield (total - 1 if burst else pos), kind, size, "".join(next(source) for _ in range(size))
            pos += size


async def _sleep_until(t_ns: int) -> None:
    """Sleep until perf_counter_ns() >= t_ns: never early, even where the loop's timers round to ms."""
    while (left := t_ns - time.perf_counter_ns()) > 0:  # noqa: ASYNC110 - a deadline, not a condition
        await asyncio.sleep(left / 1e9)


async def reply_at_once(
    request: web.Request,
    truth: Truth,
    status: int,
    body: str,
    events: list[tuple[str, str]],
    headers: Mapping[str, str] | None = None,
) -> web.StreamResponse:
    """A whole JSON response written at once; its truth events all get the time its headers were written."""
    data = body.encode()
    resp = web.StreamResponse(status=status, headers={"x-request-id": truth.id, **(headers or {})})
    resp.content_type = "application/json"
    resp.content_length = len(data)
    with contextlib.suppress(ConnectionResetError):  # the client went away
        t_send = time.perf_counter_ns()
        await resp.prepare(request)
        await resp.write(data)
        truth.events.extend((t_send, kind, text) for kind, text in events)
        truth.written.extend(time.perf_counter_ns() for _ in events)
        await resp.write_eof()
    return resp


def _drop_connection(request: web.Request) -> None:
    """Drop the connection with the response unfinished: the client sees a truncated body, no terminator.

    What the handler returns next is not written: aiohttp finds the transport closed and lets it go quietly.
    """
    if request.transport is not None:
        request.transport.close()  # close, not abort: what was written still arrives


async def stream(c: ServedRequest) -> web.StreamResponse:
    """Stream the reply on schedule; inject "malformed", "cut" or "midstream" once half the tokens are out."""
    s, truth, w = c.s, c.truth, c.wire
    headers = {"Content-Type": w.content_type, "Cache-Control": "no-cache", "x-request-id": truth.id}
    resp = web.StreamResponse(headers=headers)

    async def send(events: Iterable[Out]) -> None:
        for event in events:
            t_send = time.perf_counter_ns()
            await resp.write(event.data)
            t_written = time.perf_counter_ns()
            truth.events.extend((t_send, kind, text) for kind, text in event.truth)
            truth.written.extend(t_written for _ in event.truth)

    reasoning, content = w.reply.reasoning, w.reply.content
    pending = c.error if c.error in _MID_ERRORS else None
    half, sent = (reasoning + content) // 2, 0
    stall_at, stall_ns = s.stall_after_tokens, 0
    jitter_ns = s.jitter_ms * NS_PER_MS
    try:
        await resp.prepare(c.request)
        held = w.preamble()  # goes out at once, or with the first token
        if s.role_chunk:
            await send(held)
            held = []
        for i, (offset, kind, n, text) in enumerate(plan(s, reasoning, content, c.words, c.opening)):
            if pending is not None and sent >= half:
                if pending != "malformed":
                    break
                await send([w.malformed()])
                pending = None
            if stall_at is not None and sent >= stall_at:
                stall_at, stall_ns = None, round(s.stall_ms * NS_PER_MS)
            jitter = round(c.rng.uniform(-jitter_ns, jitter_ns)) if i and jitter_ns else 0
            await _sleep_until(c.at(offset) + jitter + stall_ns)
            await send([*held, *w.token(kind, text)])
            held = []
            sent = truth.completion_tokens = sent + n
            if c.error == "endless":
                await asyncio.sleep(0)  # stay cancellable even when running behind schedule
        if pending == "cut":
            _drop_connection(c.request)
            return resp
        if pending == "midstream":
            await send([*held, w.failure()])
        else:  # a "malformed" still pending had no tokens to follow
            await send([*held, *([w.malformed()] if pending == "malformed" else []), *w.end()])
        await resp.write_eof()
    except ConnectionResetError:
        pass  # the client went away: the truth keeps what was sent
    return resp


async def complete(c: ServedRequest) -> web.StreamResponse:
    """A non-streamed reply, sent when a stream of the same scenario would have sent its last token.

    Failures map to what a non-streamed client would see: "malformed" truncates the JSON body, "cut" drops the
    connection, "midstream" is an HTTP 500, and "endless" never answers (under serve(), until the client
    disconnects; on a runner without handler cancellation, until shutdown).
    """
    s, truth, w = c.s, c.truth, c.wire
    if c.error == "endless":
        await asyncio.Event().wait()
    last, sent, stall_ns = 0, 0, 0
    for offset, kind, n, text in plan(s, w.reply.reasoning, w.reply.content, c.words, c.opening):  # the stream's rules
        if s.stall_after_tokens is not None and sent >= s.stall_after_tokens:
            stall_ns = round(s.stall_ms * NS_PER_MS)
        w.keep(kind, text)
        last, sent = offset, sent + n
    await _sleep_until(c.at(last) + stall_ns)
    if c.error == "cut":
        _drop_connection(c.request)
        return web.Response()
    if c.error == "midstream":
        doc = w.error_doc(500, MIDSTREAM_MESSAGE)
        return await reply_at_once(c.request, truth, 500, dumps(doc), [("error", MIDSTREAM_MESSAGE)])
    body = dumps(w.whole())
    events = [(kind, w.text(kind)) for kind in KINDS if w.text(kind)] + [("finish", w.finish())]
    if (usage := w.usage()) is not None:
        events.append(("usage", dumps(usage)))
    truth.completion_tokens = sent
    if c.error == "malformed":
        body = body[: len(body) // 2]
        events = [("malformed", body)]
    return await reply_at_once(c.request, truth, 200, body, events)
