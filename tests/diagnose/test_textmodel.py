"""Rules as text-model documents: stable rules are, preview rules are not (until promoted)."""

from distdx.diagnose.textmodel import RULE_DOC_PREFIX, rule_documents
from distdx.knowledge.rules import load_rules, parse_rule_file

RULES = parse_rule_file("t.yaml", """
version: 1
rules:
  - code: DX-TEST-001
    title: A stable rule
    patterns: ['stable message']
    symptoms: {"4.2": 1.0}
    root_causes: {R4.5: 1.0}
    fix_patterns: {F5: 1.0}
    why: Known from real issues.
    fix: [Do this.]
  - code: DX-TEST-002
    title: A preview rule
    status: preview
    patterns: ['preview message']
    symptoms: {"3.2": 1.0}
    root_causes: {R3.1: 1.0}
    fix_patterns: {F3: 1.0}
    why: Mined from a source file.
    fix: [Do that.]
""")


def test_preview_rules_are_not_text_documents():
    docs = rule_documents(RULES)
    assert [d.id for d in docs] == [RULE_DOC_PREFIX + "DX-TEST-001"]
    assert docs[0].labels["symptom"] == "4.2" and docs[0].labels["fix_pattern"] == "unknown"


def test_the_engine_still_fires_preview_rules():
    from distdx.diagnose.engine import diagnose_text

    preview = [r for r in load_rules() if r.status == "preview"]
    assert preview, "the knowledge base ships preview rules"
    rule = preview[0]
    diagnosis = diagnose_text(rule.fixtures_match[0])
    assert rule.code in {e.rule for e in diagnosis.evidence}
