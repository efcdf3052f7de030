"""A redirect whose Location is no URL (``http://[::1``): a ``redirect`` sample, and the run goes on.

yarl raises ValueError parsing such a header; it used to escape the transport, a traceback under `run` and,
under `serve`, a sample labelled incomplete_stream with the run's other requests never sent.
"""

from __future__ import annotations

import asyncio
import os
import sys
from asyncio.subprocess import PIPE, STDOUT
from pathlib import Path

from aiohttp import web

from tests.clients.test_hostile_wire import FAST, GUARD_S, SHORT, app_server
from tokenpace.config.endpoints import Endpoint
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.measure.failures import ErrorKind
from tokenpace.store.database import open_store

BAD = ["http://[::1", "http://[::1]:99999/x", "mailto:someone"]


SENT: list[str] = []


async def hostile(request: web.Request) -> web.Response:
    SENT.append(request.path)
    return web.Response(status=302, headers={"Location": BAD[len(SENT) % len(BAD)]})


async def test_every_request_of_the_run_is_a_redirect_sample() -> None:
    async with app_server([web.post("/v1/chat/completions", hostile)]) as root:
        async with asyncio.timeout(GUARD_S):
            options = RunOptions(6, 2, FAST, warm_connections=False)
            result = await run_workload([Endpoint("p", "m", f"{root}/v1")], SHORT, options)
    assert len(result.samples) == 6
    assert {s.error_kind for s in result.samples} == {ErrorKind.REDIRECT}, [s.error_message for s in result.samples]
    assert all(s.http_status == 302 and "no URL" in (s.error_message or "") for s in result.samples)


async def test_run_command_reports_the_bad_location_without_a_traceback(tmp_path: Path) -> None:
    async with app_server([web.post("/v1/chat/completions", hostile)]) as root:
        args = ["run", "--base-url", f"{root}/v1", "--model", "m", "-n", "3", "--db", str(tmp_path / "t.db")]
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tokenpace", *args, stdout=PIPE, stderr=STDOUT, env={**os.environ, "COLUMNS": "200"}
        )
        async with asyncio.timeout(GUARD_S):
            output = (await proc.communicate())[0].decode()
    assert "Traceback" not in output and "ValueError" not in output, output
    assert "redirect 3" in output, output
    assert proc.returncode == 1, output  # no request succeeded: the summary says why
    with open_store(str(tmp_path / "t.db")) as store:
        assert [s.error_kind for s in store.samples()] == [ErrorKind.REDIRECT] * 3
