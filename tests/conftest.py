"""Shared fixtures: real servers on free ports, stopped afterwards."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests import llamakit
from tokenpace import sim
from tokenpace.store.database import Store, open_store

SHARED = llamakit.SCRIPTS.parent


def ctrl_c_reaches_child() -> None:
    """``preexec_fn`` for a child a test sends Ctrl-C: SIGINT back to its default, as a terminal leaves it.

    A suite started as a background job (``pytest &`` in a script) ignores SIGINT, and children inherit an
    ignored signal, so Python would never raise KeyboardInterrupt there and the test would wait for nothing.
    Only ``signal.signal`` runs between fork and exec: no import, no lock another thread could hold.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


BUILD = pytest.StashKey[llamakit.Build]()


def _needs_llama(item: pytest.Item) -> bool:
    return "llama_dir" in getattr(item, "fixturenames", ())


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that need llama-server run last, so its first build overlaps all the others."""
    items.sort(key=_needs_llama)  # stable: every other test keeps its place


# Under pytest-xdist each worker collects every test and starts a build (llamakit.LOCK makes the others wait for
# the first); a worker that ends leaves its build running for the workers still testing, and the controller
# stops whatever is left when the session ends (Ctrl-C or -x included). Each worker notes its build's process
# group in this folder, which the controller makes and names in the environment its workers inherit.
BUILDS_ENV = "TOKENPACE_TEST_LLAMA_BUILDS"


def _worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


LLAMA_TESTS = Path(__file__).parent / "clients" / "test_llama_server.py"


def pytest_configure(config: pytest.Config) -> None:
    """Under workers, the folder of their builds; and a session that runs the llama-server tests (the whole suite,
    unfiltered) starts the build at once: collecting on every worker takes a while on a busy machine."""
    if _worker(config):
        return
    if getattr(config.option, "numprocesses", None):
        os.environ[BUILDS_ENV] = tempfile.mkdtemp(prefix="tokenpace-llama-builds-")
    given = [Path(config.invocation_params.dir, arg.split("::")[0]).resolve() for arg in config.args]
    unfiltered = not (config.option.keyword or config.option.markexpr or config.option.collectonly)
    if unfiltered and llamakit.SETUP.is_file() and any(LLAMA_TESTS.is_relative_to(path) for path in given):
        _start_build(config)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start building llama-server now if a selected test needs it."""
    if session.config.option.collectonly or not llamakit.SETUP.is_file():
        return
    if BUILD not in session.config.stash and any(_needs_llama(item) for item in session.items):
        _start_build(session.config)


def _start_build(config: pytest.Config) -> llamakit.Build:
    build = config.stash[BUILD] = llamakit.Build(lock=llamakit.LOCK)
    if _worker(config) and (folder := os.environ.get(BUILDS_ENV)):
        (Path(folder) / str(build.group)).touch()
    return build


BUILT = pytest.StashKey[list[tuple[float, int, float]]]()  # the controller's: each worker's finished build


def _built(build: llamakit.Build | None) -> tuple[float, int, float] | None:
    """A finished build's seconds, exit status and how long the tests waited for it; None while it runs."""
    if build is None or build.running():
        return None
    done = build.wait()
    return done.seconds, done.returncode, build.waited_s


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _worker(session.config) and (built := _built(session.config.stash.get(BUILD, None))) is not None:
        session.config.workeroutput["llama_build"] = built  # type: ignore[attr-defined]


def pytest_testnodedown(node: Any, error: object) -> None:
    """The controller's side of a worker's end (pytest-xdist's hook): what its build took."""
    if (built := node.workeroutput.get("llama_build")) is not None:
        node.config.stash.setdefault(BUILT, []).append(tuple(built))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """One line on the build, so a slow first run says where its time went (under workers: the longest)."""
    own = _built(config.stash.get(BUILD, None))  # the whole session's, started before the workers
    builds = ([own] if own is not None else []) + config.stash.get(BUILT, [])
    if builds:
        seconds, returncode, _ = max(builds)
        terminalreporter.write_line(
            f"llama-server: setup took {seconds:.0f} s in the background (exit {returncode});"
            f" the tests that need it waited {max(b[2] for b in builds):.0f} s for it"
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    """A session that ends before its build (-x, Ctrl-C, no llama test reached) stops it: no orphan compilers."""
    build, folder = config.stash.get(BUILD, None), os.environ.get(BUILDS_ENV)
    if build is not None and not _worker(config):
        build.stop()
    elif build is not None and folder and not build.running():  # ended: its group id may be another's soon
        (Path(folder) / str(build.group)).unlink(missing_ok=True)
    if folder and not _worker(config):
        for noted in Path(folder).iterdir():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(noted.name), signal.SIGTERM)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def llama_dir(request: pytest.FixtureRequest) -> str:
    """The folder holding llama.cpp's real llama-server and a tiny random-weights model with a real tokenizer.

    Built once by ../shared/llama-server (about 10 minutes on a new machine, then cached), in the background
    from the session's start (``llamakit``); the first test that needs it waits for the build to end.
    """
    if not llamakit.SETUP.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{llamakit.SCRIPTS} is missing: CI must run with ../shared beside the checkout")
        pytest.skip(f"{llamakit.SCRIPTS} not found: the llama.cpp tests need ../shared beside the checkout")
    if BUILD not in request.config.stash:  # a test that asked for it after collection
        _start_build(request.config)
    build = request.config.stash[BUILD]
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if build.running() and reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():  # said on the terminal, not kept with the test's output
            since = time.monotonic() - build.started
            reporter.write_line(f"waiting for llama-server's build (started {since:.0f} s ago)...")
    done = build.wait()
    if done.returncode != 0:
        pytest.fail(done.failure())
    return done.folder


def _serve_llama(command: list[str], port: int) -> Iterator[str]:
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{url}/health", timeout=1)
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"llama-server exited: {proc.stderr.read()[-3000:] if proc.stderr else ''}")
                time.sleep(0.1)
        yield f"{url}/v1"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)


def port_taken(port: int) -> bool:
    """Whether something on this machine listens on the loopback port."""
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _start_llama(llama_dir: str, port: int) -> Iterator[str]:
    """llama-server as ../shared starts it: 4 slots of 4,096 tokens; yields its /v1 base URL, then stops it."""
    start = subprocess.run(
        ["bash", str(llamakit.SCRIPTS / "start_server.sh"), llama_dir, str(port)],
        capture_output=True,
        text=True,
        check=False,
    )
    if start.returncode != 0:
        pytest.fail(f"starting llama-server failed:\n{start.stderr[-3000:]}")
    pid = int(start.stdout.strip())
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10  # not our child, so not waited for: the port tells when it has gone
        while port_taken(port) and time.monotonic() < deadline:
            time.sleep(0.05)


@pytest.fixture(scope="session")
def llama_server(llama_dir: str) -> Iterator[str]:
    """llama-server on a free port."""
    yield from _start_llama(llama_dir, free_port())


# A server on a usual LLM port (llama.cpp's 8080) is found by every `tokenpace serve` without a config, so a test
# that starts one runs alone among the suite's workers: every test holds USUAL_PORTS shared, that one exclusive.
# The gate makes it writer-first: once it waits, no test starts until it has run.
_LOCKS = Path(tempfile.gettempdir()) / f"tokenpace-tests-{os.getuid()}"
USUAL_PORTS, USUAL_PORTS_GATE = _LOCKS / "usual-ports.lock", _LOCKS / "usual-ports.gate"


@contextlib.contextmanager
def _flocked(path: Path, how: int) -> Iterator[None]:
    path.parent.mkdir(exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, how)
        yield  # closing the file lets go


@pytest.fixture(autouse=True)
def _usual_ports_untaken(request: pytest.FixtureRequest) -> Iterator[None]:
    if "llama_server_8080" in request.fixturenames:  # it holds them exclusive (a second lock would wait on it)
        yield
        return
    with contextlib.ExitStack() as held:
        with _flocked(USUAL_PORTS_GATE, fcntl.LOCK_EX):
            held.enter_context(_flocked(USUAL_PORTS, fcntl.LOCK_SH))
        yield


@pytest.fixture
def llama_server_8080(llama_dir: str) -> Iterator[str]:
    """llama-server on its usual port, where discovery looks, while no other test runs; skipped where 8080 is taken."""
    with _flocked(USUAL_PORTS_GATE, fcntl.LOCK_EX), _flocked(USUAL_PORTS, fcntl.LOCK_EX):
        if port_taken(8080):
            pytest.skip("port 8080 is taken here: llama-server cannot run on its usual port")
        yield from _start_llama(llama_dir, 8080)


@pytest.fixture(scope="session")
def llama_server_long(llama_dir: str) -> Iterator[str]:
    """One slot with the tiny model's whole trained context (16,384 tokens), for the 10k workload."""
    port = free_port()
    binary, model = Path(llama_dir) / "llama-server", Path(llama_dir) / "tiny.gguf"
    yield from _serve_llama(
        [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-t", "1", "-c", "16384",
         "-np", "1", "--alias", "tiny", "--no-webui"],
        port,
    )  # fmt: skip


class SimThread:
    """A simulator served from its own thread and event loop, for code that runs its own loop (the CLI)."""

    def __init__(self, simulator: sim.Simulator) -> None:
        self.simulator = simulator
        self.url = ""
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with sim.serve(self.simulator) as url:
            self.url = url
            self._ready.set()
            await self._stop.wait()

    def __enter__(self) -> SimThread:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("simulator thread did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


@pytest.fixture
def sim_thread() -> Iterator[Callable[..., SimThread]]:
    """Start simulators in background threads: ``sim_thread(Scenario(...), api_key=...)``."""
    started: list[SimThread] = []

    def start(scenario: sim.Scenario | None = None, api_key: str | None = None) -> SimThread:
        t = SimThread(sim.Simulator(scenario or sim.Scenario(ttft_ms=20, tokens_per_s=500), api_key=api_key))
        started.append(t.__enter__())
        return t

    yield start
    for t in started:
        t.__exit__()


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh schema on the PostgreSQL server at 127.0.0.1:5432 (database test), dropped afterwards."""
    import psycopg

    base = os.environ.get("TOKENPACE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
    schema = f"t_{uuid.uuid4().hex}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{base}?options={quote(f'-c search_path={schema}')}"
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def quiet_server(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Whatever a test does to a connection, nothing logs warnings or tracebacks."""
    yield
    noisy = [r for r in caplog.get_records("call") if r.levelno >= logging.WARNING]
    assert not noisy, [r.getMessage() for r in noisy]


@pytest.fixture
async def refusing_server() -> AsyncIterator[tuple[str, Counter[str]]]:
    """An OpenAI-compatible server that refuses ``stream_options`` with a 400, as some do; counts requests.

    Yields its /v1 base URL and the counts of "refused" and "served" requests; it streams four words.
    """
    from aiohttp import web

    sent: Counter[str] = Counter()

    async def handler(request: web.Request) -> web.StreamResponse:
        if "stream_options" in await request.json():
            sent["refused"] += 1
            message = "Unrecognized request argument supplied: stream_options"
            return web.json_response({"error": {"message": message}}, status=400)
        sent["served"] += 1
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for text in (" the", " speed", " of", " light"):
            await resp.write(f'data: {{"choices":[{{"index":0,"delta":{{"content":"{text}"}}}}]}}\n\n'.encode())
        await resp.write(b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1", sent
    await runner.cleanup()


@pytest.fixture(params=["sqlite", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """An open, empty store: a SQLite file, or a fresh PostgreSQL schema."""
    url = str(tmp_path / "s.db") if request.param == "sqlite" else str(request.getfixturevalue("pg_url"))
    with open_store(url) as s:
        yield s
