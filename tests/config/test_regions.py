"""The [regions] table: names that can be queues and URL parameters, labels, one line per mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokenpace.config.endpoints import read_config
from tokenpace.config.regions import MAX_REGIONS, Region
from tokenpace.errors import ConfigError

PROVIDER = "[providers.demo]\nsimulate = { ttft_ms = 1 }\n"


def _load(tmp_path: Path, text: str) -> tuple[Region, ...]:
    path = tmp_path / "tokenpace.toml"
    path.write_text(PROVIDER + text)
    return read_config(path).regions


def test_regions_in_the_files_order_with_labels(tmp_path: Path) -> None:
    found = _load(tmp_path, '[regions.us-east]\n[regions.eu-west]\nlabel = "Frankfurt"\n')
    assert found == (Region("us-east"), Region("eu-west", "Frankfurt"))
    assert [r.shown for r in found] == ["us-east", "eu-west (Frankfurt)"]


def test_no_table_means_no_regions(tmp_path: Path) -> None:
    assert _load(tmp_path, "") == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[regions.EU]\n", r"regions: .*region 'EU': use lower-case letters"),
        ('[regions."eu west"]\n', r"region 'eu west': use lower-case"),
        ('[regions."-eu"]\n', r"region '-eu'"),
        (f"[regions.{'a' * 41}]\n", r"at most 40"),
        ("[regions.eu]\ncolour = 1\n", r"regions\.eu\.colour"),
        ('[regions.eu]\nlabel = "a\\u0007b"\n', r"regions\.eu\.label"),
        (f'[regions.eu]\nlabel = "{"x" * 61}"\n', r"regions\.eu\.label"),
        ("regions = 3\n", r"regions"),
        ("[regions.all]\n", r"region 'all': all and local name views of the board"),
        ("[regions.local]\n", r"region 'local': all and local"),
        ("".join(f"[regions.r{i}]\n" for i in range(MAX_REGIONS + 1)), r"regions"),
    ],
)
def test_mistakes_are_one_line_naming_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        _load(tmp_path, text)
    assert "\n" not in str(caught.value)
