"""The endpoint page's model (board/endpoint_page.py): read below the web, and the very data its JSON twin serves."""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.board.conftest import IDLE, as_json
from tests.store.test_windows import CEREBRAS, GROQ
from tokenpace.board.endpoint_page import read_endpoint_page
from tokenpace.config.windows import WINDOWS
from tokenpace.web.paths import badge_path, endpoint_path
from tokenpace.web.site import Site


def test_the_model_holds_the_pages_values_and_is_its_json_twin(site: tuple[Site, TestClient]) -> None:
    s, client = site
    m = read_endpoint_page(s, GROQ.provider, GROQ.plan, GROQ.model, WINDOWS["72h"], False, {})
    assert m is not None and m.facts["name"] == "groq:free/llama" and m.workloads == ["1k"]
    assert len(m.points) == 9 and [p.started_at for p in m.recent] == sorted(p.started_at for p in m.points)[::-1]
    assert m.canary == (1.0, 7, 7)  # the cold starts had no canary asked
    assert sum(h.samples for h in m.uptime) == 9 and m.heat_workload == "1k" and m.bursts == {}
    served = client.get(endpoint_path(GROQ.provider, GROQ.plan, GROQ.model, "json")).json()
    # the badges' URLs are the web's to spell (web/paths.py), added beside the model's data
    badges = {k: badge_path(GROQ.provider, GROQ.plan, GROQ.model, k) for k in ("speed", "ttft", "uptime")}
    assert served.pop("badges") == badges
    assert as_json(m.data()) == served


def test_an_unknown_endpoint_has_no_page_and_a_configured_one_has_an_empty_one(site: tuple[Site, TestClient]) -> None:
    s, _ = site
    assert read_endpoint_page(s, "nobody", "", "llama", WINDOWS["72h"], False, {}) is None
    idle = read_endpoint_page(s, IDLE.provider, IDLE.plan, IDLE.model, WINDOWS["72h"], False, {})
    assert idle is not None and idle.shown == [] and idle.points == [] and idle.canary == (None, 0, 0)
    assert idle.heat is None and idle.data()["rows"] == []


def test_a_workload_asked_for_narrows_the_rows_and_the_series(site: tuple[Site, TestClient]) -> None:
    s, _ = site
    m = read_endpoint_page(
        s, CEREBRAS.provider, CEREBRAS.plan, CEREBRAS.model, WINDOWS["72h"], False, {"workload": "x"}
    )
    assert m is not None and m.workload == "x" and m.shown == [] and m.workloads == ["1k"]
    assert m.canary == (None, 0, 0)
