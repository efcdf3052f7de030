"""tokenpace: measure how fast LLM APIs really are.

The library API mirrors the data flow: an :class:`Endpoint` and a :class:`Workload` go into
:func:`measure`, which returns :class:`Sample` s (each with its :class:`Metrics` and raw :class:`Timeline`);
:func:`open_store` keeps them.
"""

__version__ = "0.1.0"

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
