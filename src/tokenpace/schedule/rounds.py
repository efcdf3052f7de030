"""One prompt per round: in one round, every endpoint of a model is sent the same documents and task.

Artificial Analysis runs "a unique prompt generated at the time of the test" on all endpoints. With a prompt per
endpoint, a provider that drew a document that takes longer to answer, or a task that draws a longer answer, looks
slower for it: the spread between providers of one model holds the prompts' spread as well as theirs. So the
schedule (``[schedule] one_prompt_per_round``, on by default) gives the runs of one round one set of prompts per
canonical model (config/models.py) and workload: request i of each run is built from round seed + i, its nonce
line apart, which each request draws from its run's own seed (load/chains.py). The nonce comes first, so no two
requests share a cacheable prefix, and the canary line the answer must begin with follows it: two resellers that
share a cache cannot answer one from the other. ``tokenpace run`` and ``bench`` keep a prompt per endpoint.

Runs are not launched together (each job keeps its own cadence and jitter, cadence.py): a round is a window of
the clock as long as the shortest interval among the model's jobs of that workload (``Job.round_s``, set by
cadence.jobs), and every run launched within one shares its prompts. The round seed hashes a salt drawn when the
sampler starts, so the prompts cannot be known ahead; it is set on the job as it is launched (``Job.round_seed``)
and travels with a region's order (store/queue.py), so an agent builds the same prompts.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import replace

from tokenpace.schedule.cadence import Job
from tokenpace.store.queue import ROUND_SEED_BITS


def new_salt() -> int:
    """A sampler's salt: 64 bits from the system's randomness."""
    return random.SystemRandom().getrandbits(64)


def round_index(t: float, round_s: float) -> int:
    """The round holding t: k = floor(t / round_s)."""
    return math.floor(t / round_s)


def round_seed(salt: int, model: str, workload: str, k: int) -> int:
    """Seed = the first 31 bits of blake2b(salt, model, workload, k): one per canonical model, workload and round."""
    digest = hashlib.blake2b("\0".join(map(repr, (salt, model, workload, k))).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> (64 - ROUND_SEED_BITS)


def seeded(job: Job, t: float, salt: int) -> Job:
    """The job as launched at ``t``: with its round's seed where its model's endpoints share prompts (round_s > 0)."""
    if job.round_s <= 0:
        return job
    return replace(job, round_seed=round_seed(salt, job.model, job.workload.name, round_index(t, job.round_s)))
