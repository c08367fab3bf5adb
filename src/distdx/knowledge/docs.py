"""Per-rule documentation pages generated from the rule data (``docs/rules/``).

Every page has the same headings: what it detects, why it happens, example, how to fix,
references. ``tests/knowledge/test_docs.py`` fails when the checked-in pages drift from the data;
``distdx rules docs --out docs/rules`` rewrites them.
"""

from __future__ import annotations

from distdx.knowledge.rules import Rule, load_rules
from distdx.knowledge.taxonomy import taxonomy


def _targets(weights: dict[str, float]) -> str:
    tax = taxonomy()
    return ", ".join(f"{tax.label(k)} ({v:.0%})" for k, v in sorted(weights.items(), key=lambda kv: -kv[1]))


def rule_page(rule: Rule) -> str:
    example = rule.fixtures_match[0].rstrip("\n") if rule.fixtures_match else ""
    near_miss = rule.fixtures_no_match[0].rstrip("\n") if rule.fixtures_no_match else ""
    out = [
        f"# {rule.code}: {rule.title}",
        "",
        f"Status: {rule.status}. Severity: {rule.severity}. Evidence weight: {rule.weight:g}."
        + (" Usually a cascade of a failure on another rank." if rule.cascade else ""),
        f"Defined in `src/distdx/knowledge/rules/{rule.source}`.",
        "",
        "## What it detects",
        "",
        "A line matching any of:",
        "",
        *[f"- `{p.pattern}`" for p in rule.patterns],
    ]
    if rule.requires:
        out += ["", "only when the input also contains: " + ", ".join(f"`{p.pattern}`" for p in rule.requires)]
    if rule.excludes:
        out += ["", "and never when it contains: " + ", ".join(f"`{p.pattern}`" for p in rule.excludes)]
    out += [
        "",
        f"Points to symptom {_targets(rule.symptoms)}; root cause {_targets(rule.root_causes)}; "
        f"fix pattern {_targets(rule.fix_patterns)}.",
        "",
        "## Why it happens",
        "",
        rule.why,
        "",
        "## Example",
        "",
        "```",
        example,
        "```",
        "",
        "Does not fire on (near miss):",
        "",
        "```",
        near_miss,
        "```",
        "",
        "## How to fix",
        "",
        *[f"{i}. {step}" for i, step in enumerate(rule.fix, 1)],
        "",
        "## References",
        "",
        *([f"- {r.url}" + (f" ({r.title})" if r.title else "") for r in rule.references] or ["- none recorded"]),
    ]
    return "\n".join(out) + "\n"


def index_page(rules: tuple[Rule, ...]) -> str:
    out = ["# Signature rules", "", f"{len(rules)} rules, generated from `src/distdx/knowledge/rules/*.yaml` "
           "by `distdx rules docs --out docs/rules`; do not edit by hand.", "",
           "| code | title | symptom | severity |", "|---|---|---|---|"]
    for r in rules:
        top = max(r.symptoms.items(), key=lambda kv: kv[1])[0]
        out.append(f"| [{r.code}]({r.code}.md) | {r.title.replace('|', '/')} | {top} | {r.severity} |")
    return "\n".join(out) + "\n"


def render_docs(rules: tuple[Rule, ...] | None = None) -> dict[str, str]:
    """File name -> content for the whole docs/rules folder."""
    rules = load_rules() if rules is None else rules
    pages = {f"{r.code}.md": rule_page(r) for r in rules}
    pages["README.md"] = index_page(rules)
    return pages
