"""`distdx fix --from-log LOG [--config C] [--script S]`: the repairs a diagnosis calls for, shown; with --write
(and --unsafe-fixes, since every repair from a log changes behaviour) the config and script changes are written."""

from __future__ import annotations

import argparse
import json

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
    files = _write_files(result, args) if args.write or args.out else []
    if args.format == "json":
        emit(json.dumps({**result.to_dict(), "constraints_written": written or None, "written": files}, indent=2))
    else:
        out = [f"diagnosis: {result.headline} (fix pattern {result.fix_pattern or 'unknown'})"]
        out += result.lines(written)
        if written:
            out.append(f"wrote the constraints to {written}")
        out.extend(f"wrote {w['file']}" + (f" (original kept as {w['backup']})" if w["backup"] else "") for w in files)
        if not result.repairs:
            out.append("no repair follows from this log alone; pass --config/--script of the run")
        emit("\n".join(out))
    return EXIT_FINDINGS if result.repairs else EXIT_OK


def _write_files(result, args: argparse.Namespace) -> list[dict]:  # noqa: ANN001
    """Write the repairs' file changes: per file the last repair's (it holds the earlier ones' edits too)."""
    from distdx.errors import DistdxError
    from distdx.fix import write_fixed

    by_file = {r.file_fix.file: r.file_fix for r in result.repairs if r.file_fix is not None and r.file_fix.changed}
    unsafe = sorted({f"{x.code} {x.field}".strip() for f in by_file.values() for x in f.applied if x.kind == "unsafe"})
    if unsafe and not args.unsafe_fixes:
        raise DistdxError("DX-FIX-006", f"the repairs from this log change behaviour ({', '.join(unsafe)}); nothing "
                          "was written", why="a repair filled from a diagnosis is a judgement about the run, not a "
                          "correction that leaves its meaning unchanged",
                          hint="read the diff (run without --write), then add --unsafe-fixes to write it")
    if args.out and len(by_file) > 1:
        raise DistdxError("DX-FIX-004", f"--out takes one file to write ({len(by_file)} have repairs)",
                          hint="use --write, or pass only --config or only --script")
    return [dict(zip(("file", "backup"), write_fixed(f, out=args.out, backup=not args.no_backup, force=args.force)))
            for f in by_file.values()]
