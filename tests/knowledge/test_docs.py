"""docs/rules/ is generated from the rule data and must not drift from it."""

from pathlib import Path

from distdx.knowledge.docs import render_docs, rule_page
from distdx.knowledge.rules import load_rules

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules"
HEADINGS = ("## What it detects", "## Why it happens", "## Example", "## How to fix", "## References")


def test_every_page_has_the_fixed_headings():
    for rule in load_rules():
        page = rule_page(rule)
        positions = [page.index(h) for h in HEADINGS]
        assert positions == sorted(positions), rule.code


def test_checked_in_docs_are_current():
    pages = render_docs()
    on_disk = {p.name for p in DOCS.glob("*.md")}
    assert on_disk == set(pages), "run `distdx rules docs --out docs/rules`"
    stale = [name for name, content in pages.items() if (DOCS / name).read_text(encoding="utf-8") != content]
    assert not stale, f"stale pages {stale[:5]}: run `distdx rules docs --out docs/rules`"
