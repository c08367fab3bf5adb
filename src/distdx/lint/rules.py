"""Load ``rules.yaml`` (``version: 1``) into :class:`LintRule` records, validated against the taxonomy."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

import yaml

from distdx.errors import EXIT_INTERNAL, DistdxError
from distdx.knowledge.taxonomy import taxonomy
from distdx.lint.models import SEVERITIES, LintRule, Reference

CODE_RE = re.compile(r"^LINT-(SYN|DS|MEG|CAI|LAUNCH)-\d{3}$")
APPLIES_TO = ("any", "deepspeed", "megatron", "colossalai", "launch")
FIX_KINDS = ("safe", "unsafe", "none")
_REQUIRED = ("code", "severity", "title", "why", "fix", "symptom", "root_cause", "fix_pattern", "applies_to", "fix_kind")


def _fail(code: str, what: str) -> DistdxError:
    return DistdxError("DX-LINT-100", f"invalid lint rule {code or '?'} in rules.yaml: {what}",
                       why="lint rules are validated when loaded so a broken rule never goes unnoticed",
                       hint="fix src/distdx/lint/rules.yaml and run `pytest tests/lint`", exit_code=EXIT_INTERNAL)


def _parse(spec: dict) -> LintRule:
    code = str(spec.get("code", ""))
    missing = [k for k in _REQUIRED if not spec.get(k)]
    if missing:
        raise _fail(code, f"missing {', '.join(missing)}")
    if not CODE_RE.match(code):
        raise _fail(code, "code must look like LINT-DS-001 (SYN, DS, MEG, CAI or LAUNCH)")
    if spec["severity"] not in SEVERITIES:
        raise _fail(code, f"severity must be one of {SEVERITIES}")
    if spec["applies_to"] not in APPLIES_TO:
        raise _fail(code, f"applies_to must be one of {APPLIES_TO}")
    if spec["fix_kind"] not in FIX_KINDS:
        raise _fail(code, f"fix_kind must be one of {FIX_KINDS}")
    if spec.get("fixed_example") and spec["fix_kind"] == "none":
        raise _fail(code, "fixed_example is for a rule with a fix (fix_kind safe or unsafe)")
    tax = taxonomy()
    for key, dimension in (("symptom", "symptom"), ("root_cause", "root_cause"), ("fix_pattern", "fix_pattern")):
        node = str(spec[key])
        if node not in tax or tax.nodes[node].dimension != dimension:
            raise _fail(code, f"{key} {node!r} is not a {dimension} ID of the taxonomy")
    refs = tuple(Reference(url=str(r["url"]), title=str(r.get("title", ""))) for r in spec.get("references") or ())
    return LintRule(
        code=code, severity=spec["severity"], title=str(spec["title"]), why=" ".join(str(spec["why"]).split()),
        fix=" ".join(str(spec["fix"]).split()), symptom=str(spec["symptom"]), root_cause=str(spec["root_cause"]),
        fix_pattern=str(spec["fix_pattern"]), applies_to=spec["applies_to"], example=str(spec.get("example", "")),
        references=refs, fix_kind=spec["fix_kind"], fixed_example=str(spec.get("fixed_example", "")),
    )


def parse_rules(text: str) -> dict[str, LintRule]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise _fail("", f"YAML does not parse: {e}") from None
    if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("rules"), list):
        raise _fail("", "the file is a mapping with `version: 1` and a list `rules`")
    rules: dict[str, LintRule] = {}
    for spec in data["rules"]:
        rule = _parse(spec)
        if rule.code in rules:
            raise _fail(rule.code, "code defined twice")
        rules[rule.code] = rule
    return rules


@lru_cache(maxsize=1)
def lint_rules() -> dict[str, LintRule]:
    """All lint rules by code, in file order."""
    return parse_rules(resources.files("distdx.lint").joinpath("rules.yaml").read_text(encoding="utf-8"))
