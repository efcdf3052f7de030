"""A dataset's chains with their request bytes, built ahead on the decoder thread, within a bound of bytes.

Building a prompt costs CPU (a 100k prompt about a second) that would otherwise run beside the streams being
timed, and on the loop would stall every clock: so chains are built before the first release where the run is
small enough (PREBUILT), the rest just ahead of their release, off the loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from tokenpace.clients.base import HttpRequest
from tokenpace.config.traffic import Load
from tokenpace.prompts.chains import Dataset, Request

BUILD_BATCH = 16  # chains built per turn of the decoder thread: short turns, so decoding never waits long
AHEAD_BYTES = 64 << 20  # what chains built ahead may hold; at least one is built whatever its size
PREBUILT = 5_000  # chains built before a test with a request count starts: the rest are built as it goes

Built = tuple[tuple[Request, HttpRequest], ...]


def _weight(chain: Built) -> int:
    """About the bytes a built chain holds: each request's body, and its prompt's text beside it."""
    return sum(2 * len(http.body) for _, http in chain)


class ChainsAhead:
    """The dataset's chains with their request bytes, built ahead on the decoder thread, within ``ahead_bytes``
    (AHEAD_BYTES unless the caller bounded the run's memory itself).

    A chain is handed out once and then dropped: what is held is what is built and not yet sent, never the
    test's every prompt (a million requests, or chains of thousands of long prompts, would not fit).
    """

    def __init__(
        self,
        dataset: Dataset,
        first: int,
        build: Callable[[Request], HttpRequest],
        pool: ThreadPoolExecutor,
        last: int | None = None,
        ahead_bytes: int | None = None,
    ) -> None:
        self.dataset, self.first, self.build, self.pool = dataset, first, build, pool
        self.last = last  # the most chains the release can take (a request count's); None: no end
        self.ahead_bytes = AHEAD_BYTES if ahead_bytes is None else ahead_bytes  # what built chains may hold
        self.ready: dict[int, Built] = {}
        self.count = 0  # chains built so far: the next one to build is this one
        self.held = 0  # bytes of the chains in ``ready``
        self.first_request: HttpRequest | None = None  # the warm-up's headers
        self.stop = threading.Event()  # set when the test stops: a batch being built ends after its chain
        self._filling: asyncio.Future[None] | None = None
        self._background: set[asyncio.Future[None]] = set()  # referenced until done, so never collected mid-way

    def _batch(self, start: int, n: int) -> list[Built]:
        out: list[Built] = []
        weight = 0
        for i in range(self.first + start, self.first + start + n):
            if self.stop.is_set() or (out and self.held + weight >= self.ahead_bytes):
                break
            out.append(tuple((r, self.build(r)) for r in self.dataset.chain(i)))
            weight += _weight(out[-1])
        return out

    async def fill(self, upto: int, needed: int = 0) -> None:
        """Build chains until ``upto`` are built, or ``ahead_bytes`` are held once the first ``needed`` are; never
        more than ``last``, so no prompt is built beside the streams that no request will send."""
        if self.last is not None:
            upto = min(upto, self.last)
        while self.count < upto and (self.count < needed or self.held < self.ahead_bytes):
            if self._filling is None:
                batch = min(BUILD_BATCH, upto - self.count)
                self._filling = asyncio.ensure_future(self._extend(batch))
            await asyncio.shield(self._filling)

    async def _extend(self, n: int) -> None:
        try:
            more = await asyncio.get_running_loop().run_in_executor(self.pool, self._batch, self.count, n)
            for chain in more:
                self.ready[self.count] = chain
                self.held += _weight(chain)
                self.count += 1
                if self.first_request is None and chain:
                    self.first_request = chain[0][1]
        finally:
            self._filling = None

    async def get(self, i: int, ahead: int) -> Built:
        """Chain ``i``, building it now if it is not ready (late, and the wait shows it); then builds ahead."""
        if i >= self.count:
            await self.fill(i + 1, needed=i + 1)
        chain = self.ready.pop(i)
        self.held -= _weight(chain)
        if self.count < min(i + 1 + ahead, self.last or 1 << 62) and self._filling is None:
            task = asyncio.ensure_future(self.fill(i + 1 + ahead))
            self._background.add(task)
            task.add_done_callback(_settled)
            task.add_done_callback(self._background.discard)
        return chain


def _settled(task: asyncio.Future[None]) -> None:
    """Retrieve a background build's failure: the request that needs the chain meets it and reports it."""
    if not task.cancelled():
        task.exception()


def chains_ahead(load: Load, last: int | None) -> int:
    """Chains to build before the first release and keep ready after (``last``: the most the release can take).

    With a request count, all of them (up to PREBUILT): building a prompt costs CPU that would otherwise run
    beside the streams being timed. With a duration only, about 60 s of an open loop, or 8 per stream. Either
    way no more than AHEAD_BYTES of them (ChainsAhead).
    """
    if last is not None:
        return min(last, PREBUILT)
    return max(round(load.rate * 60), 64) if load.rate is not None else max(8 * (load.concurrency or 1), 64)
