"""`distdx diagnose FILE|DIR|GLOB|- ...`: what broke, where it started, why, and how to fix it."""

from __future__ import annotations

import argparse
import sys

from distdx.cli import add_format_option, emit
from distdx.errors import EXIT_NO_FAILURE


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "diagnose",
        help="diagnose logs or an issue text of a failed distributed job",
        description="Read logs (files, directories, globs, .gz, or - for stdin) or a pasted issue text and "
        "print the stage, symptom, root causes, fix pattern, the first failure with its rank, the evidence, "
        "fix steps and similar known issues.",
        epilog="exit status: 0 a diagnosis was made; 2 bad input or arguments; 3 an internal error of distdx; "
        f"{EXIT_NO_FAILURE} no failure found (blank input, or a log with no error line, no failure signature and "
        "no words that report a problem). JSON and Markdown output replace secrets (tokens, keys, passwords) with "
        "placeholders unless --no-redact; plain text to the terminal keeps them unless --redact-hosts.",
    )
    p.add_argument("inputs", nargs="+", metavar="FILE", help="log files, directories, globs, or - for stdin")
    add_format_option(p)
    p.add_argument("-v", "--verbose", action="store_true", help="show every hypothesis, evidence line and reference")
    p.add_argument("--redact-hosts", action="store_true",
                   help="also replace host names and IPs with stable placeholders, in every format")
    p.add_argument("--no-redact", action="store_true",
                   help="keep secrets in JSON and Markdown output (they are replaced by default)")
    p.add_argument("--fix", action="store_true",
                   help="also show the repairs the diagnosis calls for (what `distdx fix --from-log` shows; "
                        "use that command with --config/--script to get and write the file changes)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from distdx.diagnose import diagnose
    from distdx.logs import read_logs
    from distdx.report.diagnosis import render_json, render_markdown, render_text

    parsed = read_logs(args.inputs, stdin=sys.stdin.buffer)
    diagnosis = diagnose(parsed)
    repairs = None
    if args.fix:
        from distdx.fix.fromlog import repairs_for

        repairs = repairs_for(parsed, diagnosis)
    if args.format == "json":
        emit(render_json(diagnosis, redact_secrets=not args.no_redact, redact_hosts=args.redact_hosts,
                         extra={"repairs": repairs.to_dict()["repairs"]} if repairs is not None else None))
    elif args.format == "markdown":
        emit(render_markdown(diagnosis, redact_secrets=not args.no_redact, redact_hosts=args.redact_hosts,
                             repairs=_repair_lines(repairs)))
    else:
        emit(render_text(diagnosis, verbose=args.verbose, redact_hosts=args.redact_hosts,
                         repairs=_repair_lines(repairs)))
    return EXIT_NO_FAILURE if diagnosis.verdict == "no_failure" else 0


def _repair_lines(repairs) -> list[str]:  # noqa: ANN001  (a distdx.fix.fromlog.LogRepairs, or None without --fix)
    if repairs is None:
        return []
    return repairs.lines(constraints_hint="(`distdx fix --from-log LOG --constraints-out PATH` writes the "
                                          "constraints file)") or [
        "no repair follows from the log alone: `distdx fix --from-log LOG --config C --script S` fills them "
        "from the run's files"]
