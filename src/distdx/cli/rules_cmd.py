"""`distdx rules list | areas | show CODE | docs --out DIR | test FILE`: the signature rules of the knowledge base."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from distdx.cli import add_format_option, emit
from distdx.errors import DistdxError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rules", help="list, show or document the signature rules")
    rs = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = rs.add_parser("list", help="one line per rule")
    add_format_option(ls, ("text", "json"))
    areas = rs.add_parser("areas", help="the areas of the rule codes: subject, file, provenance, rules")
    add_format_option(areas, ("text", "json"))
    show = rs.add_parser("show", help="one rule's page")
    show.add_argument("code")
    docs = rs.add_parser("docs", help="write the per-rule docs pages")
    docs.add_argument("--out", default="docs/rules")
    test = rs.add_parser("test", help="which rules fire on a text file (line by line)")
    test.add_argument("file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from distdx.knowledge.docs import render_docs, rule_page
    from distdx.knowledge.rules import load_rules

    rules = load_rules()
    if args.action == "list":
        if args.format == "json":
            emit(json.dumps({"rules": [
                {"code": r.code, "title": r.title, "status": r.status, "severity": r.severity,
                 "symptoms": r.symptoms, "root_causes": r.root_causes, "fix_patterns": r.fix_patterns}
                for r in rules]}, indent=2))
        else:
            emit("\n".join(f"{r.code:<16} {max(r.symptoms, key=r.symptoms.get):<5} {r.title}"
                            + ("" if r.status == "stable" else f" ({r.status})") for r in rules))
        return 0
    if args.action == "areas":
        from distdx.knowledge.rules import rule_areas

        counts: dict[str, int] = {}
        for r in rules:
            area = r.code.split("-")[1]
            counts[area] = counts.get(area, 0) + 1
        areas = rule_areas().values()
        if args.format == "json":
            emit(json.dumps({"areas": [{"area": a.area, "subject": a.subject, "file": a.file,
                                        "provenance": a.provenance, "rules": counts.get(a.area, 0)} for a in areas]},
                            indent=2))
        else:
            emit("\n".join(f"DX-{a.area:<7} {counts.get(a.area, 0):>3}  {a.file:<30} {a.provenance:<7} {a.subject}"
                           for a in areas))
        return 0
    if args.action == "show":
        for r in rules:
            if r.code == args.code.upper():
                emit(rule_page(r))
                return 0
        raise DistdxError("DX-CLI-001", f"no rule {args.code!r}", hint="`distdx rules list` shows the codes")
    if args.action == "docs":
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        pages = render_docs(rules)
        for stale in out.glob("DX-*.md"):
            if stale.name not in pages:
                stale.unlink()
        for name, content in pages.items():
            (out / name).write_text(content, encoding="utf-8")
        emit(f"wrote {len(pages)} pages to {out}")
        return 0
    from distdx.logs import parse_text

    try:
        text = Path(args.file).read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise DistdxError("DX-CLI-002", f"cannot read {args.file}: {e.strerror}", hint="check the path") from None
    parsed = parse_text(text, source=args.file)
    fired = []
    for r in rules:
        if not r.applies_to(parsed.text):
            continue
        for line in parsed.lines:
            if r.first_match(line.text):
                fired.append(f"{r.code:<16} {line.source}:{line.lineno}: {line.text[:120]}")
                break
    emit("\n".join(fired) or "no rule fires")
    return 0
