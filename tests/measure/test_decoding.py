"""The decoder: at low concurrency nothing runs on its thread while a stream is in flight."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tokenpace.errors import ConfigError
from tokenpace.measure.decoding import DEFER_UP_TO, Decoder


def where(tag: str, log: list[tuple[str, str, int]], decoder: Decoder) -> str:
    """Records which thread ran it and how many streams were in flight then."""
    log.append((tag, threading.current_thread().name, decoder.in_flight))
    return tag


async def test_at_low_concurrency_decoding_waits_until_no_stream_is_in_flight() -> None:
    log: list[tuple[str, str, int]] = []
    decoder = Decoder(concurrency=1, idle_s=0.02)
    decoder.start()
    try:
        decoder.stream_started()
        decoder.stream_ended()
        first = decoder.submit(where, "a", log, decoder)
        decoder.stream_started()  # the next request of a closed loop starts at once: "a" must wait
        await asyncio.sleep(0.1)
        assert log == [] and decoder.held == 1 and not first.done()
        decoder.stream_ended()
        second = decoder.submit(where, "b", log, decoder)
        assert list(await asyncio.gather(first, second)) == ["a", "b"]  # run once idle for idle_s
    finally:
        decoder.close()
    assert [(tag, thread.startswith("tokenpace-decode"), n) for tag, thread, n in log] == [
        ("a", True, 0),
        ("b", True, 0),
    ]


async def test_drain_runs_what_is_held_at_once_and_waits_for_it() -> None:
    log: list[tuple[str, str, int]] = []
    decoder = Decoder(concurrency=1, idle_s=3600)
    decoder.start()
    try:
        decoder.stream_started()
        futures = [decoder.submit(where, str(i), log, decoder) for i in range(5)]
        assert decoder.held == 5
        await decoder.drain()  # the end of a run: held decoding runs whatever is in flight
        assert decoder.held == 0 and [f.result() for f in futures] == ["0", "1", "2", "3", "4"]
    finally:
        decoder.close()


async def test_above_the_threshold_decoding_runs_as_each_stream_ends() -> None:
    log: list[tuple[str, str, int]] = []
    decoder = Decoder(concurrency=DEFER_UP_TO + 1)
    decoder.start()
    try:
        assert not decoder.defers
        decoder.stream_started()
        assert await decoder.submit(where, "x", log, decoder) == "x"  # not held, though a stream is in flight
        assert log[0][2] == 1
    finally:
        decoder.close()


async def test_held_decodings_are_bounded() -> None:
    """A long run at one stream never reaches an idle moment: past hold_max, what is held runs anyway."""
    log: list[tuple[str, str, int]] = []
    decoder = Decoder(concurrency=1, idle_s=3600, hold_max=3)
    decoder.start()
    try:
        decoder.stream_started()
        futures = [decoder.submit(where, str(i), log, decoder) for i in range(3)]
        assert decoder.held == 0
        assert await asyncio.gather(*futures) == ["0", "1", "2"]
    finally:
        decoder.close()


async def test_a_failing_decoding_fails_its_own_future_only() -> None:
    def boom() -> str:
        raise ValueError("bad bytes")

    decoder = Decoder(concurrency=1, idle_s=3600)
    decoder.start()
    try:
        bad, good = decoder.submit(boom), decoder.submit(str, 7)
        await decoder.drain()
        with pytest.raises(ValueError, match="bad bytes"):
            bad.result()
        assert good.result() == "7"
    finally:
        decoder.close()


async def test_close_cancels_what_was_never_drained_and_run_now_needs_start() -> None:
    decoder = Decoder(concurrency=1, idle_s=3600)
    with pytest.raises(RuntimeError, match="start"):
        decoder.run_now(str, 1)
    decoder.start()
    assert await decoder.run_now(str, 1) == "1"  # at once, even at low concurrency
    held = decoder.submit(str, 2)
    decoder.close()
    assert held.cancelled()


async def test_a_cancelled_submission_is_skipped() -> None:
    log: list[tuple[str, str, int]] = []
    decoder = Decoder(concurrency=1, idle_s=3600)
    decoder.start()
    try:
        skipped = decoder.submit(where, "skipped", log, decoder)
        skipped.cancel()
        await decoder.drain()
        assert log == []
    finally:
        decoder.close()


@pytest.mark.parametrize(
    ("concurrency", "defer_up_to", "idle_s", "hold_max"),
    [(0, 4, 0.1, 10), (1, -1, 0.1, 10), (1, 4, -1, 10), (1, 4, 0.1, 0)],
)
def test_bad_settings_are_refused(concurrency: int, defer_up_to: int, idle_s: float, hold_max: int) -> None:
    with pytest.raises(ConfigError, match="decoder"):
        Decoder(concurrency, defer_up_to, idle_s, hold_max)
