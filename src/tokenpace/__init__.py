"""tokenpace: measure how fast LLM APIs really are.

The library API mirrors the data flow: an :class:`Endpoint` and a :class:`Workload` go into
:func:`run_workload`, which returns a :class:`RunResult` of :class:`Sample` s (each with its :class:`Metrics` and
raw :class:`Timeline`); :func:`open_store` keeps them.
"""

import importlib
import typing

from tokenpace.version import __version__

if typing.TYPE_CHECKING:
    from tokenpace.clients.transport import Timeouts
    from tokenpace.config.endpoints import Endpoint
    from tokenpace.config.workloads import Workload
    from tokenpace.errors import TokenpaceError
    from tokenpace.load.engine import RunOptions, RunResult, run_workload
    from tokenpace.load.send import Refusals
    from tokenpace.measure.failures import ErrorKind, Failure
    from tokenpace.measure.metrics import Metrics
    from tokenpace.measure.sample import Sample
    from tokenpace.measure.timing import Timeline
    from tokenpace.store.database import Store, open_store

# Loaded on first use (PEP 562): `tokenpace --help` imports this package, and must not pay for aiohttp,
# tiktoken or the database drivers that these names bring.
_HOME = {
    "Timeouts": "tokenpace.clients.transport",
    "Endpoint": "tokenpace.config.endpoints",
    "TokenpaceError": "tokenpace.errors",
    "ErrorKind": "tokenpace.measure.failures",
    "Failure": "tokenpace.measure.failures",
    "Metrics": "tokenpace.measure.metrics",
    "RunOptions": "tokenpace.load.engine",
    "Refusals": "tokenpace.load.send",
    "RunResult": "tokenpace.load.engine",
    "run_workload": "tokenpace.load.engine",
    "Sample": "tokenpace.measure.sample",
    "Store": "tokenpace.store.database",
    "open_store": "tokenpace.store.database",
    "Timeline": "tokenpace.measure.timing",
    "Workload": "tokenpace.config.workloads",
}


def __getattr__(name: str) -> typing.Any:
    if name not in _HOME:
        raise AttributeError(f"module 'tokenpace' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value  # once found, an ordinary attribute
    return value


__all__ = [
    "Endpoint",
    "ErrorKind",
    "Failure",
    "Metrics",
    "Refusals",
    "RunOptions",
    "RunResult",
    "Sample",
    "Store",
    "Timeline",
    "Timeouts",
    "TokenpaceError",
    "Workload",
    "__version__",
    "open_store",
    "run_workload",
]
