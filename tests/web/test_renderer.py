"""Pages rendered by a worker process over its own connection to a real SQLite store, against the same app on
threads: the same answers, errors not kept, and a worker that dies replaced (fresh after a write: test_app.py's
test_pages_show_a_sample_as_soon_as_it_is_stored, in both modes)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.webkit import Fleet, filled_store
from tokenpace.store.database import Store
from tokenpace.web import create_app
from tokenpace.web.paths import endpoint_path, model_path
from tokenpace.web.renderer import Renderer, fetch
from tokenpace.web.site import Site

# What the clock writes: the two apps render a second apart.
# What moves with the clock between two renders: when, how long ago, and how much of the window samples cover.
GENERATED = re.compile(
    rb'Generated [-0-9]+ [:0-9]+ UTC|\d+ (?:s|min|h) ago|"generated_at":"[^"]*"'
    rb'|\d+ (?:s|min|h) of \d+ [hd]|"covered_s":[0-9.]+'
)


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, Fleet]]:
    store, fleet = filled_store(tmp_path_factory.mktemp("worker") / "worker.db")
    with store:
        yield store, fleet


def renderer_of(client: TestClient) -> Renderer:
    site: Site = client.app.state.site  # type: ignore[attr-defined]
    assert site.renderer is not None
    return site.renderer


@pytest.fixture
def in_worker(filled: tuple[Store, Fleet]) -> Iterator[TestClient]:
    store, fleet = filled
    with TestClient(create_app(store, fleet.config, page_refresh_s=0, render_store=store.url)) as c:
        yield c
        renderer_of(c).close()


def test_the_worker_answers_as_the_threads_do(filled: tuple[Store, Fleet], in_worker: TestClient) -> None:
    store, fleet = filled
    paths = [
        "/", "/leaderboard.json", "/?sort=ttft&order=asc", "/leaderboard.csv?window=24h", "/methodology.json",
        model_path(fleet.fast.model) + ".json", endpoint_path(fleet.fast.provider, "default", fleet.fast.model),
        "/endpoint/nobody/default/nothing.json", "/?window=1y", "/model/x%00y",
    ]  # fmt: skip
    with TestClient(create_app(store, fleet.config)) as on_threads:
        for path in paths:
            want, got = on_threads.get(path), in_worker.get(path)
            assert (got.status_code, got.headers["content-type"]) == (want.status_code, want.headers["content-type"])
            assert GENERATED.sub(b"", got.content) == GENERATED.sub(b"", want.content), path
    assert [in_worker.get(p).status_code for p in paths[-3:]] == [404, 400, 400]  # errors come through as such


def test_a_worker_that_dies_is_a_503_then_replaced(in_worker: TestClient) -> None:
    assert in_worker.get("/leaderboard.json").status_code == 200
    pool = renderer_of(in_worker)._pool
    for pid in list(pool._processes):
        os.kill(pid, signal.SIGKILL)
    r = in_worker.get("/leaderboard.json?window=24h")  # not in the memo: it needs the worker
    assert r.status_code == 503 and "the process rendering pages stopped" in r.json()["error"]
    assert in_worker.get("/leaderboard.json?window=24h").status_code == 200  # a new worker
    assert renderer_of(in_worker)._pool is not pool


def test_fetch_gets_a_page_from_an_app_in_process(filled: tuple[Store, Fleet]) -> None:
    store, fleet = filled
    got = asyncio.run(fetch(create_app(store, fleet.config), "/leaderboard.json"))
    assert got.status == 200 and b'"entries"' in got.body
    assert (b"content-type", b"application/json") in got.headers


def test_a_worker_renders_with_the_clock(filled: tuple[Store, Fleet]) -> None:
    store, fleet = filled
    with pytest.raises(ValueError, match="neither now nor stale_after"):
        create_app(store, fleet.config, now=lambda: datetime.now(UTC), render_store=store.url)


SCRIPT = """
import sys
from tokenpace.config.endpoints import Config
from tokenpace.store.database import open_store
from tokenpace.web import create_app
from tokenpace.web.renderer import RenderCall

if __name__ == "__main__":
    store = open_store(sys.argv[1])
    worker = create_app(store, Config(), render_store=sys.argv[1]).state.site.renderer
    worker.render(RenderCall("/leaderboard.json", b"/leaderboard.json", b"", 0, None))
    print(*worker._pool._processes, flush=True)
    sys.stdin.read()  # until killed
"""


def test_a_worker_ends_with_the_process_it_serves_even_one_killed_outright(tmp_path: Path) -> None:
    script = tmp_path / "serving.py"
    script.write_text(SCRIPT)
    serving = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "killed.db")], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert serving.stdout is not None
        (pid,) = map(int, serving.stdout.readline().split())
        os.kill(pid, 0)  # the worker runs (else ProcessLookupError)
    finally:
        serving.kill()  # SIGKILL: no clean-up of its own
        serving.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    pytest.fail("the worker outlived the process it served")
