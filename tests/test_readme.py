"""The README and docs/ are true to the code: config examples load, links land, commands run as written, paths exist.

The README leads with what a user does; internals live in docs/*.md, linked from it. Each check reads every one of
those files, so a fact moved from one to another stays checked.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tokenpace.config import endpoints
from tokenpace.schedule import cadence

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def _blocks(kind: str) -> list[tuple[str, str]]:
    found = [(page, lang, body) for page in PAGES for lang, body in FENCE.findall(page.read_text("utf-8"))]
    return [(_name(page), body) for page, lang, body in found if lang == kind]


TOML = _blocks("toml") + [(_name(f), f.read_text("utf-8")) for f in sorted((ROOT / "docs").glob("*.toml"))]


def test_the_readme_has_config_examples_and_links_to_docs() -> None:
    assert sum(1 for page, _ in TOML if page == "README.md") >= 3
    text = README.read_text("utf-8")
    assert all(f"]({_name(doc)}" in text for doc in DOCS), "every docs/*.md is linked from the README"


@pytest.mark.parametrize("block", [b for _, b in TOML], ids=[f"{page}:{i}" for i, (page, _) in enumerate(TOML)])
def test_each_config_example_loads_and_schedules(block: str, tmp_path: Path) -> None:
    (tmp_path / "texts").mkdir()  # the corpus an example names, with one document in it
    (tmp_path / "texts" / "notes.md").write_text("# Notes\n\n" + "A sentence of plain text. " * 400)
    path = tmp_path / "tokenpace.toml"
    path.write_text(block)
    cfg = endpoints.read_config(path)
    assert cadence.jobs(cfg, cfg.endpoints) or not cfg.endpoints


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", FENCE.sub("", page.read_text("utf-8")), re.M):
        base = slug(heading)
        n = sum(1 for a in found if a == base or re.fullmatch(rf"{re.escape(base)}-\d+", a))
        found.add(base if n == 0 else f"{base}-{n}")  # GitHub numbers repeated headings
    return found


def test_slug_is_githubs() -> None:
    assert slug("The leaderboard service: `tokenpace serve`") == "the-leaderboard-service-tokenpace-serve"
    assert slug("The leaderboard's reads") == "the-leaderboards-reads"


def _links() -> list[tuple[Path, str]]:
    return [
        (page, target)
        for page in PAGES
        for target in re.findall(r"\]\(([^)\s]+)\)", FENCE.sub("", page.read_text("utf-8")))
        if not re.match(r"[a-z]+:", target)  # http(s), mailto: not ours to check offline
    ]


@pytest.mark.parametrize(("page", "target"), _links(), ids=[f"{_name(p)}->{t}" for p, t in _links()])
def test_each_relative_link_and_anchor_resolves(page: Path, target: str) -> None:
    path, _, anchor = target.partition("#")
    landing = (page.parent / path).resolve() if path else page
    assert landing.exists(), f"{_name(page)}: {target}: no such file"
    if anchor:
        assert landing.suffix == ".md", f"{_name(page)}: {target}: an anchor into a file that is not markdown"
        assert anchor in anchors(landing), f"{_name(page)}: {target}: no such heading in {landing.name}"


def test_every_command_in_a_code_block_runs_through_uv() -> None:
    """`pip install uv` puts no `tokenpace` on PATH: a command written as bare `tokenpace` fails as typed."""
    bare = []
    for page in PAGES:
        for lang, body in FENCE.findall(page.read_text("utf-8")):
            lines = body.splitlines()
            if lang == "console":
                lines = [line[2:] for line in lines if line.startswith("$ ")]
            elif lang not in ("sh", "bash"):
                continue
            # `python3 -m pip install uv` is the set-up itself; anything else outside uv misses the environment
            bare += [f"{_name(page)}: {line}" for line in lines if re.match(r"(tokenpace|pytest|python)\s", line)]
    assert not bare


# Paths the text names in backquotes: repository paths, and modules named from inside src/tokenpace.
PACKAGES = "agent|board|cli|config|measure|schedule|serve|sim|store|web"


def test_every_path_named_exists() -> None:
    missing = []
    for page in PAGES:
        for name in re.findall(r"`([^`\s]+)`", page.read_text("utf-8")):
            if re.fullmatch(r"(src|tests|bench|docs|\.ci)/[\w./-]+", name):
                where = ROOT / name
            elif re.fullmatch(rf"({PACKAGES})/[\w/]+\.py", name):
                where = ROOT / "src" / "tokenpace" / name
            else:
                continue
            if not where.exists():
                missing.append(f"{_name(page)}: {name}")
    assert not missing


def test_the_readme_leads_with_what_a_user_does() -> None:
    headings = re.findall(r"^## (.+)$", FENCE.sub("", README.read_text("utf-8")), re.M)
    assert headings[:6] == [
        "Set-up: two commands",
        "The leaderboard service: `tokenpace serve`",
        "Measuring your endpoint",
        "One-shot runs: `tokenpace run`",
        "Load tests: `tokenpace bench`",
        "Regions: probe agents in many places",
    ]
    assert {"Limits", "Development"} <= set(headings)
