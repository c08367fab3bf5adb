"""`distdx lint FILE... [--command "..."]`: configs and launch commands checked before launch."""

from __future__ import annotations

import argparse
import json

from distdx.cli import add_format_option, emit
from distdx.errors import EXIT_FINDINGS, EXIT_OK, DistdxError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lint", help="check DeepSpeed/accelerate/Megatron/Colossal-AI configs and launch commands before launch",
                       description="Check DeepSpeed JSON, accelerate config files, Megatron-LM arguments, Colossal-AI plugin "
                       "settings and launch commands (deepspeed, torchrun, colossalai run, srun) before any GPU hour is spent. "
                       "Exit 1 when an error is found.")
    p.add_argument("files", nargs="*", metavar="FILE", help="config files (.json/.yaml), launch scripts, Python scripts")
    p.add_argument("--command", "-c", help='a launch command to check, e.g. "torchrun --nproc_per_node 8 train.py ..."')
    add_context_options(p)
    p.add_argument("--list-rules", action="store_true", help="list every rule code with its severity and title (--format markdown: the docs page)")
    p.add_argument("--explain", metavar="CODE", help="print one rule: what it detects, why, how to fix")
    add_format_option(p)
    p.set_defaults(func=run)


def add_context_options(p: argparse.ArgumentParser) -> None:
    """What lint needs to know of the run beyond its files (``distdx lint`` and ``distdx fix``)."""
    p.add_argument("--world-size", "-w", type=int, help="total number of processes (GPUs); wins over what the files say")
    p.add_argument("--hostfile", help="DeepSpeed/MPI hostfile: its slots give the world size and the known hosts")
    p.add_argument("--gpus-per-node", type=int, help="visible GPUs per node, to check nproc_per_node")
    hf = p.add_mutually_exclusive_group()
    hf.add_argument("--hf", dest="hf", action="store_true", default=None,
                    help='the DeepSpeed config goes through the Hugging Face Trainer/Accelerate, which fill "auto" values')
    hf.add_argument("--no-hf", dest="hf", action="store_false",
                    help='the config is passed to deepspeed.initialize() as it is: "auto" values are errors '
                         "(by default, not knowing, they are warnings)")


def render_text(report) -> str:
    from distdx.knowledge.taxonomy import taxonomy

    tax = taxonomy()
    out = []
    for f in report.findings:
        field = f" {f.field}" if f.field else ""
        value = "" if f.value is None or not f.field else f" = {json.dumps(f.value)[:60]}"
        mark = f" [fix: {f.fix_kind}]" if f.fix_kind != "none" else ""
        out.append(f"{f.location()}: {f.severity} {f.code}{field}{value}{mark}")
        out.append(f"  {f.message}")
        if f.severity != "info":
            out.append(f"  why: {f.why}")
            out.append(f"  fix: {f.fix}")
            out.append(f"  prevents: {tax.label(f.symptom)} / {tax.label(f.root_cause)} / {tax.label(f.fix_pattern)}")
    for note in report.notes:
        out.append(f"note: {note}")
    fixable = [f for f in report.findings if f.fix_kind != "none" and f.severity != "info"]
    if fixable:
        unsafe = sum(f.fix_kind == "unsafe" for f in fixable)
        out.append(f"{len(fixable)} finding(s) marked [fix: ...] have a fix: `distdx fix FILE` shows it as a diff, "
                   "`--write` applies it" + (f" ({unsafe} only with --unsafe-fixes)" if unsafe else ""))
    s = report.summary()
    world = f"; world size {s['world_size']} from {s['world_size_source']}" if s["world_size"] else "; world size unknown"
    out.append(f"{s['errors']} error(s), {s['warnings']} warning(s), {s['infos']} info in {s['files']} input(s){world}")
    return "\n".join(out)


def render_markdown(report) -> str:
    from distdx.report.redact import redact

    lines = ["| severity | code | where | field | what | fix |", "|---|---|---|---|---|---|"]
    for f in report.findings:
        value = "" if f.value is None else f" = {json.dumps(f.value)[:80]}"
        fix = f.fix + (f" (`distdx fix`: {f.fix_kind})" if f.fix_kind != "none" else "")
        cells = [f.severity, f.code, f.location(), f"`{f.field}{value}`" if f.field else "", f.message, fix]
        lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    s = report.summary()
    lines.append("")
    lines.append(f"**{s['errors']} error(s), {s['warnings']} warning(s), {s['infos']} info** "
                 f"(world size: {s['world_size'] or 'unknown'})")
    return redact("\n".join(lines))


def _rule_text(rule) -> str:
    refs = "\n".join(f"  - {r.title}: {r.url}" for r in rule.references)
    return (f"{rule.code} ({rule.severity}): {rule.title}\n  why: {rule.why}\n  fix: {rule.fix}\n"
            f"  example: {rule.example}\n  prevents: {rule.symptom} / {rule.root_cause} / {rule.fix_pattern}\n"
            f"  references:\n{refs}")


def run(args: argparse.Namespace) -> int:
    from distdx.lint import LintOptions, lint, lint_rules

    if args.list_rules or args.explain:
        rules = lint_rules()
        if args.explain:
            rule = rules.get(args.explain.upper())
            if rule is None:
                raise DistdxError("DX-LINT-007", f"no lint rule {args.explain!r}",
                                  hint="run `distdx lint --list-rules` to see the codes")
            emit(json.dumps(vars(rule) | {"references": [vars(r) for r in rule.references]}, indent=2)
                 if args.format == "json" else _rule_text(rule))
            return EXIT_OK
        if args.format == "json":
            emit(json.dumps({"rules": [{"code": r.code, "severity": r.severity, "title": r.title}
                                       for r in rules.values()]}, indent=2))
        elif args.format == "markdown":
            from distdx.lint.docs import render_rules_markdown

            emit(render_rules_markdown(rules))
        else:
            emit("\n".join(f"{r.code:<16} {r.severity:<8} {r.title}" for r in rules.values()))
        return EXIT_OK
    for name in ("world_size", "gpus_per_node"):
        value = getattr(args, name)
        if value is not None and not 1 <= value <= 10**7:
            raise DistdxError("DX-LINT-005", f"--{name.replace('_', '-')} must be from 1 to 10,000,000 (got {value})",
                              hint="pass the job's number of processes/GPUs")
    report = lint(args.files, command=args.command,
                  options=LintOptions(world_size=args.world_size, hostfile=args.hostfile, hf=args.hf,
                                      gpus_per_node=args.gpus_per_node))
    if args.format == "json":
        emit(json.dumps(report.to_dict(), indent=2))
    elif args.format == "markdown":
        emit(render_markdown(report))
    else:
        emit(render_text(report))
    return EXIT_FINDINGS if report.has_errors else EXIT_OK
