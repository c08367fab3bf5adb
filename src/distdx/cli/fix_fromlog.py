"""`distdx fix --from-log LOG [--config C] [--script S]`: the repairs a diagnosis calls for, shown, never applied."""

from __future__ import annotations

import argparse
import json
import shlex

from distdx.cli import emit
from distdx.errors import EXIT_FINDINGS, EXIT_OK


def run_from_log(args: argparse.Namespace) -> int:
    from distdx.fix.fromlog import fixes_from_log
    from distdx.lint import LintOptions

    model = None
    if args.params or args.model_config:
        from distdx.estimate import parse_count, shape_from_config, shape_from_params

        model = shape_from_config(args.model_config) if args.model_config else shape_from_params(parse_count(args.params))
    gpu_memory = None
    if args.gpu_memory:
        from distdx.estimate import parse_bytes

        gpu_memory = parse_bytes(args.gpu_memory)
    result = fixes_from_log([args.from_log], config=args.config, script=args.script,
                            lint_options=LintOptions(world_size=args.world_size, hostfile=args.hostfile, hf=args.hf,
                                                     gpus_per_node=args.gpus_per_node),
                            model=model, gpu_memory=gpu_memory, seq_len=args.seq_len)
    version_sets = [r for r in result.repairs if r.constraints]
    written = ""
    if args.constraints_out and version_sets:
        from distdx.paths import write_atomic

        text = version_sets[0].constraints
        written = str(write_atomic(args.constraints_out, text if text.endswith("\n") else text + "\n",
                                   force=args.force, what="constraints file"))
    if args.format == "json":
        emit(json.dumps({**result.to_dict(), "constraints_written": written or None}, indent=2))
    else:
        out = [f"diagnosis: {result.headline} (fix pattern {result.fix_pattern or 'unknown'})"]
        for r in result.repairs:
            out.append(f"[{r.pattern}] {r.title}: {r.why}")
            out.extend(f"    {s}" for s in r.settings)
            if r.diff:
                out.append(r.diff.rstrip("\n"))
            if r.command:
                command = r.command
                if written and r.constraints:
                    from distdx.doctor.versionsets import CONSTRAINTS_FILE

                    command = command.replace(CONSTRAINTS_FILE, shlex.quote(written))
                out.append(f"    run: {command}")
            if r.constraints and not written:
                out.append("    (--constraints-out PATH writes the constraints file)")
        if written:
            out.append(f"wrote the constraints to {written}")
        if not result.repairs:
            out.append("no repair follows from this log alone; pass --config/--script of the run")
        emit("\n".join(out))
    return EXIT_FINDINGS if result.repairs else EXIT_OK
