"""The README's config examples are real: each one loads, and the service could schedule it as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tokenpace.config import endpoints
from tokenpace.schedule import sampler

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```toml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_the_readme_has_config_examples() -> None:
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_each_config_example_loads_and_schedules(block: str, tmp_path: Path) -> None:
    (tmp_path / "texts").mkdir()  # the corpus an example names, with one document in it
    (tmp_path / "texts" / "notes.md").write_text("# Notes\n\n" + "A sentence of plain text. " * 400)
    path = tmp_path / "tokenpace.toml"
    path.write_text(block)
    cfg = endpoints.load(path)
    assert sampler.jobs(cfg, cfg.endpoints) or not cfg.endpoints
