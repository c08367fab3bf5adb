"""The rules reference page (docs/lint.md), generated from ``rules.yaml``.

Regenerate with ``distdx lint --list-rules --format markdown > docs/lint.md``; a test fails when the page
is stale.
"""

from __future__ import annotations

from distdx.knowledge.taxonomy import taxonomy
from distdx.lint.models import LintRule

_FAMILIES = (("LINT-SYN", "Syntax"), ("LINT-DS", "DeepSpeed JSON"), ("LINT-MEG", "Megatron-LM arguments"),
             ("LINT-CAI", "Colossal-AI plugins"), ("LINT-LAUNCH", "Launch commands"),
             ("LINT-ACC", "accelerate config files"))

_INTRO = """# distdx lint rules

<!-- Generated from src/distdx/lint/rules.yaml by `distdx lint --list-rules --format markdown`; do not edit. -->

`distdx lint FILE... [--command "..."] [--world-size N | --hostfile FILE] [--hf] [--format text|json|markdown]`
checks DeepSpeed JSON configs, accelerate config files (`default_config.yaml`, the YAML or JSON given to
`accelerate launch --config_file`), Megatron-LM arguments in launch scripts, Colossal-AI plugin settings in Python
scripts and launch commands (deepspeed, torchrun, colossalai run, srun) before launch. It exits 1 when it finds
an error. Every finding names its code, severity, file, field and value, what is wrong, why, how to fix it, and
the taxonomy symptom / root cause / fix pattern it prevents.

**World size.** `--world-size N` wins; otherwise the launch command that runs the file (a DeepSpeed config named
on a launch command's arguments gets that command's data-parallel size: world / (TP x PP) when Megatron
arguments are present), otherwise the single launch command given, otherwise the hostfile's slots.

**"auto" values.** They are placeholders the Hugging Face Trainer/Accelerate fill in. lint reports them as
errors (LINT-DS-021) unless `--hf` says the config goes through that integration; it does not guess from
the file, because the same file handed to `deepspeed.initialize()` fails.

**The DeepSpeed key schema** (sections, keys, aliases, types, bounds, choices) is generated from the installed
DeepSpeed by `tests/lint/gen_deepspeed_schema.py` into `src/distdx/lint/deepspeed_schema.yaml`; a test fails
when it no longer matches. Sections DeepSpeed validates with pydantic (`extra="forbid"`) reject unknown keys
(LINT-DS-001); elsewhere DeepSpeed ignores them silently (LINT-DS-002 with a close match, else LINT-DS-003).

**accelerate configs** are recognised by `distributed_type` or `compute_environment` (or two other keys only they
have) and checked against accelerate 1.15.0: its keys, the launch arguments each section lands on and the values
its enums take are generated from the installed accelerate by `tests/lint/gen_accelerate_schema.py` into
`src/distdx/lint/accelerate_schema.yaml`. A `deepspeed_config_file` the config names is linted with the DeepSpeed
rules, its "auto" values filled by accelerate and its world size the config's `num_processes`.
"""


_FIX_WORDS = {"safe": "safe: `distdx fix --write` applies it; the meaning is unchanged except the error.",
              "unsafe": "unsafe: it changes behaviour or picks a value, so `distdx fix` applies it only with "
                        "`--unsafe-fixes`.",
              "none": "none: no repair follows from the file alone; a person chooses."}


def _section(rule: LintRule) -> str:
    tax = taxonomy()
    refs = "\n".join(f"- [{r.title or r.url}]({r.url})" for r in rule.references) or "- (none)"
    return "\n".join([
        f"### {rule.code}: {rule.title}",
        "",
        f"Severity: **{rule.severity}**. Applies to: {rule.applies_to}. Prevents: {tax.label(rule.symptom)}; "
        f"{tax.label(rule.root_cause)}; {tax.label(rule.fix_pattern)}.",
        "",
        "**What it detects.** " + rule.title + ".",
        "",
        "**Why it is bad.** " + rule.why,
        "",
        "**Example.**",
        "",
        "```",
        rule.example,
        "```",
        "",
        *(["**After `distdx fix" + (" --unsafe-fixes" if rule.fix_kind == "unsafe" else "") + "`.**", "", "```",
            rule.fixed_example, "```", ""] if rule.fixed_example else []),
        "**How to fix.** " + rule.fix,
        "",
        f"**Fix kind.** {_FIX_WORDS[rule.fix_kind]}",
        "",
        "**References.**",
        "",
        refs,
        "",
    ])


def render_rules_markdown(rules: dict[str, LintRule]) -> str:
    out = [_INTRO]
    out.append("| code | severity | fix | title |\n|---|---|---|---|")
    out.extend(f"| [{r.code}](#{r.code.lower()}-{_anchor(r.title)}) | {r.severity} | {r.fix_kind} | {r.title} |"
               for r in rules.values())
    out.append("")
    for prefix, name in _FAMILIES:
        members = [r for r in rules.values() if r.code.rsplit("-", 1)[0] == prefix]
        if members:
            out.append(f"## {name}\n")
            out.extend(_section(r) for r in members)
    return "\n".join(out).rstrip() + "\n"


def _anchor(title: str) -> str:
    keep = "".join(ch.lower() if ch.isalnum() else "-" if ch in " -" else "" for ch in title)
    return keep
