"""The exceptions tokenpace raises, all in one tree.

A failed *request* is never an exception: it becomes a sample with an error kind (see ``failures``).
These exceptions are for mistakes that stop tokenpace from starting or saving work::

    TokenpaceError
    ├── ConfigError        a config file, endpoint reference or command-line value is wrong
    ├── BadRequest         a request's parameter (a page's query string or path) is wrong
    ├── StoreError         the database cannot be opened, migrated or written
    ├── TokenizerError     the o200k_base vocabulary cannot be loaded
    ├── WorkerError        the process rendering the board's pages stopped
    └── SimulatorError     the simulator was asked for something it cannot do

Each carries a one-line message that says what to fix; the CLI prints it as it is and exits with the class's
``exit_code``: 2 for a mistake in the command or a file (as click does for usage), 3 when tokenpace could not
do its work (database, vocabulary, simulator). The web answers BadRequest with a 400, StoreError and
WorkerError with a 503;
a ConfigError there is tokenpace's own fault (the config was checked at start), so it is a 500.
"""


class TokenpaceError(Exception):
    """Base class of every exception tokenpace raises on purpose."""

    exit_code = 3


class ConfigError(TokenpaceError):
    """A config file, endpoint reference or command-line value is wrong."""

    exit_code = 2


class BadRequest(TokenpaceError):
    """A request's parameter is wrong: a page's query string or path, or ``tokenpace leaderboard``'s options,
    which are the same parameters (the board reads both with one parser)."""

    exit_code = 2


class StoreError(TokenpaceError):
    """The database cannot be opened, migrated or written."""


class TokenizerError(TokenpaceError):
    """The o200k_base vocabulary shipped in the package cannot be read, or is not tiktoken's published file."""


class WorkerError(TokenpaceError):
    """The process rendering the board's pages stopped (web/renderer.py starts another)."""


class SimulatorError(TokenpaceError):
    """The simulator was asked for something it cannot do."""
