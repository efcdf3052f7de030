"""The figure catalogue is the one place a figure's label, unit and definition are spelt.

A module that names a figure for a reader takes the name from measure/catalogue.py: a string written in the
code (a docstring aside) that is a figure's label, header or name, that label with a statistic or a unit
("TTFT (ms)", "TTFT P99", "ms TTFT"), or a column header that is a unit ("tok/s", "output tok/s"), fails here.
Prose that mentions a figure in a sentence is not a spelling of it: it is compared whole, not searched.

``python -m tests.measure.test_catalogue [SRC]`` prints each module that spells a figure, and how many.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tokenpace.measure import catalogue
from tokenpace.measure.catalogue import BY_KEY, FIGURES, ROLLUP_KEYS, UNIT_TEXT, Metric
from tokenpace.measure.metrics import Metrics
from tokenpace.store import rollup
from tokenpace.store.columns import SAMPLE_COLUMNS

PACKAGE = Path(catalogue.__file__).resolve().parent.parent
OWNER = "measure/catalogue.py"
STAT = r"(?:[pP]\d+(?:\.\d+)?|mean|median|max|min)"
# A unit a reader reads as a figure's: a rate or a per-token time ("ms" alone is every latency's, and a format's
# name in board/numbers.py; "%" is every share's).
RATE_UNITS = sorted({u for u in (*UNIT_TEXT, *UNIT_TEXT.values()) if "/" in u}, key=len, reverse=True)
# Metrics fields that are columns of a sample but no figure of their own: exported as they are, never labelled.
NOT_FIGURES = {
    "connect_ms": "the TCP and TLS part of TTFB, kept to tell a slow network from a slow server",
    "ttfat_ms": "time to the first answer token, raw material for thinking time",
    "gap_p50_ms": "the median gap, kept beside the p95 and max the summary shows",
    "chunk_count": "how many chunks the stream had: what ITL and output speed were computed over",
    "reasoning_tokens": "the thinking share of output tokens",
    "first_chunk_tokens": "the tokens output speed leaves out",
    "provider_input_tokens": "the provider's own usage, as it reported it",
    "provider_output_tokens": "the provider's own usage, as it reported it",
    "provider_cached_tokens": "the provider's own usage: what decides that a sample was cached",
}


def _normal(text: str) -> str:
    """Whitespace (a two-line header's newline too) as one space, no spaces at the ends, a minus sign as a
    hyphen."""
    return " ".join(text.replace("\u2212", "-").split())


def _names(m: Metric) -> set[str]:
    return {_normal(n) for n in (m.label, m.header, m.name, m.short) if n}


def _pattern(name: str) -> re.Pattern[str]:
    """A name alone, with statistics after it, with its unit after or before it; case kept for an abbreviation
    ("TTFT", "Goodput"), not for a name of words ("output speed", "end-to-end")."""
    units = "|".join(re.escape(u) for u in [*RATE_UNITS, catalogue.TOKENIZER, "ms", "%"])
    stats = rf"(?: {STAT})*"
    unit = rf"(?: \(?(?:{units})\)?)?"
    flags = re.IGNORECASE if re.search(r"[ -]", name) else 0
    return re.compile(rf"(?:(?:{units}) )?{re.escape(name)}{stats}{unit}{stats}", flags)


PATTERNS = [_pattern(n) for m in FIGURES for n in sorted(_names(m))]
UNIT_HEADER = re.compile(rf"(?:\w+ )?\(?(?:{'|'.join(re.escape(u) for u in RATE_UNITS)})\)?(?: \w+)?")


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes: a module's, class's and function's first statement when it is a string."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _values(tree: ast.AST) -> set[int]:
    """The ids of units that are values compared or looked up, not words shown: a dict's keys, a comparison's
    operands, a subscript's index (``Literal["tok/s"]``, ``NOISE_FLOOR["tok/s"]``)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            found |= {id(k) for k in node.keys if k is not None}
        elif isinstance(node, ast.Compare):
            found |= {id(n) for side in (node.left, *node.comparators) for n in ast.walk(side)}
        elif isinstance(node, ast.Subscript):
            found |= {id(n) for n in ast.walk(node.slice)}
    return found


def _parts(tree: ast.AST) -> set[int]:
    """The ids of f-strings' literal parts: a unit there follows a number ("{x} tok/s"), it heads no column."""
    return {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}


def spellings(path: Path) -> Iterator[tuple[int, str]]:
    """Each string of a module (an f-string's literal parts one by one) that spells a figure: (line, text)."""
    tree = ast.parse(path.read_text(), str(path))
    skip, values = _docstrings(tree), _values(tree) | _parts(tree)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in skip:
            continue
        text = _normal(node.value)
        named = any(p.fullmatch(text) for p in PATTERNS)
        if named or (id(node) not in values and UNIT_HEADER.fullmatch(text)):
            yield node.lineno, node.value


def offenders(package: Path = PACKAGE) -> dict[str, list[tuple[int, str]]]:
    """Every module but the catalogue that spells a figure, with its spellings."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        name = path.relative_to(package).as_posix()
        if name != OWNER and (hits := sorted(spellings(path))):
            found[name] = hits
    return found


def test_no_module_spells_a_figure_the_catalogue_names() -> None:
    found = offenders()
    said = [f"{name}:{line}: {text!r}" for name, hits in found.items() for line, text in hits]
    assert said == [], "take the label, unit or header from tokenpace.measure.catalogue"


@pytest.mark.parametrize(
    "text",
    [
        "TTFT", "TTFT (ms)", "Output speed (tok/s)", "output speed", "TTFT\nP99", "TPOT p50", "ms TTFT",
        "ms end-to-end", "Success", "success rate", "End-to-end", "E2E P50", "TTFT ", "tok/s", "output\ntok/s",
        "req/s", "goodput\nreq/s", "offered req/s", "SLO attainment", "Time to first byte", "TPOT ms",
    ],
)  # fmt: skip
def test_a_spelling_is_seen(tmp_path: Path, text: str) -> None:
    module = tmp_path / "m.py"
    module.write_text(f'"""A docstring naming TTFT (ms) is prose."""\nHEADERS = ({text!r}, "Samples")\n')
    assert list(spellings(module)) == [(2, text)]


def test_prose_keys_and_values_compared_are_not_spellings(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        '"""Output speed (tok/s)."""\n'
        'def f(x: float, unit: str) -> str:\n    """TTFT."""\n'
        '    floor = {"tok/s": 0.1}\n'
        '    if unit == "req/s":\n        return f"{x} {unit}"\n'
        '    return f"queueing counts in TTFT; {x:.0f} of them" + "ttft" + "speed"\n'
    )
    assert list(spellings(module)) == []


def test_an_f_strings_literal_part_is_seen(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('def f(x: float) -> str:\n    return f"TTFT p50 {x:.0f} ms"\n')
    assert list(spellings(module)) == [(2, "TTFT p50 ")]


def test_keys_are_unique_and_labels_say_one_figure() -> None:
    keys = [m.key for m in FIGURES]
    assert len(keys) == len(set(keys)) == len(BY_KEY)
    labels = [m.label for m in FIGURES]
    assert len(labels) == len(set(labels)), "two figures one label: a reader cannot tell them apart"


def test_every_rollup_key_is_a_sample_column_or_a_derived_figure_of_the_rollup() -> None:
    assert set(ROLLUP_KEYS) <= set(SAMPLE_COLUMNS) | set(rollup.DERIVED)
    assert set(rollup.DERIVED) <= set(ROLLUP_KEYS)
    assert sorted(rollup.METRICS) == sorted(ROLLUP_KEYS)  # the rollups keep what the catalogue says, no more


def test_every_reported_metrics_field_has_a_row() -> None:
    fields = {f.name for f in dataclasses.fields(Metrics)}
    assert sorted(fields - set(NOT_FIGURES) - set(BY_KEY)) == []
    assert sorted(set(NOT_FIGURES) - fields) == [], "a field listed here that Metrics no longer has"
    assert sorted(set(NOT_FIGURES) & set(BY_KEY)) == [], "a field with a row is a figure"


@pytest.mark.parametrize("m", FIGURES, ids=lambda m: m.key)
def test_each_definition_is_one_sentence_with_its_formula(m: Metric) -> None:
    name, formula = m.definition.split(" = ", 1)
    assert name and formula and m.name
    assert m.definition.endswith(".") and not re.search(r"[.;?!] [A-Z]", m.definition), m.definition
    assert m.definition == _normal(m.definition)
    assert m.unit in UNIT_TEXT and (m.better is None or m.better in ("higher", "lower"))


def test_headers_say_whose_tokens_and_what_the_label_leaves_out() -> None:
    assert BY_KEY["output_speed"].header == "Output speed (after the first chunk, o200k tok/s)"
    assert BY_KEY["tpot_ms"].header == "TPOT (ms per o200k token)"
    assert BY_KEY["output_tokens_per_s"].header == "Output throughput (over the whole run, o200k tok/s)"
    assert BY_KEY["ttft_ms"].header == "TTFT (ms)" and BY_KEY["success_rate"].header == "Success"


def test_names_in_a_sentence() -> None:
    assert [BY_KEY[k].noun for k in ("output_speed", "ttft_ms", "success_rate", "canary_pass_rate")] == [
        "output speed", "TTFT", "success rate", "canary pass rate",
    ]  # fmt: skip
    assert BY_KEY["e2e_ms"].narrow == "E2E" and BY_KEY["ttft_ms"].narrow == "TTFT"


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else PACKAGE
    counted = offenders(root)
    for module, hits in counted.items():
        print(f"{module}: {len(hits)}")
    print(f"{len(counted)} modules spell figure labels or units")
