"""Fixtures every store test shares."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL naming an empty database: a file in tmp_path, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        return str(tmp_path / "tokenpace.db")
    return str(request.getfixturevalue("pg_url"))
