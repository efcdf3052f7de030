"""Inputs within every other bound stay within memory, or are refused in one line naming the bound (issue 21
item 3); Ctrl-C and SIGTERM stop every command in one line, also while it prepares.

No test makes a big file: a sparse file reads as long as a real one, and a limit can be made small.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tests.conftest import ctrl_c_reaches_child
from tokenpace.cli import main
from tokenpace.prompts import corpus, datafiles
from tokenpace.prompts.tokens import count_tokens

URL = ("--base-url", "http://127.0.0.1:9/v1", "--model", "m")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def assert_refused(result: Result, *message: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert all(m in lines[0] for m in message), result.output


def test_a_config_file_is_read_no_further_than_a_mebibyte(tmp_path: Path) -> None:
    assert_refused(invoke("run", "--config", "/dev/zero", "--sim"), "/dev/zero", "over the 1048576-byte limit")
    sparse = tmp_path / "big.toml"
    with sparse.open("wb") as f:
        f.truncate(3 << 30)  # 3 GB of NUL bytes that take no disk
    assert_refused(invoke("workloads", "--config", str(sparse)), "over the 1048576-byte limit")


def test_a_workloads_input_tokens_are_bounded(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[workloads.huge]\ninput_tokens = 1_000_000_000\n")
    assert_refused(invoke("run", "--config", str(config), "--sim"), "input_tokens: must be at most 2000000")
    config.write_text("[workloads.burst]\nconcurrency = 100_000\n")
    assert_refused(invoke("run", "--config", str(config), "--sim"), "concurrency: must be from 1 to 4096")


def test_run_refuses_more_streams_than_4096() -> None:
    """The request count is no bound: a run's memory follows its concurrency (tests/load/test_memory.py)."""
    result = invoke("run", "--sim", "-c", "100000")
    assert result.exit_code == 2 and "--concurrency" in result.output and "4096" in result.output


def test_a_plans_requests_are_no_bound_on_memory(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(
        '[providers.demo]\nsimulate = { ttft_ms = 1 }\nrequests = 10_000_000\n[schedule]\nworkloads = ["100k"]\n'
    )
    assert invoke("workloads", "--config", str(config)).exit_code == 0


def test_a_corpus_is_bounded_in_bytes_and_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "texts"
    folder.mkdir()
    with (folder / "big.txt").open("wb") as f:
        f.truncate(2 << 30)
    assert_refused(invoke("run", "--sim", "--corpus", str(folder)), "over the 16777216-byte limit of a corpus")
    (folder / "big.txt").unlink()
    for i in range(4):
        (folder / f"{i}.md").write_text(f"text {i}")
    monkeypatch.setattr(corpus, "MAX_CORPUS_FILES", 3)
    with pytest.raises(Exception, match="more than 3 text files"):
        corpus.load_corpus(folder)


def test_a_long_text_is_tokenized_a_piece_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    text = " ".join(doc.text for doc in corpus.default_corpus()[:8])
    whole = corpus.token_starts(text)
    monkeypatch.setattr(corpus, "TOKENIZE_CHARS", 1000)
    pieces = corpus.token_starts(text)
    assert pieces[0] == 0 and pieces[-1] == len(text) and list(pieces) == sorted(pieces)
    assert abs(len(pieces) - len(whole)) <= len(text) // 1000 + 1  # a cut may split what was one token
    assert abs(len(pieces) - 1 - count_tokens(text)) <= len(text) // 1000 + 1


@pytest.mark.parametrize(
    "spec",
    ["prefix:prefix=150000,suffix=50000,per_group=1000,output=16", "multiturn:turns=64,input=1500,output=1500"],
)
def test_a_chain_is_bounded_to_4m_tokens(spec: str) -> None:
    assert_refused(invoke("bench", "--sim", "--data", spec, "-n", "4"), "over the 4000000")


def test_a_file_dataset_keeps_where_its_records_are_not_the_records(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    line = '{"prompt": "%d \U0001f600 ' + "word " * 2000 + '"}\n'  # one emoji: 4 bytes a character in a str
    path.write_text("".join(line % i for i in range(800)), encoding="utf-8")  # ~8 MB
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        dataset = datafiles.open_file("jsonl", path, 64)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 256 << 10, held  # the records' text as strings would be ~32 MB
    assert dataset.size == 800 and dataset.chain(801)[0].prompt.messages[0].text.startswith("1 \U0001f600 word")


def _started(path: Path, pid: int) -> int:
    """Wait until process ``pid`` waits in a read of the FIFO ``path``; the writing end, to close later.

    Not merely until it opened it: a signal that lands as its open() returns is only acted on at the next
    bytecode, and the read that follows would wait for bytes first (a race of microseconds, hit by a test).
    """
    for _ in range(600):
        try:
            writer = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:
            time.sleep(0.05)
    else:
        raise AssertionError("the command never opened its config")
    for _ in range(600):
        if "pipe_read" in Path(f"/proc/{pid}/wchan").read_text():
            return writer
        time.sleep(0.01)
    os.close(writer)
    raise AssertionError("the command never read its config")


@pytest.mark.parametrize("command", ["serve", "run", "bench"])
@pytest.mark.parametrize(
    ("sig", "code", "line"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "SIGTERM")]
)
def test_a_signal_while_preparing_stops_with_its_code_and_one_line(
    tmp_path: Path, command: str, sig: signal.Signals, code: int, line: str
) -> None:
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)  # the command reads its config and waits there: preparing, as long as the test likes
    args = [sys.executable, "-m", "tokenpace", command, "--config", str(fifo), "--db", str(tmp_path / "t.db")]
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_reaches_child
    )
    writer = _started(fifo, proc.pid)
    try:
        proc.send_signal(sig)
        _, errors = proc.communicate(timeout=60)
    finally:
        os.close(writer)
    assert proc.returncode == code, errors
    assert len(errors.strip().splitlines()) == 1 and line in errors and "Aborted" not in errors, errors


def test_sigterm_while_prompts_are_built_stops_within_a_prompt(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    args = [sys.executable, "-m", "tokenpace", "run", "--sim", "-w", "100k", "-n", "98", "-q", "--db", str(db)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(
        600
    ):  # the store is opened just before the prompts are built (~11 s of CPU for these, the first 64 MiB of them)
        if db.exists():
            break
        time.sleep(0.05)
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    # The rest of the build takes ~10 s on a quiet machine (the bug: it went on before stopping); stopping after
    # the prompt being built takes well under a second there, and a few seconds on a loaded one.
    _, errors = proc.communicate(timeout=8)
    assert proc.returncode == 143, errors
    assert len(errors.strip().splitlines()) == 1 and "stopped (SIGTERM)" in errors, errors
