"""One version: the package's, the installed distribution's and pyproject's agree."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

from tokenpace.version import __version__

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_one_version_everywhere() -> None:
    declared = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["version"]
    assert __version__ == declared == importlib.metadata.version("tokenpace")
