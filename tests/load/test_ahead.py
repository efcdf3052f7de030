"""Chains built ahead: within their bytes, dropped once handed out, never past the last one a run can take."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest

from tokenpace.clients.base import HttpRequest
from tokenpace.config.traffic import Load
from tokenpace.load import ahead
from tokenpace.prompts.synthetic import Lengths, Synthetic


def test_load_builds_ahead_within_its_bytes_and_drops_what_it_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ahead, "AHEAD_BYTES", 1)  # any chain is over it: one at a time
    dataset = Synthetic(Lengths(64), Lengths(16), seed=1)

    async def go() -> tuple[int, int, int, int]:
        with ThreadPoolExecutor(1) as pool:
            chains = ahead.ChainsAhead(dataset, 0, lambda r: _http(r.prompt.messages[0].text), pool)
            await chains.fill(100, needed=1)
            built = chains.count
            first = await chains.get(0, ahead=100)
            await asyncio.sleep(0)
            assert first and chains.first_request is not None
            await chains.get(5, ahead=0)  # late: built now, whatever is held
            return built, chains.count, len(chains.ready), chains.held

    built, count, ready, held = asyncio.run(go())
    assert built == 1 and count >= 6 and ready == count - 2 and held >= 0


def _http(text: str) -> HttpRequest:
    return HttpRequest("http://x", {}, text.encode())


def test_no_chain_is_built_past_the_last_one_the_release_can_take() -> None:
    """A run of 3 requests needs 3 chains: building more would cost CPU beside the streams being timed."""
    dataset = Synthetic(Lengths(64), Lengths(16), seed=1)

    async def go() -> tuple[int, int]:
        with ThreadPoolExecutor(1) as pool:
            chains = ahead.ChainsAhead(dataset, 0, lambda r: _http(r.prompt.messages[0].text), pool, last=3)
            await chains.fill(100, needed=1)
            built = chains.count
            for i in range(3):
                await chains.get(i, ahead=100)
                await asyncio.sleep(0.05)  # any build ahead it started would be done
            return built, chains.count

    assert asyncio.run(go()) == (3, 3)
    assert ahead.chains_ahead(Load(requests=3, warmup=1), 4) == 4
