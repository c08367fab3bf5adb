"""Generate ``docs/doctor.md`` from the catalogue: one section per check with fixed headings."""

from __future__ import annotations

from distdx.doctor.catalogue import catalogue
from distdx.knowledge.taxonomy import taxonomy

HEADER = """# `distdx doctor` checks

Generated from `src/distdx/doctor/checks.yaml` by `distdx.doctor.docs.render_docs()`; do not edit by hand
(`python -m distdx.doctor.docs > docs/doctor.md` regenerates it, and a test fails when it is stale).

Statuses: **pass**, **warn**, **fail** (exit code 1), **skip** (with the reason, e.g. no GPU to read).
Severity is what a failure of the check costs: *error* (the job will not run), *warning* (it may break
or crawl), *info*.

| code | severity | title |
|---|---|---|
"""


def render_docs() -> str:
    tax = taxonomy()
    specs = catalogue()
    out = [HEADER + "\n".join(f"| [{s.code}](#{s.code.lower()}) | {s.severity} | {s.title} |" for s in specs), ""]
    for s in specs:
        refs = "\n".join(f"- [{r.title or r.url}]({r.url})" for r in s.references) or "- (none)"
        out.append(f"""## {s.code}

**{s.title}** (severity: {s.severity}; prevents {tax.label(s.symptom)} / {tax.label(s.root_cause)};
fix pattern {tax.label(s.fix_pattern)})

### What it detects
{s.detects}

### Why it happens
{s.why}

### Example
{s.example}

### How to fix
{s.fix}

### References
{refs}
""")
    return "\n".join(out)


if __name__ == "__main__":
    import sys

    sys.stdout.write(render_docs())
