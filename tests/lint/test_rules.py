"""rules.yaml: typed, validated against the taxonomy, and in step with the checks that emit the codes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from distdx.errors import DistdxError
from distdx.knowledge.taxonomy import taxonomy
from distdx.lint import lint_rules
from distdx.lint.rules import parse_rules

SRC = Path(__file__).resolve().parents[2] / "src" / "distdx" / "lint"
GOOD = """version: 1
rules:
  - code: LINT-DS-900
    severity: error
    applies_to: deepspeed
    fix_kind: none
    title: t
    why: w
    fix: f
    symptom: "3.2"
    root_cause: R3.1
    fix_pattern: F3
"""


def test_rules_load_with_taxonomy_nodes() -> None:
    rules = lint_rules()
    assert len(rules) >= 50
    tax = taxonomy()
    for rule in rules.values():
        assert tax.nodes[rule.symptom].dimension == "symptom"
        assert tax.nodes[rule.root_cause].dimension == "root_cause"
        assert tax.nodes[rule.fix_pattern].dimension == "fix_pattern"
        assert rule.references and rule.example, rule.code


def test_codes_in_the_checks_and_in_the_data_agree() -> None:
    emitted = set()
    for path in SRC.glob("*.py"):
        emitted |= set(re.findall(r'"(LINT-[A-Z]+-\d{3})"', path.read_text()))
    assert emitted == set(lint_rules())


@pytest.mark.parametrize("old,new,what", [
    ("LINT-DS-900", "DS-900", "code must look like"), ('symptom: "3.2"', "symptom: R3.1", "not a symptom ID"),
    ("severity: error", "severity: fatal", "severity must be"), ("    fix: f\n", "", "missing fix"), ("rules:", "rules: [", "does not parse"),
    ("fix_pattern: F3", "fix_pattern: F9", "not a fix_pattern ID"),
    ("fix_kind: none", "fix_kind: maybe", "fix_kind must be"), ("    fix_kind: none\n", "", "missing fix_kind"),
    ("fix_kind: none", "fix_kind: none\n    fixed_example: x", "fixed_example is for a rule with a fix")])
def test_broken_rules_are_refused(old: str, new: str, what: str) -> None:
    assert parse_rules(GOOD)["LINT-DS-900"].title == "t"
    with pytest.raises(DistdxError) as e:
        parse_rules(GOOD.replace(old, new))
    assert what in e.value.message


def test_duplicate_codes_are_refused() -> None:
    body = GOOD.split("rules:\n", 1)[1]
    with pytest.raises(DistdxError):
        parse_rules(GOOD + body)
