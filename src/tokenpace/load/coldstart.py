"""Cold starts: how long an endpoint sat idle before each request, and whether that makes the request cold.

A scale-to-zero endpoint (a serverless GPU deployment, Ollama unloading a model after five idle minutes) answers
the first request after an idle spell late: it loads the model first. Samples taken on a sparse cadence would
mix those answers with warm ones, so each sample carries ``idle_s``, the seconds since the previous request to
the same address and model ended (any workload), and ``cold`` = idle_s >= the endpoint's ``cold_after``.

Idle is what this process knows: its own requests, and for an endpoint it has not sent to yet, what its store
says (``recall``, asked once per endpoint, so the knowledge survives a restart of serve and spans one-shot
runs); None when neither knows, e.g. the endpoint's first request ever, which is then not tagged cold. Idle is
0 while another request to the endpoint is in flight. Requests released together (a parallel workload's group,
the first C requests of a run at concurrency C) share the idle time measured just before their release: they
all met the same sleeping endpoint. Within one run, then, only the first request or release can be cold.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable

from tokenpace.config.endpoints import Endpoint
from tokenpace.config.settings import DEFAULT_COLD_AFTER_S

log = logging.getLogger(__name__)
Deployment = tuple[str, str]  # base_url, model: one deployment, whichever provider or plan names it
Reader = Callable[[Callable[[], object]], Awaitable[object]]  # runs a blocking read off the loop


def is_cold(idle_s: float | None, cold_after_s: float) -> bool:
    """cold = cold_after > 0 and idle >= cold_after; an unknown idle time is not cold."""
    return cold_after_s > 0 and idle_s is not None and idle_s >= cold_after_s


def default_cold_after(endpoint: Endpoint) -> float:
    """The threshold where no config sets one: config.settings.DEFAULT_COLD_AFTER_S."""
    return DEFAULT_COLD_AFTER_S


def _deployment(endpoint: Endpoint) -> Deployment:
    return (endpoint.base_url, endpoint.model)


class ColdStarts:
    """When each endpoint's last request ended, and what the next one's idle time and cold tag are.

    Whoever calls the engine (load/engine.py) keeps one for as long as its memory should last, as with
    Refusals: the sampler and a probe agent for their lifetime, ``tokenpace run`` for the command. Times are UTC
    epoch seconds from ``clock``; ``cold_after`` gives an endpoint's threshold (0: never cold); ``recall`` reads
    when the store's latest request to an endpoint ended (a blocking read: :meth:`recall` runs it off the loop).
    Its state is used on the event loop's thread only (``tag``, called from the decoder thread, reads none of
    it): the store's read is the one thing done elsewhere, and its answer is kept back on the loop, so no lock
    is taken per request.
    """

    def __init__(
        self,
        cold_after: Callable[[Endpoint], float] = default_cold_after,
        recall: Callable[[Endpoint], float | None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cold_after = cold_after
        self._recall = recall
        self._clock = clock
        self._ended: dict[Deployment, float] = {}
        self._busy: Counter[Deployment] = Counter()
        self._recalled: set[Deployment] = set()

    async def recall(self, endpoint: Endpoint, read: Reader = asyncio.to_thread) -> None:
        """Once per endpoint, ask the store when its latest request to it ended, and keep the later of that and
        what is known; ``read`` runs the blocking read off the loop. A store that cannot say now is asked again
        next time."""
        if self._recall is None or _deployment(endpoint) in self._recalled:
            return
        recall = self._recall
        try:
            ended_at = await read(lambda: recall(endpoint))
        except Exception as exc:  # a store away must not cost the measurement: the idle time is unknown now
            log.warning("idle time of %s unknown: %s", endpoint.name, " ".join(str(exc).split()))
            return
        self._recalled.add(_deployment(endpoint))
        if isinstance(ended_at, int | float):
            self.learn(endpoint, ended_at)

    def learn(self, endpoint: Endpoint, ended_at: float) -> None:
        """Told that the endpoint's last request ended at ``ended_at`` (epoch seconds): kept unless later known."""
        key = _deployment(endpoint)
        self._ended[key] = max(ended_at, self._ended.get(key, ended_at))

    def idle(self, endpoint: Endpoint) -> float | None:
        """Idle now = 0 while a request is in flight, else now - the last request's end; None if unknown."""
        key = _deployment(endpoint)
        if self._busy[key]:
            return 0.0
        ended = self._ended.get(key)
        return None if ended is None else max(0.0, self._clock() - ended)

    def tag(self, endpoint: Endpoint, idle_s: float | None) -> bool:
        """Whether a request sent after ``idle_s`` seconds of idle is cold, by the endpoint's threshold."""
        return is_cold(idle_s, self.cold_after(endpoint))

    def sent(self, endpoint: Endpoint) -> None:
        self._busy[_deployment(endpoint)] += 1

    def ended(self, endpoint: Endpoint) -> None:
        key = _deployment(endpoint)
        self._busy[key] -= 1
        self._ended[key] = self._clock()
