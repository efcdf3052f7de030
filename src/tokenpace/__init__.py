"""tokenpace: measure how fast LLM APIs really are.

The library API mirrors the data flow: an :class:`Endpoint` and a :class:`Workload` go into
:func:`measure`, which returns :class:`Sample` s (each with its :class:`Metrics` and raw :class:`Timeline`);
:func:`open_store` keeps them.
"""

__version__ = "0.1.0"

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tokenpace.clients.transport import Timeouts
    from tokenpace.config import Endpoint
    from tokenpace.errors import TokenpaceError
    from tokenpace.failures import ErrorKind, Failure
    from tokenpace.metrics import Metrics
    from tokenpace.run import Plan, RunResult, measure
    from tokenpace.sample import Sample
    from tokenpace.store import Store, open_store
    from tokenpace.timing import Timeline
    from tokenpace.workload import Workload

# Loaded on first use (PEP 562): `tokenpace --help` imports this package, and must not pay for aiohttp,
# tiktoken or the database drivers that these names bring.
_HOME = {
    "Timeouts": "tokenpace.clients.transport",
    "Endpoint": "tokenpace.config",
    "TokenpaceError": "tokenpace.errors",
    "ErrorKind": "tokenpace.failures",
    "Failure": "tokenpace.failures",
    "Metrics": "tokenpace.metrics",
    "Plan": "tokenpace.run",
    "RunResult": "tokenpace.run",
    "measure": "tokenpace.run",
    "Sample": "tokenpace.sample",
    "Store": "tokenpace.store",
    "open_store": "tokenpace.store",
    "Timeline": "tokenpace.timing",
    "Workload": "tokenpace.workload",
}


def __getattr__(name: str) -> Any:
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
    "Plan",
    "RunResult",
    "Sample",
    "Store",
    "Timeline",
    "Timeouts",
    "TokenpaceError",
    "Workload",
    "__version__",
    "measure",
    "open_store",
]
