"""What a long stream costs once it has ended: decoding its recorded chunks, its metrics and its stored JSON.

A stream of hundreds of thousands of events (a server that sends one token per event for minutes, or a hostile
one) is decoded after it ends, on the decoder thread; a figure far above linear in the events means a quadratic
step crept in (tests/clients/test_sse.py counts calls to catch that without a clock). Per protocol, the stream's
events arrive 1,000 to a chunk, as a fast server's do, with one token each. Figures are CPU seconds of this
process: on a busy machine the wall clock adds whatever other work and the decoder thread's low priority take.

    uv run python bench/decode.py [--events 400000] [--protocol openai-chat ...]
"""

from __future__ import annotations

import argparse
import time

from tokenpace.clients import protocol_for
from tokenpace.config.presets import ProtocolName
from tokenpace.measure.metrics import compute
from tokenpace.measure.timing import Recording

PER_CHUNK = 1000
# One token event in each protocol, and the events that open and close its stream.
STREAMS: dict[ProtocolName, tuple[bytes, bytes, bytes]] = {
    "openai-chat": (
        b'data: {"choices":[{"delta":{"role":"assistant"}}]}\n\n',
        b'data: {"choices":[{"delta":{"content":" hi"}}]}\n\n',
        b'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
    ),
    "openai-completions": (
        b"",
        b'data: {"choices":[{"text":" hi"}]}\n\n',
        b'data: {"choices":[{"text":"","finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
    ),
    "openai-responses": (
        b'event: response.created\ndata: {"type":"response.created","response":{"id":"r"}}\n\n',
        b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":" hi"}\n\n',
        b'event: response.completed\ndata: {"type":"response.completed","response":{"id":"r",'
        b'"usage":{"input_tokens":1,"output_tokens":2}}}\n\n',
    ),
    "anthropic": (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":{"input_tokens":1}}}\n\n',
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":" hi"}}\n\n',
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
        b'"usage":{"output_tokens":5}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n',
    ),
    "gemini": (
        b"",
        b'data: {"candidates":[{"content":{"parts":[{"text":" hi"}]}}]}\n\n',
        b'data: {"candidates":[{"content":{"parts":[{"text":"."}]},"finishReason":"STOP"}]}\n\n',
    ),
    "ollama": (
        b"",
        b'{"message":{"role":"assistant","content":" hi"},"done":false}\n',
        b'{"message":{"role":"assistant","content":""},"done":true,"eval_count":3}\n',
    ),
}


def recording(protocol: ProtocolName, events: int) -> Recording:
    """A finished stream of ``events`` token events, ``PER_CHUNK`` to a chunk, a microsecond apart."""
    head, token, tail = STREAMS[protocol]
    chunks = [(1_000, head)] + [(2_000 + i * 1_000, token * PER_CHUNK) for i in range(events // PER_CHUNK)]
    end = 10**12
    chunks.append((end, tail))
    return Recording(t_start_ns=0, t_sent_ns=0, t_headers_ns=500, t_end_ns=end, http_status=200, chunks=chunks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=400_000, help="token events per stream")
    parser.add_argument("--protocol", action="append", choices=sorted(STREAMS), help="default: every protocol")
    args = parser.parse_args()
    print("CPU seconds per stream")
    print(f"{'protocol':<20} {'MB':>6} {'decode s':>9} {'metrics s':>9} {'JSON s':>7} {'total s':>8} {'µs/event':>9}")
    for name in args.protocol or list(STREAMS):
        rec = recording(name, args.events)
        size = sum(len(data) for _, data in rec.chunks) / 1e6
        t0 = time.process_time()
        timeline = protocol_for(name).decode(rec)
        t1 = time.process_time()
        compute(timeline)
        t2 = time.process_time()
        timeline.to_json()
        t3 = time.process_time()
        assert timeline.failure is None, timeline.failure
        cells = (f"{size:6.1f}", f"{t1 - t0:9.2f}", f"{t2 - t1:9.2f}", f"{t3 - t2:7.2f}", f"{t3 - t0:8.2f}")
        print(f"{name:<20} " + " ".join(cells) + f" {(t3 - t0) / args.events * 1e6:9.1f}")


if __name__ == "__main__":
    main()
