"""Pages rendered in another process, so that rendering never holds the interpreter the event loop needs.

Under a flood of 200 page requests/s over a million samples (bench/flood.py), views on threads beside the
event loop held the GIL for the whole of each render: whenever a page's memo expired, requests answered from
the memo waited behind it (p99 0.2-0.4 s in those seconds), and a sample timed in the same process shared that
interpreter. In ``tokenpace serve`` views run in a worker process instead: it opens its own store (a reader,
as any other process would), runs the same app with views on its own threads, and hands back each response
whole. The serving process keeps the page memo and answers warm pages from it, as before.

What the worker cannot see for itself comes with each request: the serving store's write count (its memos
expire when a sample is stored) and the sampler's status (budgets, late jobs).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.types import ASGIApp, Message

from tokenpace.children import child_started, deaf_children
from tokenpace.config.endpoints import Config
from tokenpace.errors import WorkerError
from tokenpace.schedule.status import Status
from tokenpace.store.database import Store, open_store

NICENESS = 10  # rendering is background work: on a busy machine, serving and timing get the CPU first
# create_app(store, config, *, status, page_refresh_s): passed in, so that this module needs no import of app.py
AppFactory = Callable[..., Starlette]


@dataclass(frozen=True, slots=True)
class RenderCall:
    """One GET for the worker: the path as routed and as sent, its query string, and what only we know."""

    path: str
    raw_path: bytes
    query_string: bytes
    writes: int  # the serving store's write count
    status: Status | None  # the sampler's, when there is one


@dataclass(frozen=True, slots=True)
class Rendered:
    """A whole response: status, headers as sent, body."""

    status: int
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes

    def response(self) -> Response:
        response = Response(self.body, self.status)
        response.raw_headers = list(self.headers)
        return response


async def fetch(app: ASGIApp, path: str, raw_path: bytes | None = None, query_string: bytes = b"") -> Rendered:
    """GET ``path`` from ``app`` in this process, as a server would, and collect the response."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": path, "raw_path": raw_path or path.encode(), "query_string": query_string, "root_path": "",
        "headers": [(b"host", b"localhost")], "client": None, "server": None,
    }  # fmt: skip
    sent: list[Message] = []
    done = asyncio.Event()

    async def receive() -> Message:
        if not sent:
            return {"type": "http.request", "body": b"", "more_body": False}
        await done.wait()  # the response is complete: now the client "leaves"
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            done.set()

    try:
        await app(scope, receive, send)
    except Exception:  # Starlette has already sent its 500 when it re-raises; else we do
        if not sent:
            return Rendered(500, ((b"content-type", b"text/plain; charset=utf-8"),), b"Internal Server Error")
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return Rendered(start["status"], tuple(start.get("headers", ())), body)


class Renderer:
    """A process rendering pages with its own store and its own copy of the app; one render at a time."""

    def __init__(self, factory: AppFactory, store_url: str, config: Config, status: Status | None) -> None:
        self._args = (factory, store_url, config, status)
        self._lock = threading.Lock()
        self._pool = self._start()

    def _start(self) -> ProcessPoolExecutor:
        # spawn, not fork: a fork would copy this process's threads' locks in whatever state they are in.
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(1, mp_context=context, initializer=_start, initargs=self._args)
        with deaf_children():  # a first call spawns the process now, from this thread: deaf from its start
            pool.submit(int)
        return pool

    def render(self, call: RenderCall) -> Rendered:
        """The response to ``call``, blocking (on a view thread); WorkerError if the process died doing it."""
        pool = self._pool
        try:
            return pool.submit(_render, call).result()
        except BrokenProcessPool:
            with self._lock:
                if self._pool is pool:  # the first to notice starts the next one
                    self._pool = self._start()
            raise WorkerError("the process rendering pages stopped; a new one is starting: retry") from None

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)


# In the worker process only: its store, app, event loop and the status the latest call brought.
_here: dict[str, Any] = {}


def _start(factory: AppFactory, store_url: str, config: Config, status: Status | None) -> None:
    child_started()  # a Ctrl-C to the terminal's process group is the serving process's to answer
    os.nice(NICENESS)
    store = open_store(store_url)
    _here.update(store=store, status=status, loop=asyncio.new_event_loop())
    now_status = (lambda: _here["status"]) if status is not None else None
    app = _here["app"] = factory(store, config, status=now_status, page_refresh_s=0.0)
    env: jinja2.Environment = app.state.site.env
    for name in env.list_templates(filter_func=lambda name: name.endswith(".html")):
        env.get_template(name)  # compiled now, not while the first visitor of each page waits (~30 ms each)


def _render(call: RenderCall) -> Rendered:
    store: Store = _here["store"]
    store.writes = call.writes  # this process writes nothing: its memos follow the serving store's count
    _here["status"] = call.status
    loop: asyncio.AbstractEventLoop = _here["loop"]
    return loop.run_until_complete(fetch(_here["app"], call.path, call.raw_path, call.query_string))
