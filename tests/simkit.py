"""What the simulator's tests share: a scenario that never waits and a way to read its one truth."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from tokenpace.clients import protocol_for
from tokenpace.clients.transport import Timeouts, new_session, record
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.presets import ProtocolName
from tokenpace.measure.timing import Recording, Timeline
from tokenpace.prompts.prompt import Prompt
from tokenpace.prompts.tokens import count_tokens
from tokenpace.sim import Scenario, Simulator, Truth, serve

PROMPT = "How fast is this endpoint, really?"
FAST = Scenario(ttft_ms=0, tokens_per_s=5000, output_tokens=20)  # no waiting
MS = 1_000_000


def served(truth: Truth) -> tuple[float, float | None]:
    """The TTFT (ms) and output speed (tok/s) the simulator really served, read off its own send times.

    On a loaded machine the simulator sends late too, so these stray from its scenario's: a client's figures
    are judged against them, not against the scenario's. Speed as metrics.output_speed defines it: tokens after
    the first chunk over the time from the first token event to the last.
    """
    tokens = [(t, text) for t, kind, text in truth.events if kind in ("content", "reasoning")]
    (first, first_text), last = tokens[0], tokens[-1][0]
    speed = (truth.completion_tokens - count_tokens(first_text)) / ((last - first) / 1e9) if last > first else None
    return (first - truth.t_received_ns) / MS, speed


def fast(**changes: Any) -> Scenario:
    """FAST, with some fields changed."""
    return dataclasses.replace(FAST, **changes)


def only(sim: Simulator) -> Truth:
    """The truth of the one request a simulator served."""
    (truth,) = sim.truth.values()
    return truth


@dataclass
class Raw:
    """What a plain HTTP client received: status, headers, body and the error that ended reading, if any."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    error: Exception | None = None

    def frames(self) -> list[tuple[str | None, str]]:
        """(SSE event name, data) of each event, or (None, line) of each NDJSON line."""
        text = self.body.decode().replace("\r\n", "\n")  # Gemini ends lines with CRLF
        if self.headers.get("Content-Type", "").startswith("application/x-ndjson"):
            return [(None, line) for line in text.split("\n") if line]
        frames = []
        for block in (b for b in text.split("\n\n") if b):
            name, data = None, None
            for line in block.split("\n"):
                key, _, value = line.partition(": ")
                assert key in ("event", "data"), block
                assert key != "data" or data is None, block  # one data line per event
                name, data = (value, data) if key == "event" else (name, value)
            assert data is not None, block
            frames.append((name, data))
        return frames

    def docs(self) -> list[Any]:
        return [json.loads(data) for _, data in self.frames() if data != "[DONE]"]

    @property
    def payloads(self) -> list[str]:
        """The ``data:`` payloads of an OpenAI-style stream, whose events carry no names."""
        frames = self.frames()
        assert all(name is None for name, _ in frames), frames
        return [data for _, data in frames]

    @property
    def chunks(self) -> list[dict[str, Any]]:
        return [json.loads(p) for p in self.payloads if p != "[DONE]"]

    def deltas(self, key: str = "content") -> list[str]:
        """The ``key`` field of every choice delta that has one, the role chunk's aside."""
        deltas = [c["choices"][0]["delta"] for c in self.chunks if c.get("choices")]
        return [d[key] for d in deltas if key in d and "role" not in d]


async def post(url: str, body: Any, headers: Mapping[str, str] | None = None) -> Raw:
    """POST ``body`` as JSON and read the whole answer, keeping the error that cut it short, if any."""
    data, error = b"", None
    async with aiohttp.ClientSession() as session, session.post(url, json=body, headers=headers) as r:
        try:
            async for piece in r.content.iter_any():
                data += piece
        except aiohttp.ClientPayloadError as exc:
            error = exc
        return Raw(r.status, r.headers, data, error)


async def send(prompts: Sequence[Prompt], protocol: ProtocolName = "openai-chat") -> list[tuple[Timeline, Truth]]:
    """Each prompt in turn, sent by tokenpace's own client to a FAST simulator: what it decoded, what was served."""
    simulator = Simulator(FAST)
    proto = protocol_for(protocol)
    out = []
    async with serve(simulator) as url:
        endpoint = Endpoint("sim", "sim", url.removesuffix("/v1") + proto.default_base, protocol=protocol)
        async with new_session(1, Timeouts(connect=2, first_token=5, idle=5, total=10)) as session:
            for prompt in prompts:
                seen = set(simulator.truth)
                rec = Recording()
                await record(session, proto.request(endpoint, prompt), Timeouts(2, 5, 5, 10), rec, proto.has_token)
                (rid,) = set(simulator.truth) - seen
                out.append((proto.decode(rec), simulator.truth[rid]))
    return out
