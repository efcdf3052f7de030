"""The model page's model (board/model_page.py): every provider of a model, the very data its JSON twin serves."""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.board.conftest import as_json
from tokenpace.board.model_page import read_model_page
from tokenpace.config.windows import WINDOWS
from tokenpace.web.paths import model_path
from tokenpace.web.site import Site


def test_the_model_pools_every_provider_and_is_its_json_twin(site: tuple[Site, TestClient]) -> None:
    s, client = site
    m = read_model_page(s, "llama", WINDOWS["72h"], False, {})
    assert m is not None and m.workload == "1k" and m.facts["ids"] == ["llama"]
    assert [r.name for r in m.shown] == ["cerebras/llama", "groq:free/llama", "other/llama"]
    assert m.summary is not None and (m.summary.canary_passed, m.summary.canary_checked) == (9, 11)
    assert len(m.costs) == len(m.shown) == len(m.endpoints)
    assert {name for name, _ in m.named} == {"cerebras/llama", "groq:free/llama", "other/llama"}
    assert as_json(m.data()) == client.get(model_path("llama", "json")).json()


def test_a_model_nobody_serves_has_no_page(site: tuple[Site, TestClient]) -> None:
    s, _ = site
    assert read_model_page(s, "no-such-model", WINDOWS["72h"], False, {}) is None
