"""Load ``rules.yaml`` (``version: 1``) into :class:`LintRule` records, validated against the taxonomy."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from distdx.errors import DistdxError
from distdx.knowledge.catalogue import (
    catalogue_error,
    entries,
    fix_steps,
    lifecycle,
    references,
    severity_of,
    taxonomy_target,
    words,
)
from distdx.lint.models import LintRule

CODE_RE = re.compile(r"^LINT-(SYN|DS|MEG|CAI|LAUNCH|ACC)-\d{3}$")
APPLIES_TO = ("any", "deepspeed", "megatron", "colossalai", "launch", "accelerate")
FIX_KINDS = ("safe", "unsafe", "none")
_REQUIRED = ("code", "severity", "title", "why", "fix", "symptom", "root_cause", "fix_pattern", "applies_to", "fix_kind")


DATA_FILE = "src/distdx/lint/rules.yaml"


def _fail(code: str, what: str) -> DistdxError:
    return catalogue_error("DX-LINT-100", DATA_FILE, code, what)


def _parse(spec: dict) -> LintRule:
    code = str(spec.get("code", ""))
    missing = [k for k in _REQUIRED if not spec.get(k)]
    if missing:
        raise _fail(code, f"missing {', '.join(missing)}")
    if not CODE_RE.match(code):
        raise _fail(code, "code must look like LINT-DS-001 (SYN, DS, MEG, CAI, LAUNCH or ACC)")
    severity_of(spec["severity"], code="DX-LINT-100", data_file=DATA_FILE, entry=code)
    if spec["applies_to"] not in APPLIES_TO:
        raise _fail(code, f"applies_to must be one of {APPLIES_TO}")
    if spec["fix_kind"] not in FIX_KINDS:
        raise _fail(code, f"fix_kind must be one of {FIX_KINDS}")
    if spec.get("fixed_example") and spec["fix_kind"] == "none":
        raise _fail(code, "fixed_example is for a rule with a fix (fix_kind safe or unsafe)")
    status, since = lifecycle(spec, code="DX-LINT-100", data_file=DATA_FILE, entry=code)
    targets = {key: taxonomy_target(spec[key], key, code="DX-LINT-100", data_file=DATA_FILE, entry=code, key=key)
               for key in ("symptom", "root_cause", "fix_pattern")}
    return LintRule(
        code=code, severity=spec["severity"], title=str(spec["title"]), why=words(spec["why"]),
        fix=" ".join(words(s) for s in fix_steps(spec["fix"])), symptom=targets["symptom"], root_cause=targets["root_cause"],
        fix_pattern=targets["fix_pattern"], applies_to=spec["applies_to"], example=str(spec.get("example", "")),
        references=references(spec.get("references"), code="DX-LINT-100", data_file=DATA_FILE, entry=code),
        fix_kind=spec["fix_kind"], fixed_example=str(spec.get("fixed_example", "")),
        status=status, since=since,
    )


def parse_rules(text: str) -> dict[str, LintRule]:
    rules: dict[str, LintRule] = {}
    for spec in entries(text, "rules", code="DX-LINT-100", data_file=DATA_FILE):
        rule = _parse(spec if isinstance(spec, dict) else {})
        if rule.code in rules:
            raise _fail(rule.code, "code defined twice")
        rules[rule.code] = rule
    return rules


@lru_cache(maxsize=1)
def lint_rules() -> dict[str, LintRule]:
    """All lint rules by code, in file order."""
    return parse_rules(resources.files("distdx.lint").joinpath("rules.yaml").read_text(encoding="utf-8"))
