"""docs/lint.md is generated from rules.yaml and must be current; each rule's page has the fixed headings."""

from __future__ import annotations

from pathlib import Path

from distdx.lint import lint_rules
from distdx.lint.docs import render_rules_markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "lint.md"


def test_docs_page_is_current() -> None:
    assert DOC.read_text() == render_rules_markdown(lint_rules()), \
        "run: distdx lint --list-rules --format markdown > docs/lint.md"


def test_every_rule_has_the_fixed_headings() -> None:
    text = render_rules_markdown(lint_rules())
    for code in lint_rules():
        section = text.split(f"### {code}:", 1)[1].split("\n### ", 1)[0]
        for heading in ("**What it detects.**", "**Why it is bad.**", "**Example.**", "**How to fix.**",
                        "**References.**"):
            assert heading in section, (code, heading)
