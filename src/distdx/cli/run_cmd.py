"""`distdx run [--guard] [--out DIR] -- <command>`: launch a job, capture it, diagnose its failure."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from distdx.cli import add_format_option, emit, positive
from distdx.errors import DistdxError
from distdx.paths import user_dir


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run a training job (torchrun, deepspeed, python) with capture, debug settings and optional guard",
        description="Run COMMAND with per-rank log capture and debug settings that do not change its behaviour; "
        "exit with the job's exit code; when it fails, print the diagnosis of what was captured. "
        "With --guard, every Python process of the job runs the distdx runtime guard.",
        usage="distdx run [--guard] [--out DIR] [options] -- COMMAND [ARGS ...]",
    )
    p.add_argument("--guard", action="store_true", help="switch the distdx runtime guard on in the job")
    p.add_argument(
        "--guard-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a guard option, e.g. hang_s=30 or fail_fast=1 (repeatable; see docs/guard.md)",
    )
    p.add_argument("--out", metavar="DIR", help="where to keep logs and events (default: "
                   "$DISTDX_STATE_DIR or ~/.local/state/distdx, in runs/distdx-run-<time>; the path is printed)")
    p.add_argument("--timeout", type=positive, metavar="SECONDS", help="stop the job (SIGTERM, then SIGKILL) after this long")
    p.add_argument("--no-diagnose", action="store_true", help="do not diagnose a failed job")
    p.add_argument("-q", "--quiet", action="store_true", help="do not copy the job's output to the console")
    add_format_option(p)
    p.add_argument("command", nargs=argparse.REMAINDER, help="the launcher command, after --")
    p.set_defaults(func=run)


def _guard_options(pairs: list[str]) -> dict[str, str]:
    from dataclasses import fields

    from distdx.guard.config import GuardConfig

    known = {f.name for f in fields(GuardConfig)} - {"out_dir"}
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in known:
            raise DistdxError(
                "DX-RUN-004",
                f"bad --guard-option {pair!r}",
                why="a guard option is KEY=VALUE with KEY one of the guard's settings",
                hint="valid keys: " + ", ".join(sorted(known)),
            )
        options[key] = value
    GuardConfig.from_env({f"DISTDX_GUARD_{k.upper()}": v for k, v in options.items()})  # validates the values
    return options


def render_text(result) -> str:  # noqa: ANN001 - RunResult, imported lazily
    head = "succeeded" if not result.failed else f"failed with exit code {result.exit_code}"
    if not result.failed and result.guard_problems:
        head += f", but the guard reported {result.guard_problems} problem{'s' if result.guard_problems != 1 else ''}"
    if result.signal:
        head += f" ({result.signal})"
    if result.timed_out:
        head += f", stopped by --timeout after {result.duration_s:.0f} s"
    lines = ["", f"── distdx run: the job {head} after {result.duration_s:.1f} s ──", f"logs: {result.plan.out_dir}"]
    if result.guard_files:
        lines.append(f"guard events: {len(result.guard_files)} file(s) in {result.plan.out_dir}/guard")
    if result.diagnosis is not None:
        from distdx.report.diagnosis import render_text as render_diagnosis

        lines += ["", render_diagnosis(result.diagnosis)]
    elif result.diagnosis_error:
        lines.append(f"no diagnosis: {result.diagnosis_error}")
    return "\n".join(lines)


def render_markdown(result) -> str:  # noqa: ANN001
    from distdx.report.redact import redact

    lines = [
        "### `distdx run` summary",
        "",
        f"- command: `{redact(' '.join(result.plan.argv))}`",
        f"- exit code: {result.exit_code}" + (f" ({result.signal})" if result.signal else ""),
        f"- duration: {result.duration_s:.1f} s",
    ]
    if result.diagnosis is not None:
        from distdx.report.diagnosis import render_markdown as render_diagnosis

        lines += ["", render_diagnosis(result.diagnosis)]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from distdx.runner import execute, plan_run

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    out = args.out or str(user_dir("state", os.environ.get("DISTDX_STATE_DIR")) / "runs"
                          / time.strftime("distdx-run-%Y%m%d-%H%M%S"))
    if args.guard:
        import importlib.util

        if importlib.util.find_spec("torch") is None:
            print("distdx run: warning: torch is not installed here, so the guard cannot start in this "
                  "Python; the job runs unguarded unless its own Python has torch", file=sys.stderr)
    plan = plan_run(command, out_dir=out, guard=args.guard, guard_options=_guard_options(args.guard_option))
    # the job's own output goes to the console; in JSON mode to stderr, so stdout stays one document
    echo = None if args.quiet else (sys.stderr.buffer if args.format == "json" else sys.stdout.buffer)
    result = execute(plan, echo=echo, diagnose=not args.no_diagnose, timeout_s=args.timeout)
    if args.format == "json":
        emit(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    elif args.format == "markdown":
        emit(render_markdown(result))
    else:
        emit(render_text(result))
    return result.exit_code
