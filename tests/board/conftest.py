"""A store of the truth fixture's samples (tests/board/test_truth.py) and the app over it: the pages' models are read
from its Site, their JSON twins from its client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.board.test_truth import OTHER, write
from tests.store.test_windows import CEREBRAS, GROQ, NOW
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.store.database import open_store
from tokenpace.web import create_app
from tokenpace.web.render import jsonable
from tokenpace.web.site import Site

IDLE = Endpoint("idle", "llama", "http://idle.invalid/v1")  # configured, never measured


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[Site, TestClient]]:
    """The truth fixture's samples (tests/board/test_truth.py) seen at its fixed time, and a client of the same app."""
    with open_store(str(tmp_path / "pages.db")) as store:
        write(store)
        config = Config(endpoints=(GROQ, CEREBRAS, OTHER, IDLE), source="pages.toml")
        with TestClient(create_app(store, config, now=lambda: NOW)) as client:
            yield client.app.state.site, client  # type: ignore[attr-defined]


def as_json(value: Any) -> Any:
    """A value as a JSON twin serves it, parsed back."""
    return json.loads(json.dumps(jsonable(value)))
