"""A lean truth server for bench/fidelity.py: OpenAI chat SSE streams on schedule, and when each event left.

Not the product's simulator (``tokenpace sim``, aiohttp, ~57 µs an event: 14-16k events/s on one core): one
scenario, one protocol, no failures, so that one core keeps up with 512 streams x 50 events/s. Each token event
is pre-encoded pieces joined, scheduled with call_later on an absolute target (headers received + TTFT + i /
rate) and stamped with perf_counter_ns() just before transport.write; the chunks have the simulator's shape
(role delta, one word of tokenpace.sim.WORDS per event, finish, usage if asked, [DONE]) and its truth kinds.
A timer may fire up to a loop tick (uvloop: 1 ms) early: the truth records the actual send time.

Routes: POST /v1/chat/completions (stream: true only), GET /sim/truth/{id} (tokenpace.sim.Truth's JSON for the
last --truth-kept requests; prompt_tokens is 0: prompts are not counted), GET /v1/models, GET /health.
--workers N: N processes share the port (SO_REUSEPORT); worker i also listens on port + 1 + i, where a truth
asked of another worker is redirected (its id names its worker); --cpus pins worker i to the i-th core listed.

    uv run python bench/truth_server.py [--port 8000] [--ttft-ms 100] [--tokens-per-s 50] [--output-tokens 100]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import signal
import socket
import time
from collections.abc import Callable
from typing import Any, cast

from tokenpace.sim import WORDS

MAX_HEAD = 64 * 1024
MAX_BODY = 64 * 1024**2  # long prompts are a workload; longer is refused
TRUTH_KEPT = 4096
STEP = next(k for k in range(31, 1000) if math.gcd(k, len(WORDS)) == 1)  # coprime: visits every word
_REASONS = {200: "OK", 307: "Temporary Redirect", 400: "Bad Request", 404: "Not Found", 413: "Content Too Large",
            431: "Request Header Fields Too Large", 501: "Not Implemented"}  # fmt: skip


def dumps(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


def chunked(data: bytes) -> bytes:
    """One HTTP/1.1 chunk: size in hex, CRLF, the data, CRLF."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def worker_of(rid: str) -> int | None:
    """The worker named in a response id ``chatcmpl-w{worker}-...``, if it names one."""
    worker = rid.removeprefix("chatcmpl-w").partition("-")[0]
    return int(worker) if rid.startswith("chatcmpl-w") and worker.isdigit() and len(worker) < 4 else None


class Server:
    """One worker's settings, pre-encoded pieces and truths (response id -> [t_received_ns, events, tokens])."""

    def __init__(self, args: argparse.Namespace, worker: int) -> None:
        self.ttft_ns = round(args.ttft_ms * 1e6)
        self.period_ns = 1e9 / args.tokens_per_s
        self.output_tokens: int = args.output_tokens
        self.kept: int = args.truth_kept
        self.port: int = args.port
        self.worker, self.workers = worker, args.workers
        self.tag = f"chatcmpl-w{worker}-{os.urandom(4).hex()}-"  # unique across restarts; names its worker
        self.served = 0
        self.truths: dict[str, list[Any]] = {}  # insertion order: the oldest first
        self.rng = random.Random(worker)
        # A chunk is a prefix (per request), its delta, then one of these ends: with usage asked, "usage": null.
        self.close = {asked: (b',"usage":null}' if asked else b"}") + b"\n\n" for asked in (False, True)}
        self.end = {asked: b',"logprobs":null,"finish_reason":null}]' + close for asked, close in self.close.items()}
        self.suffix = {asked: [b'{"content":' + dumps(w) + b"}" + self.end[asked] for w in WORDS] for asked in self.end}

    def keep(self, rid: str, record: list[Any]) -> None:
        self.truths[rid] = record
        while len(self.truths) > self.kept:  # bounded: the oldest forgotten first
            del self.truths[next(iter(self.truths))]


class Conn(asyncio.Protocol):
    """One keep-alive connection: requests one at a time; a stream holds it until its terminator is written."""

    def __init__(self, server: Server) -> None:
        self.srv = server
        self.buf = bytearray()
        self.head: tuple[str, str, int, int, int] | None = None  # method, path, body length, body start, t_head
        self.busy = False
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not asyncio.Transport subclasses

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if len(self.buf) > MAX_HEAD + MAX_BODY:  # only a client sending while its stream runs gets here
            self.transport.close()
        self.serve(time.perf_counter_ns())

    def serve(self, now: int) -> None:
        """Answer every complete request in the buffer, until a stream takes the connection."""
        while not self.busy and not self.transport.is_closing():
            if self.head is None:
                if (end := self.buf.find(b"\r\n\r\n")) < 0:
                    if len(self.buf) > MAX_HEAD:
                        self.reply(431, {"error": f"request head over {MAX_HEAD} bytes"}, close=True)
                    return
                if not self.parse_head(bytes(self.buf[:end]), end + 4, now):
                    return
            assert self.head is not None
            method, path, length, start, t_head = self.head
            if len(self.buf) < start + length:
                return
            body = bytes(self.buf[start : start + length])
            del self.buf[: start + length]
            self.head = None
            self.route(method, path, body, t_head)
            now = time.perf_counter_ns()  # a request already buffered behind this one arrived no later

    def parse_head(self, head: bytes, start: int, now: int) -> bool:
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        headers = dict((k.strip().lower(), v.strip()) for k, _, v in (h.partition(":") for h in lines[1:]))
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            return self.reply(400, {"error": "not an HTTP/1.x request line"}, close=True)
        if "transfer-encoding" in headers:
            return self.reply(501, {"error": "chunked request bodies are not supported"}, close=True)
        length = headers.get("content-length", "0")
        if not length.isdigit() or int(length) > MAX_BODY:
            return self.reply(413, {"error": f"Content-Length must be 0..{MAX_BODY}"}, close=True)
        self.head = (parts[0], parts[1], int(length), start, now)
        return True

    def reply(self, status: int, doc: Any, close: bool = False, extra: str = "") -> bool:
        """A whole JSON response; False, so that a refusal can be returned as "stop reading"."""
        body = dumps(doc)
        head = f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: application/json\r\n{extra}"
        head += f"Content-Length: {len(body)}\r\nConnection: {'close' if close else 'keep-alive'}\r\n\r\n"
        self.transport.write(head.encode() + body)
        if close:
            self.transport.close()
        return False

    def route(self, method: str, path: str, body: bytes, t_head: int) -> None:
        if method == "POST" and path == "/v1/chat/completions":
            self.start(body, t_head)
        elif method == "GET" and path.startswith("/sim/truth/"):
            rid = path.removeprefix("/sim/truth/")
            if (record := self.srv.truths.get(rid)) is not None:
                t_received, events, tokens = record
                doc = {"id": rid, "t_received_ns": t_received, "events": events}
                self.reply(200, doc | {"prompt_tokens": 0, "completion_tokens": tokens})
            elif (owner := worker_of(rid)) is not None and owner != self.srv.worker and owner < self.srv.workers:
                where = f"Location: http://127.0.0.1:{self.srv.port + 1 + owner}{path}\r\n"
                self.reply(307, {"error": "another worker's request"}, extra=where)
            else:
                self.reply(404, {"error": {"message": "No such request id.", "type": "invalid_request_error"}})
        elif method == "GET" and path == "/v1/models":
            self.reply(200, {"object": "list", "data": [{"id": "sim", "object": "model", "owned_by": "tokenpace"}]})
        elif method == "GET" and path == "/health":
            self.reply(200, {"status": "ok"})
        else:
            self.reply(404, {"error": {"message": f"no route {method} {path}", "type": "invalid_request_error"}})

    def start(self, body: bytes, t_head: int) -> None:
        """Parse just enough of the request, send the role chunk at once and schedule the first token."""
        try:
            doc = json.loads(body)
        except (ValueError, RecursionError):
            doc = None
        good = isinstance(doc, dict) and doc.get("stream") is True and isinstance(doc.get("model", ""), str)
        caps = [doc[k] for k in ("max_tokens", "max_completion_tokens") if doc.get(k) is not None] if good else []
        if not good or not all(type(c) is int and c >= 1 for c in caps):
            self.reply(400, {"error": {"message": "a JSON object with stream: true, a string model and integer "
                                       "max_tokens >= 1 is needed", "type": "invalid_request_error"}})  # fmt: skip
            return
        assert isinstance(doc, dict)
        srv = self.srv
        options = doc.get("stream_options")
        self.usage = isinstance(options, dict) and options.get("include_usage") is True
        self.n = min([srv.output_tokens, *caps])
        self.capped = self.n < srv.output_tokens
        srv.served += 1
        self.rid = rid = f"{srv.tag}{srv.served}"
        self.events: list[tuple[int, str, str]] = []
        self.record = [t_head, self.events, 0]
        srv.keep(rid, self.record)
        head = {"id": rid, "object": "chat.completion.chunk", "created": int(time.time())}
        head |= {"model": doc.get("model", "sim"), "system_fingerprint": None}
        self.opening = b"data: " + dumps(head)[:-1]  # every chunk opens with this; the choices follow
        self.prefix = self.opening + b',"choices":[{"index":0,"delta":'
        self.word = srv.rng.randrange(len(WORDS))  # then steps of STEP through all the words
        self.i, self.t0, self.busy = 0, t_head + srv.ttft_ns, True
        role = self.prefix + b'{"role":"assistant","content":""}' + srv.end[self.usage]
        response = ("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                    f"x-request-id: {rid}\r\nTransfer-Encoding: chunked\r\n\r\n").encode()  # fmt: skip
        t = time.perf_counter_ns()
        self.transport.write(response + chunked(role))
        self.events.append((t, "role", "assistant"))
        self.arm()

    def arm(self) -> None:
        due = self.t0 + round(self.i * self.srv.period_ns)
        self.timer = asyncio.get_running_loop().call_later((due - time.perf_counter_ns()) / 1e9, self.tick)

    def tick(self) -> None:
        """Send one token event; after the last, the finish, usage and [DONE] events and the chunked end."""
        self.timer = None
        if self.transport.is_closing():
            return
        word = self.word = (self.word + STEP) % len(WORDS)  # 100 random draws cost a third of a request's intake
        data = chunked(self.prefix + self.srv.suffix[self.usage][word])
        t = time.perf_counter_ns()
        self.transport.write(data)
        self.events.append((t, "content", WORDS[word]))
        self.i += 1
        self.record[2] = self.i
        if self.i < self.n:
            return self.arm()
        finish = "length" if self.capped else "stop"
        end = b'{},"logprobs":null,"finish_reason":"%s"}]' % finish.encode() + self.srv.close[self.usage]
        ends = [(self.prefix + end, "finish", finish)]
        if self.usage:
            usage = dumps({"prompt_tokens": 0, "completion_tokens": self.n, "total_tokens": self.n})
            ends.append((self.opening + b',"choices":[],"usage":' + usage + b"}\n\n", "usage", usage.decode()))
        for data, kind, text in [*ends, (b"data: [DONE]\n\n", "done", "[DONE]")]:
            t = time.perf_counter_ns()
            self.transport.write(chunked(data))
            self.events.append((t, kind, text))
        self.transport.write(b"0\r\n\r\n")
        self.busy = False
        self.serve(time.perf_counter_ns())


async def run(args: argparse.Namespace, worker: int) -> None:
    """Serve on the shared port and on this worker's own (port + 1 + worker) until killed."""
    srv = Server(args, worker)
    for port, shared in ((args.port, True), (args.port + 1 + worker, False)):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT if shared else socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        await asyncio.get_running_loop().create_server(lambda: Conn(srv), sock=sock, backlog=4096)  # 512 at once
    await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = {"port": 8000, "ttft-ms": 100.0, "tokens-per-s": 50.0, "output-tokens": 100, "workers": 1}
    for name, default in (defaults | {"truth-kept": TRUTH_KEPT}).items():
        parser.add_argument(f"--{name}", type=type(default), default=default)
    parser.add_argument("--cpus", default="", help="pin worker i to the i-th of these cores (default: as started)")
    args = parser.parse_args()
    if not (args.ttft_ms >= 0 and args.tokens_per_s > 0 and min(args.output_tokens, args.truth_kept) >= 1):
        parser.error("--ttft-ms must be >= 0, --tokens-per-s > 0, --output-tokens and --truth-kept >= 1")
    if not 1 <= args.workers <= 64:
        parser.error("--workers must be 1..64")
    cpus = [int(c) for c in args.cpus.split(",") if c]
    children: list[int] = []
    worker = 0
    for i in range(1, args.workers):
        if (pid := os.fork()) == 0:
            children, worker = [], i
            break
        children.append(pid)

    def stop(signum: int, frame: object) -> None:
        for pid in children:  # the caller knows only the first process: it takes the others down with it
            os.kill(pid, signal.SIGTERM)
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    if cpus:
        os.sched_setaffinity(0, {cpus[worker % len(cpus)]})
    factory: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop
    with contextlib.suppress(ImportError):
        import uvloop

        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(run(args, worker))


if __name__ == "__main__":
    main()
