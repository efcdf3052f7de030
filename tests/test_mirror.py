"""Tests mirror the package: each module has tests/<package>/test_<module>.py, or is listed here with the file
that tests it through its neighbours (a wire format through every protocol's test, a view through the app)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "tokenpace"

TESTED_THROUGH = {
    "clients/connect.py": "clients/test_tls.py",
    "clients/head.py": "clients/test_hostile_wire.py",
    "clients/http1.py": "clients/test_hostile_wire.py",
    "clients/pool.py": "clients/test_tls.py",
    "clients/wire.py": "clients/test_hostile_wire.py",
    "board/badges.py": "web/test_badges.py",
    "store/alerted.py": "serve/test_incidents.py",
    "board/route_export.py": "web/test_route.py",
    "board/route_read.py": "board/test_route.py",
    "board/coverage.py": "board/test_first_minutes.py",
    "board/query.py": "board/test_ranking.py",
    "board/rules.py": "board/test_first_minutes.py",
    "children.py": "sim/test_process.py",
    "load/sharing.py": "load/test_workers.py",
    "measure/bounds.py": "store/test_guards.py",
    "config/price_tables.py": "config/test_prices.py",
    "config/gateways.py": "config/test_protocols.py",
    "config/headers.py": "config/test_protocols.py",
    "config/tomlfile.py": "config/test_endpoints.py",
    "config/tables.py": "config/test_endpoints.py",
    "board/platforms.py": "config/test_offline.py",
    "sim/standin.py": "config/test_offline.py",
    "board/console.py": "cli/test_control_characters.py",
    "board/summary.py": "cli/test_run.py",
    "board/terminal.py": "cli/test_narrow.py",
    "board/warmcold.py": "web/test_promptcache.py",
    "board/outages.py": "web/test_incidents.py",
    "board/policies.py": "board/test_regret.py",
    "board/replay.py": "board/test_regret.py",
    "board/routing.py": "web/test_routing.py",
    "config/incidents.py": "board/test_incidents.py",
    "cli/benchlive.py": "cli/test_bench.py",
    "cli/benchoptions.py": "cli/test_bench.py",
    "cli/exits.py": "cli/test_input.py",
    "cli/measureoptions.py": "cli/test_cli.py",
    "cli/presets.py": "cli/test_narrow.py",
    "cli/runoptions.py": "cli/test_run.py",
    "cli/signals.py": "cli/test_run.py",
    "cli/stderr.py": "cli/test_input.py",
    "cli/store.py": "store/test_refusals.py",
    "cli/target.py": "cli/test_input.py",
    "cli/workloads.py": "cli/test_memory.py",
    "clients/anthropic.py": "clients/test_protocols.py",
    "clients/base.py": "clients/test_protocols.py",
    "clients/gemini.py": "clients/test_protocols.py",
    "clients/ollama.py": "clients/test_protocols.py",
    "clients/openai_completions.py": "clients/test_protocols.py",
    "clients/openai_responses.py": "clients/test_protocols.py",
    "clients/body.py": "clients/test_hostile_wire.py",
    "clients/transport.py": "clients/test_hostile_wire.py",
    "clients/ndjson.py": "clients/test_sse.py",
    "prompts/image.py": "prompts/test_prompt.py",
    "load/send.py": "load/test_engine.py",
    "measure/sample.py": "store/test_database.py",
    "sim/anthropic.py": "sim/test_protocols.py",
    "sim/gemini.py": "sim/test_protocols.py",
    "sim/ollama.py": "sim/test_protocols.py",
    "sim/openai_chat.py": "sim/test_protocols.py",
    "sim/openai_completions.py": "sim/test_protocols.py",
    "sim/openai_responses.py": "sim/test_protocols.py",
    "sim/stream.py": "sim/test_server.py",
    "sim/wire.py": "sim/test_protocols.py",
    "schedule/status.py": "schedule/test_sampler.py",
    "store/counting.py": "store/test_rollup.py",
    "store/export.py": "store/test_columns.py",
    "store/prefixturns.py": "web/test_promptcache.py",
    "store/recent.py": "web/test_app.py",
    "store/series.py": "store/test_windows.py",
    "store/tally.py": "store/test_rollup.py",
    "web/detail.py": "web/test_origins.py",
    "web/leaderboard.py": "web/test_app.py",
    "web/memo.py": "web/test_app.py",
    "web/methodology.py": "web/test_app.py",
    "web/ops.py": "web/test_app.py",
    "web/prom.py": "web/test_app.py",
    "web/render.py": "web/test_app.py",
    "web/site.py": "web/test_app.py",
}


def modules() -> list[str]:
    return sorted(
        p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py") if p.name not in ("__init__.py", "__main__.py")
    )


def own_test(module: str) -> Path:
    path = Path(module)
    return ROOT / "tests" / path.parent / f"test_{path.name}"


def test_every_module_has_its_test_file_or_names_the_one_that_tests_it() -> None:
    missing = [m for m in modules() if not own_test(m).is_file() and m not in TESTED_THROUGH]
    assert missing == []


def test_the_list_names_modules_and_test_files_that_exist_and_none_with_a_file_of_its_own() -> None:
    for module, test in TESTED_THROUGH.items():
        assert (SRC / module).is_file() and (ROOT / "tests" / test).is_file(), (module, test)
        assert not own_test(module).is_file(), f"{module} has its own test file now: take it off the list"
