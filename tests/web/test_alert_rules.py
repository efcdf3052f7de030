"""docs/prometheus-alerts.yml parses as Prometheus rules and names only metrics and labels /metrics exports."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from tests.board.test_changes import CALM, at, fill, noisy
from tests.store.test_windows import GROQ, fail
from tokenpace.board.changes import CHANGE_METRICS
from tokenpace.config.endpoints import Config, Endpoint
from tokenpace.measure.failures import ErrorKind
from tokenpace.store.database import open_store
from tokenpace.web import create_app

DOWN = Endpoint("down", "llama", "http://down.invalid/v1")
RULES = Path(__file__).resolve().parents[2] / "docs" / "prometheus-alerts.yml"
SELECTOR = re.compile(r"\b(tokenpace_[a-z_]+)\s*(\{[^}]*\})?")
MATCHER = re.compile(r'(\w+)\s*=~?\s*"([^"]*)"')
GROUPING = re.compile(r"\bon\s*\(([^)]*)\)")


def rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULES.read_text())
    (group,) = doc["groups"]
    assert group["name"] == "tokenpace"
    return list(group["rules"])


def test_every_rule_is_an_alert_with_an_expression_labels_and_a_summary() -> None:
    found = rules()
    assert len(found) >= 4
    for rule in found:
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule
        assert re.fullmatch(r"Tokenpace[A-Za-z]+", rule["alert"]) and rule["expr"].strip()
        assert rule["labels"]["severity"] in ("warning", "critical") and rule["annotations"]["summary"]
        assert re.fullmatch(r"\d+[smh]", rule.get("for", "1m"))


def test_the_rules_name_only_what_metrics_exports(tmp_path: Path) -> None:
    rng = random.Random(4)
    with open_store(str(tmp_path / "t.db")) as store:
        fill(store, GROQ, noisy(rng, 5, 40) + noisy(rng, 10, 10))  # a speed drop: tokenpace_change_detected
        fill(store, CALM, noisy(rng, 5, 50))
        for i in range(5):  # five failures in a row: an open critical incident (tokenpace_incident_open)
            fail(store, DOWN, at(46 + i), ErrorKind.HTTP_ERROR)
        now = at(51)
        with TestClient(create_app(store, Config(endpoints=(GROQ, CALM, DOWN)), now=lambda: now)) as client:
            text = client.get("/metrics").text
    samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
    exported = {s.name: set(s.labels) for s in samples}
    values = {(s.name, k, v) for s in samples for k, v in s.labels.items()}
    values |= {("tokenpace_change_detected", "metric", m) for m in CHANGE_METRICS}  # every value the detector gives
    values |= {("tokenpace_change_detected", "direction", d) for d in ("faster", "slower", "better", "worse")}
    opened = [s for s in samples if s.name == "tokenpace_incident_open"]
    assert [(s.labels["provider"], s.labels["region"], s.labels["severity"]) for s in opened] == [
        ("down", "local", "critical")
    ]
    change = [s for s in samples if s.name == "tokenpace_change_detected"]
    assert [(s.labels["model"], s.labels["metric"], s.labels["direction"], s.value) for s in change] == [
        ("llama", "output_speed", "slower", 1.0)
    ]
    for rule in rules():
        expr = rule["expr"]
        named = SELECTOR.findall(expr)
        assert named, rule["alert"]
        for name, braces in named:
            assert name in exported, f"{rule['alert']}: {name} is not exported"
            for label, value in MATCHER.findall(braces):
                assert label in exported[name], f"{rule['alert']}: {name} has no label {label}"
                if label in ("metric", "direction", "outcome", "simulated"):
                    assert (name, label, value) in values or value == "true", f"{name}{{{label}={value!r}}}"
        for labels in GROUPING.findall(expr):
            for label in (x.strip() for x in labels.split(",")):
                assert all(label in exported[n] for n, _ in named), f"{rule['alert']}: on ({label})"
        for template in rule["annotations"].values():
            assert set(re.findall(r"\$labels\.(\w+)", template)) <= set.union(*(exported[n] for n, _ in named))
