"""`distdx fix FILE...`: the fixes lint's findings call for, as a diff, or written with --write / --out."""

from __future__ import annotations

import argparse
import json

from distdx.cli import add_format_option, emit
from distdx.cli.lint_cmd import add_context_options
from distdx.errors import EXIT_FINDINGS, EXIT_OK, DistdxError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fix", help="repair what lint finds in configs and launch scripts (a diff, or --write)",
                       description="Print a unified diff of every machine-applicable fix of the lint findings, each "
                       "with its code and why. Safe fixes leave the meaning unchanged except the error; unsafe ones "
                       "(a new parallel size, a ZeRO stage, a dropped flag) need --unsafe-fixes. Exit 1 when a fix is "
                       "proposed (diff) or an error is left (--write/--out).")
    p.add_argument("files", nargs="*", metavar="FILE", help="config files (.json/.yaml), launch scripts, Python scripts")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="apply the fixes in place (atomic; FILE.bak keeps the original)")
    mode.add_argument("--out", metavar="PATH", help="write the fixed copy of the one file to PATH")
    p.add_argument("--no-backup", action="store_true", help="with --write: keep no FILE.bak")
    p.add_argument("--force", action="store_true", help="with --out: replace PATH if it exists")
    p.add_argument("--unsafe-fixes", action="store_true", help="apply the fixes that change behaviour too")
    p.add_argument("--select", action="append", default=[], metavar="CODE",
                   help="fix only these codes or code prefixes (any severity; default: every error)")
    p.add_argument("--ignore", action="append", default=[], metavar="CODE", help="leave these codes alone")
    add_context_options(p)
    p.add_argument("--from-log", metavar="LOG", help="repairs from the diagnosis of a failed run's log (F1-F6)")
    p.add_argument("--config", help="with --from-log: the DeepSpeed config the run used")
    p.add_argument("--script", help="with --from-log: the launch script the run used (--write --unsafe-fixes "
                   "writes its fixes and F1 settings)")
    p.add_argument("--params", help="with --from-log: the model's parameter count (7B), for the F5 memory repair")
    p.add_argument("--model-config", metavar="PATH", help="with --from-log: the model's Hugging Face config.json (F5)")
    p.add_argument("--gpu-memory", metavar="SIZE", help="with --from-log: memory per GPU, e.g. 80GB (default: the "
                   "total capacity the out-of-memory message states)")
    p.add_argument("--constraints-out", metavar="PATH", help="with --from-log: write the F2 version set's pip "
                   "constraints file to PATH (atomic; --force replaces it)")
    p.add_argument("--seq-len", type=int, default=2048, help="with --from-log: the sequence length (F5; default 2048)")
    add_format_option(p, choices=("text", "json"))
    p.set_defaults(func=run)


def render_text(report, unsafe: bool) -> str:
    out = []
    for f in report.files:
        for fx in f.applied:
            where = f"{f.file}:{fx.line}" if fx.line else f.file
            out.append(f"{where}: {fx.code} [{fx.kind}] {fx.field}: {fx.description}".replace(" : ", ": "))
        if f.changed:
            out.append(f.diff().rstrip("\n"))
    hidden = sum(len(f.skipped_unsafe) for f in report.files)
    applied = sum(len(f.applied) for f in report.files)
    left = sum(len(f.remaining) for f in report.files)
    line = f"{applied} fix(es)" + (f"; {hidden} unsafe fix(es) not applied (--unsafe-fixes)" if hidden and not unsafe else "")
    out.append(line + (f"; {left} error(s) need a person" if left else ""))
    for f in report.files:
        for code in f.remaining:
            out.append(f"  left: {f.file}: {code}")
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    from distdx.fix import FixOptions, fix, write_fixed
    from distdx.lint import LintOptions

    if args.from_log:
        from distdx.cli.fix_fromlog import run_from_log

        return run_from_log(args)
    report = fix(args.files, LintOptions(world_size=args.world_size, hostfile=args.hostfile, hf=args.hf,
                                         gpus_per_node=args.gpus_per_node),
                 FixOptions(select=tuple(c.upper() for c in args.select), ignore=tuple(c.upper() for c in args.ignore),
                            unsafe=args.unsafe_fixes))
    written = []
    if args.out or args.write:
        changed = [f for f in report.files if f.changed]
        if args.out and len(report.files) != 1:
            raise DistdxError("DX-FIX-004", f"--out takes one input file ({len(report.files)} given)",
                              hint="fix one file at a time with --out, or use --write")
        for f in changed:
            path, backup = write_fixed(f, out=args.out, backup=not args.no_backup, force=args.force)
            written.append({"file": path, "backup": backup})
    if args.format == "json":
        emit(json.dumps(report.to_dict() | {"written": written}, indent=2))
    else:
        text = render_text(report, args.unsafe_fixes)
        text += "".join(f"\nwrote {w['file']}" + (f" (original kept as {w['backup']})" if w["backup"] else "")
                        for w in written)
        emit(text)
    if args.out or args.write:
        return EXIT_FINDINGS if any(f.remaining for f in report.files) else EXIT_OK
    return EXIT_FINDINGS if report.changed else EXIT_OK
