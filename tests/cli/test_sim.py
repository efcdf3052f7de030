"""`tokenpace sim`: the simulator as a server of its own, answering the official OpenAI client and `run`."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path

import openai

from tests.cli.test_cli import invoke


def test_sim_command_serves_the_official_openai_client(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokenpace", "sim", "--port", "0", "--ttft-ms", "10", "--tokens-per-s", "500",
         "--output-tokens", "20"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        said = proc.stderr.readline()  # written once the port is bound: --port 0 names the one it took
        found = re.search(r"tokenpace sim on (http://127\.0\.0\.1:(\d+)/v1) ", said)
        assert found and int(found.group(2)) > 0, said
        port = int(found.group(2))
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x")
        stream = client.chat.completions.create(
            model="sim", messages=[{"role": "user", "content": "hi"}], stream=True,
            stream_options={"include_usage": True},
        )  # fmt: skip
        chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 20
        assert len(text.split()) == 20
        result = invoke("run", "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "sim", "-n", "2",
                        "--db", str(tmp_path / "t.db"), "--json")  # fmt: skip
        assert json.loads(result.stdout)["endpoints"][0]["ok"] == 2
        # Its model list says it is a simulator: the samples are labelled so, as serve's discovery labels them.
        with sqlite3.connect(tmp_path / "t.db") as db:
            assert db.execute("SELECT simulated, count(*) FROM samples GROUP BY simulated").fetchall() == [(1, 2)]
    finally:
        proc.terminate()
        proc.wait(10)


def test_sim_root_that_is_no_path_is_one_line_and_exit_2() -> None:
    result = invoke("sim", "--port", "0", "--root", "zen/")
    assert result.exit_code == 2
    assert "--root: root 'zen/': give a path such as /zen" in result.output
