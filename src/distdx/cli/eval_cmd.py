"""`distdx eval CASES.jsonl`: score the diagnosis engine on labelled cases (leave-one-out)."""

from __future__ import annotations

import argparse
import json

from distdx.cli import add_format_option, emit


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="score diagnosis on labelled cases: top-1/top-3/kappa per dimension")
    p.add_argument("cases", help="cases in the format of shared/cases (JSONL)")
    p.add_argument("--no-leave-one-out", action="store_true",
                   help="let indexed cases be their own evidence (only to measure how much the index memorises)")
    p.add_argument("--split", help="only the cases whose `split` field is this (e.g. test: the frozen test split)")
    p.add_argument("--strict", action="store_true",
                   help="also leave out, for each case, the rules written from it (those citing its URL)")
    add_format_option(p, ("text", "json"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from distdx.diagnose.evaluate import evaluate

    report = evaluate(args.cases, leave_one_out=not args.no_leave_one_out, strict=args.strict, split=args.split)
    if args.format == "json":
        emit(json.dumps(report.to_dict(), indent=2))
        return 0
    mode = "leave-one-out" if report.leave_one_out else "NOT leave-one-out"
    if report.strict:
        mode += ", rules written from a case left out for it"
    out = [f"{report.cases} cases, {report.seconds:.1f} s ({mode})", "",
           f"{'dimension':<12} {'n':>4} {'top1':>6} {'top3':>6} {'kappa':>6}   majority baseline (top1)"]
    for dim, s in report.dimensions.items():
        out.append(f"{dim:<12} {s.n:>4} {s.top1:>6.3f} {s.top3:>6.3f} {s.kappa:>6.3f}   {s.majority_label} {s.majority_top1:.3f}")
    stages = list(report.stage_confusion)
    out += ["", "stage confusion (rows gold, columns predicted):", "      " + " ".join(f"{s:>4}" for s in stages)]
    for g in stages:
        out.append(f"{g:<5} " + " ".join(f"{report.stage_confusion[g][p]:>4}" for p in stages))
    emit("\n".join(out))
    return 0
