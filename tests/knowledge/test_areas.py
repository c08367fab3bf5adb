"""The areas map (knowledge/areas.yaml) is closed: every rule's area is in it and lives in the file it
names, and every area in it has rules."""

import json
import subprocess
import sys

import pytest

from distdx.errors import DistdxError
from distdx.knowledge import rules as rules_module
from distdx.knowledge.rules import load_rules, rule_areas


def test_every_rule_area_is_mapped_to_the_file_that_holds_it():
    areas = rule_areas()
    wrong = [(r.code, r.source, areas[r.code.split("-")[1]].file if r.code.split("-")[1] in areas else None)
             for r in load_rules() if r.code.split("-")[1] not in areas or areas[r.code.split("-")[1]].file != r.source]
    assert wrong == [], "add the area to areas.yaml, or move the rule to the file its area names"


def test_every_mapped_area_has_rules():
    used = {r.code.split("-")[1] for r in load_rules()}
    assert sorted(set(rule_areas()) - used) == []


def test_a_bad_areas_file_is_refused(monkeypatch):
    monkeypatch.setattr(rules_module, "load_yaml", lambda text: {"version": 1, "areas": {"NCCL": {
        "subject": "x", "file": "nowhere.yaml", "provenance": "source"}}})
    rules_module.rule_areas.cache_clear()
    try:
        with pytest.raises(DistdxError, match="not a rule file"):
            rule_areas()
    finally:
        rules_module.rule_areas.cache_clear()


def test_cli_lists_the_areas_with_their_rule_counts():
    out = subprocess.run([sys.executable, "-m", "distdx", "rules", "areas", "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    areas = {a["area"]: a for a in json.loads(out)["areas"]}
    assert areas["SERVE"]["file"] == "serving.yaml" and areas["SERVE"]["rules"] == sum(
        1 for r in load_rules() if r.code.startswith("DX-SERVE-"))
