"""`distdx kb build --from STUDY_DB_OR_JSONL`: the known-issue index diagnosis cites and learns from."""

from __future__ import annotations

import argparse
import json

from distdx.cli import add_format_option, emit


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("kb", help="build the known-issue index from labelled issues")
    s = p.add_subparsers(dest="kb_command", metavar="ACTION")
    p.set_defaults(func=lambda args: (p.print_help(), 0)[1])
    b = s.add_parser("build", help="turn adjudicated issues into the known-issue index")
    b.add_argument("--from", dest="sources", action="append", required=True, metavar="SOURCE",
                   help="a case-format .jsonl file, or a study database (path or SQLAlchemy URL); "
                        "repeat to merge several")
    b.add_argument("--skip-split", dest="skip_splits", action="append", default=[], metavar="NAME",
                   help="leave out cases whose `split` field is NAME (e.g. test, to keep a test split unseen); repeatable")
    b.add_argument("--out", help="where to write the index (default: your own index, $DISTDX_INDEX or "
                                 "~/.local/share/distdx/known_issues.jsonl, which diagnose reads after the bundled one)")
    b.add_argument("--force", action="store_true", help="replace the file at --out (or your index) if it exists")
    add_format_option(b, ("text", "json"))
    b.set_defaults(func=run_build)


def run_build(args: argparse.Namespace) -> int:
    from distdx.study.kb import build_kb

    result = build_kb(args.sources, args.out, tuple(args.skip_splits), force=args.force)
    if args.format == "json":
        # "source" (the first) is kept for callers of the one-source version; "sources" has them all
        emit(json.dumps({"source": result.sources[0], "sources": list(result.sources), "out": str(result.out),
                         "issues": result.issues,
                         "skipped_duplicates": result.skipped_duplicates}, indent=2))
    else:
        extra = f" ({result.skipped_duplicates} duplicates left out)" if result.skipped_duplicates else ""
        emit(f"wrote {result.issues} known issues to {result.out}{extra}")
    return 0
