"""The version, apart from the package root so that no module imports the root."""

__version__ = "0.1.0"
