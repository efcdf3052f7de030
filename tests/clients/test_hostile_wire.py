"""Hostile servers: every request still ends as exactly one sample, bounded in time and bytes, and no key leaks.

Each server here is a small aiohttp app (or a raw asyncio server, where aiohttp would refuse to send the bytes)
on a free port. Every test runs under a guard far above what the bounded client needs, so a regression shows
as a failure naming the guard rather than a hung suite.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web
from click.testing import CliRunner

from tests.conftest import SimThread
from tokenpace import sim
from tokenpace.cli import main
from tokenpace.clients import protocol_for
from tokenpace.clients.transport import Limits, Timeouts, new_session, record
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.presets import ProtocolName
from tokenpace.config.workloads import DEFAULT, Workload
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.measure.failures import ErrorKind
from tokenpace.measure.sample import Sample
from tokenpace.measure.timing import Recording, Timeline
from tokenpace.prompts.prompt import build_prompt
from tokenpace.store.columns import sample_values

GUARD_S = 30  # far above every bound under test: reaching it means a bound failed
FAST = Timeouts(connect=2, first_token=10, idle=10, total=20)
SHORT = Workload("short", 16)
KEY = "sk-test-0123456789abcdef-SECRET"
HEADER_VALUE = "team-token-9f8e7d6c5b4a"

OK_STREAM = (
    b"".join(
        f'data: {{"id":"x","choices":[{{"index":0,"delta":{{"content":"{w}"}}}}]}}\n\n'.encode()
        for w in (" a", " b", " c")
    )
    + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)


@contextlib.asynccontextmanager
async def app_server(routes: list[web.RouteDef]) -> AsyncIterator[str]:
    """An aiohttp app on a free port; yields its root URL (no trailing slash)."""
    app = web.Application()
    app.add_routes(routes)
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def raw_server(answer: Callable[[asyncio.StreamWriter], Awaitable[None]]) -> AsyncIterator[str]:
    """A TCP server that reads one request head and writes whatever ``answer`` writes, HTTP or not."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await reader.readuntil(b"\r\n\r\n")
            await answer(writer)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


async def sse(request: web.Request, body: bytes = OK_STREAM) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(body)
    return resp


async def one_sample(endpoint: Endpoint, plan: RunOptions | None = None, workload: Workload = SHORT) -> Sample:
    async with asyncio.timeout(GUARD_S):
        result = await run_workload([endpoint], workload, plan or RunOptions(1, 1, FAST))
    assert len(result.samples) == 1
    return result.samples[0]


# --- item 10: limits on what a server sends -------------------------------------------------------------


async def test_endless_model_list_does_not_hold_the_warm_up() -> None:
    written = [0]

    async def models(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        block = b"x" * 65536
        while True:
            await resp.write(block)
            written[0] += len(block)

    routes = [web.get("/v1/models", models), web.post("/v1/chat/completions", sse)]
    async with app_server(routes) as root:
        s = await one_sample(Endpoint("p", "m", f"{root}/v1"), RunOptions(1, 1, Timeouts(1, 10, 10, 20)))
    assert s.ok, s.error_message
    assert written[0] < 16 * 2**20  # the warm-up read at most its cap (plus what socket buffers held)


async def test_drip_fed_model_list_does_not_hold_the_warm_up() -> None:
    async def models(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        while True:
            await resp.write(b"{")
            await asyncio.sleep(0.05)

    routes = [web.get("/v1/models", models), web.post("/v1/chat/completions", sse)]
    async with app_server(routes) as root:
        # The warm-up gets the connect timeout plus a few seconds, never more than the total timeout.
        s = await one_sample(Endpoint("p", "m", f"{root}/v1"), RunOptions(1, 1, Timeouts(0.5, 5, 5, 2)))
    assert s.ok, s.error_message


async def endless_sse(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    event = b'data: {"choices":[{"index":0,"delta":{"content":" word"}}]}\n\n' * 100
    while True:
        await resp.write(event)


async def test_endless_stream_stops_at_the_response_cap() -> None:
    limits = Limits(response_bytes=2**20)
    async with app_server([web.post("/v1/chat/completions", endless_sse)]) as root:
        s = await one_sample(
            Endpoint("p", "m", f"{root}/v1"), RunOptions(1, 1, FAST, warm_connections=False, limits=limits)
        )
    assert s.error_kind is ErrorKind.RESPONSE_TOO_LARGE, s.error_message
    assert s.error_message and "1 MiB" in s.error_message
    assert s.metrics.output_tokens > 0  # what arrived before the cap is kept and measured


def test_run_option_sets_the_response_cap(tmp_path: Path, sim_thread: Callable[..., SimThread]) -> None:
    s = sim_thread(sim.Scenario(error="endless", ttft_ms=5, tokens_per_s=20_000))
    args = ["run", "--base-url", s.url, "--model", "m", "-n", "1", "--max-response-bytes", "65536", "--json"]
    result = CliRunner().invoke(main, [*args, "--total-timeout", "20", "--db", str(tmp_path / "t.db")])
    (summary,) = json.loads(result.stdout)["endpoints"]
    assert summary["errors"] == {"response_too_large": 1}


async def test_endless_line_stops_at_the_line_cap() -> None:
    async def one_line(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(b'data: {"choices":[{"index":0,"delta":{"content":"')
        while True:
            await resp.write(b"x" * 4096)

    limits = Limits(line_bytes=64 * 1024)
    async with app_server([web.post("/v1/chat/completions", one_line)]) as root:
        s = await one_sample(
            Endpoint("p", "m", f"{root}/v1"), RunOptions(1, 1, FAST, warm_connections=False, limits=limits)
        )
    assert s.error_kind is ErrorKind.RESPONSE_TOO_LARGE, s.error_message
    assert s.error_message and "line" in s.error_message


async def test_gzip_bomb_stops_at_the_cap_on_decompressed_bytes() -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = packer.compress(b"data: " + b"0" * (64 * 2**20)) + packer.flush()  # 64 MiB in about 64 kB

    async def gzipped(request: web.Request) -> web.Response:
        headers = {"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}
        return web.Response(body=bomb, headers=headers)

    limits = Limits(response_bytes=4 * 2**20, line_bytes=8 * 2**20)
    async with app_server([web.post("/v1/chat/completions", gzipped)]) as root:
        s = await one_sample(
            Endpoint("p", "m", f"{root}/v1"), RunOptions(1, 1, FAST, warm_connections=False, limits=limits)
        )
    assert len(bomb) < 4 * 2**20  # the cap holds on what was decompressed, not on what travelled
    assert s.error_kind is ErrorKind.RESPONSE_TOO_LARGE, s.error_message


async def test_invalid_chunked_framing_fails_at_once() -> None:
    async def bad_chunks(writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        event = b'data: {"choices":[{"index":0,"delta":{"content":" hi"}}]}\n\n'
        writer.write(b"%x\r\n%s\r\n" % (len(event), event))  # one good chunk: the stream is under way
        await writer.drain()
        await asyncio.sleep(0.2)
        writer.write(b"ZZZ\r\nnot a chunk size\r\n")
        await writer.drain()
        await asyncio.sleep(GUARD_S)

    async with raw_server(bad_chunks) as root:
        s = await one_sample(Endpoint("p", "m", f"{root}/v1"), RunOptions(1, 1, FAST, warm_connections=False))
    assert s.error_kind is ErrorKind.BAD_RESPONSE, s.error_message
    assert s.metrics.ttft_ms is not None  # the good chunk before the garbage was measured


# --- item 12: every request ends as one sample, classified ----------------------------------------------


async def test_oversized_response_header_is_a_bad_response_not_a_connect_error() -> None:
    async def big_header(writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 200_000 + b"\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(1)

    async with raw_server(big_header) as root:
        s = await one_sample(Endpoint("p", "m", f"{root}/v1"), RunOptions(1, 1, FAST, warm_connections=False))
    assert s.error_kind is ErrorKind.BAD_RESPONSE, s.error_message
    assert s.error_message and "header" in s.error_message and "aaaa" not in s.error_message


@pytest.mark.parametrize(
    ("body", "kind", "counted"),
    [
        (b"data: " + b"[" * 100_000 + b"]" * 100_000 + b"\n\n" + OK_STREAM, ErrorKind.MALFORMED_STREAM, 3),
        (b"data: [DONE]\n\n" + OK_STREAM, ErrorKind.MALFORMED_STREAM, 0),
    ],
    ids=["deeply-nested-json", "text-after-done"],
)
async def test_hostile_streams_end_as_one_classified_sample(body: bytes, kind: ErrorKind, counted: int) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return await sse(request, body)

    async with app_server([web.post("/v1/chat/completions", handler)]) as root:
        s = await one_sample(Endpoint("p", "m", f"{root}/v1"), RunOptions(1, 1, FAST, warm_connections=False))
    assert s.error_kind is kind, s.error_message
    assert s.metrics.output_tokens == counted  # text after the end marker is kept in the timeline, never counted


async def test_a_decoder_that_fails_still_leaves_one_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(rec: Recording) -> Timeline:
        raise RuntimeError("a bug in a decoder")

    monkeypatch.setattr(protocol_for("openai-chat"), "decode", broken)  # a fault no real stream triggers today
    async with app_server([web.post("/v1/chat/completions", sse)]) as root:
        s = await one_sample(Endpoint("p", "m", f"{root}/v1"), RunOptions(1, 1, FAST, warm_connections=False))
    assert s.error_kind is ErrorKind.MALFORMED_STREAM and s.error_message == "undecodable stream: RuntimeError"
    assert s.metrics.ttfb_ms is not None  # the transport's timing is kept


async def test_usage_sent_as_strings_is_a_sample_with_the_raw_value_kept() -> None:
    usage = b'data: {"choices":[],"usage":{"prompt_tokens":"12","completion_tokens":"3"}}\n\n'
    body = OK_STREAM.replace(b"data: [DONE]", usage + b"data: [DONE]")

    async def handler(request: web.Request) -> web.StreamResponse:
        return await sse(request, body)

    async with app_server([web.post("/v1/chat/completions", handler)]) as root:
        s = await one_sample(Endpoint("p", "m", f"{root}/v1"), RunOptions(1, 1, FAST, warm_connections=False))
    assert s.ok, s.error_message
    assert s.metrics.provider_input_tokens is None and s.metrics.provider_output_tokens is None
    assert json.loads(s.timeline.to_json())["usage_raw"] == {"prompt_tokens": '"12"', "completion_tokens": '"3"'}


# --- item 11: secrets -----------------------------------------------------------------------------------


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("HOSTILE_TEST_KEY", KEY)
    return "HOSTILE_TEST_KEY"


@pytest.mark.parametrize("protocol", ["anthropic", "gemini", "openai-chat"])
async def test_cross_origin_redirect_is_not_followed(protocol: ProtocolName, keyed: str) -> None:
    seen: list[dict[str, str]] = []

    async def elsewhere(request: web.Request) -> web.Response:
        seen.append(dict(request.headers))
        return web.Response(text="{}")

    async with app_server([web.route("*", "/{tail:.*}", elsewhere)]) as other:

        async def redirect(request: web.Request) -> web.Response:
            raise web.HTTPTemporaryRedirect(f"{other}{request.path_qs}")

        async with app_server([web.route("*", "/{tail:.*}", redirect)]) as root:
            endpoint = Endpoint("p", "m", f"{root}/v1", protocol=protocol, api_key_env=keyed)
            s = await one_sample(endpoint, RunOptions(1, 1, FAST))  # with the warm-up: it must not follow either
    assert not seen, "the other origin received a request"
    assert s.error_kind is ErrorKind.REDIRECT, s.error_message
    assert s.error_message and other in s.error_message and KEY not in s.error_message


async def test_same_origin_redirect_is_followed_and_measured() -> None:
    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect("/v2/chat/completions")

    routes = [web.post("/v1/chat/completions", moved), web.post("/v2/chat/completions", sse)]
    async with app_server(routes) as root:
        s = await one_sample(Endpoint("p", "m", f"{root}/v1"), RunOptions(1, 1, FAST, warm_connections=False))
    assert s.ok, s.error_message
    assert s.metrics.output_tokens == 3


async def test_echoed_key_and_header_values_are_scrubbed_everywhere(keyed: str) -> None:
    echo = f"{KEY} {HEADER_VALUE}"
    body = (
        f'data: {{"id":"{KEY}","choices":[{{"index":0,"delta":{{"content":"you said {echo}"}}}}],'
        f'"timings":{{"note":"{echo}"}}}}\n\n'
        f'data: {{"error":{{"message":"refused {echo}"}}}}\n\n'
    ).encode()

    async def handler(request: web.Request) -> web.StreamResponse:
        return await sse(request, body)

    async with app_server([web.post("/v1/chat/completions", handler)]) as root:
        endpoint = Endpoint("p", "m", f"{root}/v1", api_key_env=keyed, headers=(("X-Team", HEADER_VALUE),))
        s = await one_sample(endpoint, RunOptions(1, 1, FAST, warm_connections=False))
    assert s.error_kind is ErrorKind.STREAM_ERROR
    stored = json.dumps(sample_values(s), default=str)  # every column, the timeline included
    assert "you said" in stored and "refused" in stored
    assert KEY not in stored and HEADER_VALUE not in stored


async def test_a_key_written_piece_by_piece_is_masked(keyed: str) -> None:
    pieces = [KEY[:5], KEY[5:17], KEY[17:]]
    body = (
        b"".join(
            f'data: {{"choices":[{{"index":0,"delta":{{"content":"{p}"}}}}]}}\n\n'.encode() for p in ["key: ", *pieces]
        )
        + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )

    async def handler(request: web.Request) -> web.StreamResponse:
        return await sse(request, body)

    async with app_server([web.post("/v1/chat/completions", handler)]) as root:
        s = await one_sample(
            Endpoint("p", "m", f"{root}/v1", api_key_env=keyed), RunOptions(1, 1, FAST, warm_connections=False)
        )
    assert s.ok, s.error_message
    assert s.timeline.text() == "key: " + "*" * len(KEY)
    assert [e.text for e in s.timeline.token_events] == ["key: ", "*" * 5, "*" * 12, "*" * (len(KEY) - 17)]


async def test_echoed_key_in_an_http_error_is_scrubbed(keyed: str) -> None:
    async def handler(request: web.Request) -> web.Response:
        message = f"bad key {request.headers.get('x-api-key')} for {request.headers.get('X-Team')}"
        return web.json_response({"error": {"message": message}}, status=401)

    async with app_server([web.route("*", "/{tail:.*}", handler)]) as root:
        endpoint = Endpoint(
            "p", "m", f"{root}/v1", protocol="anthropic", api_key_env=keyed, headers=(("X-Team", HEADER_VALUE),)
        )
        s = await one_sample(endpoint, RunOptions(1, 1, FAST, warm_connections=False))
    assert s.error_kind is ErrorKind.HTTP_ERROR and s.error_message
    assert "bad key" in s.error_message and KEY not in s.error_message and HEADER_VALUE not in s.error_message


# --- item 9: the first-token check never decodes on the timing loop -------------------------------------


async def test_first_token_check_runs_off_the_loop() -> None:
    threads: list[threading.Thread] = []
    proto = protocol_for("openai-chat")

    def has_token(rec: Recording) -> bool:
        threads.append(threading.current_thread())
        return proto.has_token(rec)

    async def slow(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(b": keep-alive\n\n")
        await asyncio.sleep(GUARD_S)
        return resp

    async with app_server([web.post("/v1/chat/completions", slow)]) as root:
        request = proto.request(Endpoint("p", "m", f"{root}/v1"), build_prompt(DEFAULT, 1))
        rec = Recording()
        async with new_session(1, FAST) as session, asyncio.timeout(GUARD_S - 5):
            await record(session, request, Timeouts(2, 0.3, 10, 20), rec, has_token)
    assert rec.failure is not None and rec.failure.kind is ErrorKind.FIRST_TOKEN_TIMEOUT
    assert threads and threading.current_thread() not in threads


async def test_discovery_reads_a_strangers_model_list_within_bounds() -> None:
    """Whatever answers on a probed port: an endless, deeply nested or enormous list finds nothing or a few."""
    from tokenpace.config.presets import PRESETS
    from tokenpace.serve import discover

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        with contextlib.suppress(ConnectionError):
            while True:
                await response.write(b'{"data": [' * 1000)
        return response

    def answer(body: bytes) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handler(_: web.Request) -> web.Response:
            return web.Response(body=body)

        return handler

    many = {"data": [{"id": "x" * 10_000}, {"id": "bad\x1b[2J"}] + [{"id": f"m{i}"} for i in range(5000)]}
    routes = [
        web.get("/endless/v1/models", endless),
        web.get("/deep/v1/models", answer(b"[" * 100_000 + b"]" * 100_000)),
        web.get("/many/v1/models", answer(json.dumps(many).encode())),
        web.get("/bytes/v1/models", answer(b"\xff\xfe not json")),
    ]
    llama = PRESETS["llama.cpp"]
    async with app_server(routes) as root:
        found = await asyncio.wait_for(
            discover.local([(llama, f"{root}/{name}/v1") for name in ("endless", "deep", "bytes", "many")]),
            GUARD_S,
        )
    assert [e.model for e in found] == [f"m{i}" for i in range(discover.MAX_MODELS)]


async def test_a_kept_connection_the_server_closed_frees_its_place_for_a_new_one() -> None:
    """A server that answers each connection once and hangs up: the pool of one stream must open a new connection
    for every request, never wait on the one gone (issue 32: llama-server closes idle ones after 5 s)."""

    async def once(writer: asyncio.StreamWriter) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(OK_STREAM)
        writer.write(head + OK_STREAM)
        await writer.drain()

    async with raw_server(once) as root, asyncio.timeout(GUARD_S):
        result = await run_workload([Endpoint("p", "m", f"{root}/v1")], SHORT, RunOptions(4, 1, FAST))
    assert [s.error_kind for s in result.samples] == [None] * 4
