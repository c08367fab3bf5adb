"""`distdx lab list | run NAME`: the fault-injection scenarios, and running one of them."""

from __future__ import annotations

import argparse
import json

from distdx.cli import add_format_option, emit
from distdx.errors import EXIT_FINDINGS, EXIT_OK, DistdxError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lab", help="reproduce real distributed failures on CPU (fault-injection scenarios)")
    lab = p.add_subparsers(dest="lab_command", metavar="SUBCOMMAND")

    ls = lab.add_parser("list", help="list the scenarios with the taxonomy labels they reproduce")
    add_format_option(ls, ("text", "json"))
    ls.set_defaults(func=run_list)

    rn = lab.add_parser("run", help="run one scenario under torchrun and diagnose what it produced")
    rn.add_argument("name", help="a scenario name from `distdx lab list`")
    rn.add_argument("--keep", metavar="DIR", help="keep logs and work files in DIR (new or empty)")
    rn.add_argument("--timeout", type=float, metavar="SECONDS", help="replace the scenario's time bound")
    rn.add_argument("--no-diagnose", action="store_true", help="only run it; do not diagnose the log")
    add_format_option(rn, ("text", "json"))
    rn.set_defaults(func=run_one)

    p.set_defaults(func=lambda args: _help(p))


def _help(parser: argparse.ArgumentParser) -> int:
    emit(parser.format_help())
    return EXIT_OK


def run_list(args: argparse.Namespace) -> int:
    from distdx.lab import load_scenarios

    scenarios = load_scenarios()
    if args.format == "json":
        emit(json.dumps({"scenarios": [s.to_dict() for s in scenarios]}, indent=2))
        return EXIT_OK
    width = max(len(s.name) for s in scenarios)
    lines = [f"{'NAME':<{width}}  SYMPTOM  CAUSE  FIX  RANKS  NODES  BOUND  TITLE"]
    for s in scenarios:
        lines.append(
            f"{s.name:<{width}}  {s.symptom:<7}  {s.labels['root_cause']:<5}  {s.labels['fix_pattern']:<3}  "
            f"{s.world_size:<5}  {s.nodes:<5}  {s.timeout_s:>4.0f}s  {s.title}"
        )
    emit("\n".join(lines))
    return EXIT_OK


def _render_text(run, scenario) -> str:
    from distdx.knowledge.taxonomy import taxonomy

    tax = taxonomy()
    verdict = "failed as expected" if run.failed_as_expected else "did NOT fail as expected"
    rows = [
        ("scenario", f"{run.scenario}: {scenario.title}"),
        ("fault", scenario.fault),
        ("labels", f"symptom {tax.label(scenario.symptom)}; root cause {tax.label(scenario.labels['root_cause'])}"),
        ("result", f"{verdict}: exit code {run.exit_code} after {run.duration_s:.1f}s"
         + (" (killed at the time bound)" if run.timed_out else "")),
    ]
    if scenario.nodes > 1:
        rows.append(("nodes", "; ".join(f"node{n}: " + ("never started" if c is None else f"exit {c}")
                                        for n, c in enumerate(run.node_exit_codes))))
    rows += [("missing", f"expected log line /{p}/") for p in run.missing_log]
    if run.leftover_processes:
        rows.append(("cleanup", f"killed {run.leftover_processes} process(es) that outlived the launcher"))
    if run.combined_log:
        rows.append(("log", run.combined_log))
        rows += [("rank log", p) for p in run.rank_logs]
    if run.diagnosis:
        got = run.diagnosed_symptom
        match = "as expected" if got == scenario.symptom else f"expected {scenario.symptom}"
        rows.append(("diagnosis", run.diagnosis.get("headline", "")))
        rows.append(("", f"top symptom {tax.label(got) if got else 'none'} ({match})"))
        first = run.diagnosis.get("first_failure")
        if first:
            rows.append(("", f"first failure: line {first['line']} (rank {first['rank']}): {first['text']}"))
    elif run.diagnosis_error:
        rows.append(("diagnosis", run.diagnosis_error))
    rows.append(("should say", scenario.diagnosis))
    rows += [("fix" if i == 0 else "", f"- {step}") for i, step in enumerate(scenario.fix)]
    out = [f"{label:<11}{text}" for label, text in rows]
    if not run.failed_as_expected:
        out += ["last lines of the log:", run.log_tail]
    return "\n".join(out)


def run_one(args: argparse.Namespace) -> int:
    from distdx.lab import get_scenario, run_scenario

    scenario = get_scenario(args.name)
    if args.timeout is not None and not 0 < args.timeout <= 3600:
        raise DistdxError(
            "DX-LAB-005",
            f"--timeout {args.timeout} is out of range",
            why="a lab run must be bounded",
            hint="give a number of seconds between 1 and 3600",
        )
    run = run_scenario(args.name, keep=args.keep, diagnose=not args.no_diagnose, timeout_s=args.timeout)
    if args.format == "json":
        emit(json.dumps(run.to_dict(), indent=2))
    else:
        emit(_render_text(run, scenario))
    return EXIT_OK if run.failed_as_expected else EXIT_FINDINGS
