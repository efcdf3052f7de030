"""The exceptions tokenpace raises, all in one tree.

A failed *request* is never an exception: it becomes a sample with an error kind (see ``failures``).
These exceptions are for mistakes that stop tokenpace from starting or saving work::

    TokenpaceError
    ├── ConfigError        a config file, endpoint reference or command-line value is wrong
    ├── StoreError         the database cannot be opened, migrated or written
    ├── TokenizerError     the o200k_base vocabulary cannot be loaded
    └── SimulatorError     the simulator was asked for something it cannot do

Each carries a one-line message that says what to fix; the CLI prints it as it is and exits with the class's
``exit_code``: 2 for a mistake in the command or a file (as click does for usage), 3 when tokenpace could not
do its work (database, vocabulary, simulator).
"""


class TokenpaceError(Exception):
    """Base class of every exception tokenpace raises on purpose."""

    exit_code = 3


class ConfigError(TokenpaceError):
    """A config file, endpoint reference or command-line value is wrong."""

    exit_code = 2


class StoreError(TokenpaceError):
    """The database cannot be opened, migrated or written."""


class TokenizerError(TokenpaceError):
    """The o200k_base vocabulary shipped in the package cannot be read, or is not tiktoken's published file."""


class SimulatorError(TokenpaceError):
    """The simulator was asked for something it cannot do."""
