"""`distdx diagnose FILE|DIR|GLOB|- ...`: what broke, where it started, why, and how to fix it."""

from __future__ import annotations

import argparse
import sys

from distdx.cli import add_format_option, emit


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "diagnose",
        help="diagnose logs or an issue text of a failed distributed job",
        description="Read logs (files, directories, globs, .gz, or - for stdin) or a pasted issue text and "
        "print the stage, symptom, root causes, fix pattern, the first failure with its rank, the evidence, "
        "fix steps and similar known issues.",
    )
    p.add_argument("inputs", nargs="+", metavar="FILE", help="log files, directories, globs, or - for stdin")
    add_format_option(p)
    p.add_argument("-v", "--verbose", action="store_true", help="show every hypothesis, evidence line and reference")
    p.add_argument("--redact-hosts", action="store_true", help="replace host names and IPs with placeholders (markdown)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from distdx.diagnose import diagnose_files
    from distdx.report.diagnosis import render_json, render_markdown, render_text

    diagnosis = diagnose_files(args.inputs, stdin=sys.stdin.buffer)
    if args.format == "json":
        emit(render_json(diagnosis))
    elif args.format == "markdown":
        emit(render_markdown(diagnosis, redact_hosts=args.redact_hosts))
    else:
        emit(render_text(diagnosis, verbose=args.verbose))
    return 0
