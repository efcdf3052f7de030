"""`tokenpace serve` as a user runs it: its own process, no config, real simulators, real signals."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SimThread, ctrl_c_reaches_child, free_port, port_taken
from tokenpace import sim
from tokenpace.schedule.sampler import MEASURED_AT_ONCE
from tokenpace.serve import discover
from tokenpace.store.database import open_store

NO_KEYS = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


class Served:
    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.db = tmp_path / "serve.db"
        self.log = tmp_path / "serve.log"
        command = [sys.executable, "-m", "tokenpace", "serve", "--port", str(self.port), "--db", str(self.db), *args]
        with self.log.open("a") as log:
            self.proc = subprocess.Popen(command, stdout=log, stderr=log, env=NO_KEYS, preexec_fn=ctrl_c_reaches_child)

    def wait_for(self, path: str, done: Any, timeout_s: float) -> Any:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()
            try:
                doc = _get(self.url + path)
                if done(doc):
                    return doc
            except OSError:
                pass
            time.sleep(0.5)
        pytest.fail(f"{path} did not get there in {timeout_s:g} s:\n{self.log.read_text()[-3000:]}")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(60)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    if asyncio.run(discover.discover({})).endpoints:
        pytest.skip("a local LLM server answers on a usual port here: serve would measure it, not the simulators")
    s = Served(tmp_path, "--grace", "0.5")
    try:
        yield s
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


def _ranked_simulated(doc: dict[str, Any]) -> bool:
    ranked = [e for e in doc["entries"] if e["rank"] is not None]
    return len(ranked) >= 2


def test_serve_without_config_ranks_simulated_endpoints_and_stops_cleanly(served: Served) -> None:
    # Client-bound samples included: on a busy test machine most runs are, and they are left out by default.
    # One sample each is enough to rank here (min_samples=1): the simulators answer 1k to its 1,000-token cap.
    board = served.wait_for("/leaderboard.json?client_bound=include&min_samples=1", _ranked_simulated, timeout_s=60)
    assert {e["provider"] for e in board["entries"]} <= {"sim-fast", "sim-steady", "sim-flaky"}
    assert all(e["simulated"] for e in board["entries"])
    ranked = [e for e in board["entries"] if e["rank"] is not None]
    assert [e["failing"] for e in ranked] == sorted(e["failing"] for e in ranked)  # sim-flaky may fail: last
    speeds = [e["output_speed"]["headline"] for e in ranked if not e["failing"]]
    assert speeds == sorted(speeds, reverse=True)
    page = urllib.request.urlopen(served.url + "/?client_bound=include", timeout=10).read().decode()
    assert ranked[0]["name"] in page and "simulated" in page
    assert _get(served.url + "/health")["ok"] is True

    assert served.stop() == 143
    log = served.log.read_text()
    assert "measuring simulated endpoints" in log and "stopped (SIGTERM): " in log
    assert "Traceback" not in log
    # Nothing measured is lost: every run's samples are all in the store, cancelled ones included.
    with open_store(str(served.db)) as store:
        runs = store.runs()
        counts = dict(store.query("SELECT run_id, COUNT(*) FROM samples GROUP BY run_id"))
        assert runs and all(r.command == "tokenpace serve" for r in runs)
        assert {r.id: r.completed for r in runs} == {r.id: counts.get(r.id, 0) for r in runs}

    shown = ("--min-samples", "1", "--client-bound", "include")  # as the page above
    out = subprocess.run(
        [sys.executable, "-m", "tokenpace", "leaderboard", "--db", str(served.db), *shown],
        capture_output=True,
        text=True,
        check=True,
        env=NO_KEYS | {"COLUMNS": "200"},
    ).stdout
    assert ranked[0]["name"] in out and "simulated" in out


def test_serve_refuses_a_port_in_use_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        message = _refused("--port", str(port), "--db", str(tmp_path / "x.db"))
    assert f"cannot listen on 127.0.0.1:{port}" in message and "--port" in message


def test_serve_names_a_missing_key_before_measuring(tmp_path: Path) -> None:
    config = tmp_path / "keyed.toml"
    config.write_text('[providers.groq]\nmodels = ["llama-3.1-8b-instant"]\n')
    message = _refused("--config", str(config), "--port", str(free_port()), "--db", str(tmp_path / "x.db"))
    assert "GROQ_API_KEY is not set" in message


def _refused(*args: str) -> str:
    """What `tokenpace serve ARGS` says when it refuses to start: exit 2 (fix the command), one line, no traceback."""
    command = [sys.executable, "-m", "tokenpace", "serve", *args]
    done = subprocess.run(command, capture_output=True, text=True, env=NO_KEYS, timeout=60, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    return done.stderr


def test_a_llama_server_on_its_usual_port_appears_on_the_leaderboard(llama_server_8080: str, tmp_path: Path) -> None:
    if any(port_taken(p) for p in (11434, 8000, 30000)):
        pytest.skip("another usual LLM port is taken here: serve would measure that server too")
    served = Served(tmp_path, "--grace", "0.5")
    try:
        board = served.wait_for(
            "/leaderboard.json?min_samples=1&client_bound=include",
            lambda doc: any(e["rank"] for e in doc["entries"]),
            timeout_s=120,
        )
        (entry,) = board["entries"]
        assert (entry["name"], entry["simulated"], entry["protocol"]) == ("llama.cpp/tiny", False, "openai-chat")
        assert entry["output_speed"]["headline"] > 0 and entry["success_rate"] == 1.0
        assert served.stop() == 143
        assert "llama.cpp: http://127.0.0.1:8080/v1 answered, measuring tiny" in served.log.read_text()
    finally:
        if served.proc.poll() is None:
            served.proc.kill()


def test_ctrl_c_twice_at_once_is_one_stop_and_later_cancels(tmp_path: Path) -> None:
    config = tmp_path / "slow.toml"
    config.write_text(
        "[providers.slow]\nsimulate = { ttft_ms = 10, tokens_per_s = 5, output_tokens = 200 }\n"
        '[schedule]\nworkloads = ["short"]\n[workloads.short]\ninput_tokens = 300\nmax_tokens = 200\n'
    )
    served = Served(tmp_path, "--config", str(config), "--grace", "60")
    try:
        served.wait_for("/health", lambda doc: doc["scheduler"]["jobs_running"] == 1, timeout_s=60)
        served.proc.send_signal(signal.SIGINT)
        served.proc.send_signal(signal.SIGINT)  # what `uv run` and the terminal together deliver for one Ctrl-C
        time.sleep(2)
        assert served.proc.poll() is None, "the repeated signal cut the grace period"
        served.proc.send_signal(signal.SIGINT)  # a second Ctrl-C, later: cancel now
        assert served.proc.wait(30) == 130
        log = served.log.read_text()
        assert "interrupted (Ctrl-C): runs in flight get up to 60 s" in log and "cancelling the runs in flight" in log
        with open_store(str(served.db)) as store:
            kinds = [s.error_kind for s in store.samples()]
        assert kinds and kinds[-1] == "cancelled"
    finally:
        if served.proc.poll() is None:
            served.proc.kill()


def test_serve_on_a_public_address_warns_that_the_board_is_unauthenticated(tmp_path: Path) -> None:
    """Issue 9 item 14: any address but loopback says so when serve starts; loopback stays quiet."""
    from tokenpace.serve import service

    for host, public in (("127.0.0.1", False), ("0.0.0.0", True)):  # noqa: S104 (the point of the test)
        sock = service.listen(host, 0)
        with sock:
            assert service.public(sock) is public
    s = Served(tmp_path, "--host", "0.0.0.0", "--grace", "0.5")  # noqa: S104
    try:
        s.wait_for("/leaderboard.json", lambda doc: True, 60)
        assert "public and unauthenticated" in s.log.read_text()
        assert s.stop() == 143
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


async def test_connections_send_small_responses_at_once_on_a_plain_asyncio_loop() -> None:
    """Nagle off on every accepted connection, as uvloop does: without it, a page under one TCP segment sent after
    its headers waited ~40 ms for the client's delayed ACK (bench/flood.py saw 44 ms per board)."""
    import socket

    from tokenpace.serve import service

    accepted: list[asyncio.Transport] = []

    class Keep(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            accepted.append(transport)  # type: ignore[arg-type]

    sock = service.listen("127.0.0.1", 0)
    server = await asyncio.get_running_loop().create_server(Keep, sock=sock)
    async with server:
        _, writer = await asyncio.open_connection(*sock.getsockname())
        for _ in range(100):
            if accepted:
                break
            await asyncio.sleep(0.01)
        conn = accepted[0].get_extra_info("socket")
        assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        writer.close()


def _most_at_once(truths: list[sim.Truth]) -> int:
    """The most requests a simulator was serving at the same time: from arrival to its last event."""
    edges = sorted(
        e for t in truths for e in ((t.t_received_ns, 1), (max([t.t_received_ns, *(x[0] for x in t.events)]), -1))
    )
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def test_a_config_of_thousands_of_providers_measures_a_bounded_number_at_once_and_stops_on_sigterm(
    tmp_path: Path, sim_thread: Callable[..., SimThread]
) -> None:
    """The hostile tester's 11,905 providers: every run started at once, and SIGTERM waited over 10 s."""
    s = sim_thread(sim.Scenario(ttft_ms=50, tokens_per_s=200, output_tokens=200))
    config = tmp_path / "many.toml"
    providers = (f'[providers.p{i}]\nbase_url = "{s.url}"\nmodels = ["m"]\n' for i in range(11_905))
    config.write_text('[schedule]\nworkloads = ["1k"]\n' + "".join(providers))
    served = Served(tmp_path, "--config", str(config), "--grace", "1")
    try:
        served.wait_for("/health", lambda doc: doc["scheduler"]["jobs_running"] > 0, timeout_s=180)
        time.sleep(3)
        assert served.stop() == 143  # within Served.stop's 60 s, grace and all
    finally:
        if served.proc.poll() is None:
            served.proc.kill()
    log = served.log.read_text()
    assert "stopped (SIGTERM)" in log and "Traceback" not in log, log[-3000:]
    most = _most_at_once(list(s.simulator.truth.values()))
    assert 0 < most <= MEASURED_AT_ONCE, f"{most} requests at once"
