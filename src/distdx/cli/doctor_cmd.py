"""`distdx doctor`: check this machine, every node of a hostfile, or every rank of a job."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from distdx.cli import add_format_option, emit, non_negative, positive, whole
from distdx.errors import EXIT_FINDINGS, EXIT_OK, DistdxError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="check versions, toolchain, GPUs, network and launch settings before launch",
                       description="Run the doctor's coded checks (see docs/doctor.md). Exit 1 when a check fails.")
    add_format_option(p)
    p.add_argument("--only", action="append", metavar="CODE", help="run only checks with this code or prefix "
                   "(DOC-NCCL-004, DOC-NCCL); repeatable or comma-separated")
    p.add_argument("--list", action="store_true", help="print the catalogue of checks and exit")
    p.add_argument("--verbose", "-v", action="store_true", help="show fixes for every check")
    p.add_argument("--checkpoint-dir", default=".", metavar="DIR", help="where checkpoints go (free-space check)")
    p.add_argument("--min-free-gb", type=non_negative, default=20.0, help="warn below this much free space (default 20)")
    p.add_argument("--deepspeed-ops", action="store_true",
                   help="also ask DeepSpeed's op builders which ops are compatible, as ds_report does (seconds)")
    p.add_argument("--multi-node", action="store_true", default=None,
                   help="judge as part of a multi-node job (otherwise inferred from NNODES/WORLD_SIZE)")
    multi = p.add_argument_group("multi-node (--hostfile)")
    multi.add_argument("--hostfile", metavar="FILE", help="DeepSpeed/pdsh or MPI hostfile: run the doctor on "
                       "every host over ssh and show what differs")
    multi.add_argument("--ssh-port", type=whole(1, 65535), help="ssh port on the nodes (default: ssh's own)")
    multi.add_argument("--ssh-config", metavar="FILE", help="ssh config file to use instead of ~/.ssh/config "
                       "(ssh -F: node aliases, keys, known_hosts, jump hosts)")
    multi.add_argument("--ssh-timeout", type=whole(1, 3600), default=5,
                       help="ssh ConnectTimeout in seconds, 1 to 3600 (default 5)")
    multi.add_argument("--remote-timeout", type=positive, default=60.0, help="limit for the remote doctor (s)")
    multi.add_argument("--remote-command", default="distdx doctor --format json",
                       help="command run on each node (default: %(default)s)")
    job = p.add_argument_group("in a launched job (--distributed)")
    job.add_argument("--distributed", action="store_true", help="run as a torchrun/srun/deepspeed job: checks on "
                     "every rank, collective smoke test, one cluster report on rank 0")
    job.add_argument("--backend", choices=("nccl", "gloo"), help="default: nccl with CUDA, else gloo")
    job.add_argument("--payload-mb", type=positive, default=8.0, help="all_reduce size for the bandwidth figure")
    job.add_argument("--timeout", type=positive, default=120.0, help="process-group timeout in seconds")
    p.set_defaults(func=run)


def _only(args: argparse.Namespace) -> list[str] | None:
    if not args.only:
        return None
    return [c.strip() for item in args.only for c in item.split(",") if c.strip()]


def _options(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from distdx.doctor.checks import CheckOptions

    return CheckOptions(min_free_gb=args.min_free_gb, multi_node=args.multi_node)


def _list(args: argparse.Namespace) -> int:
    from distdx.doctor.engine import select
    from distdx.doctor.render import render_catalogue

    specs = select(_only(args))
    if args.format == "json":
        emit(json.dumps({"checks": [{**s.__dict__, "references": [r.__dict__ for r in s.references]}
                                    for s in specs]}, indent=2))
    else:
        emit(render_catalogue(specs))
    return EXIT_OK


def _hostfile(args: argparse.Namespace) -> int:
    from distdx.doctor.hostfile import parse_hostfile
    from distdx.doctor.remote import doctor_nodes
    from distdx.doctor.render import render_nodes
    from distdx.report.redact import redact

    path = Path(args.hostfile)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DistdxError("DX-HOSTFILE-003", f"hostfile {path} not found", hint="pass the path of an existing file")
    except (UnicodeDecodeError, IsADirectoryError, PermissionError) as e:
        raise DistdxError("DX-HOSTFILE-003", f"cannot read hostfile {path}: {e}",
                          hint="pass a plain-text hostfile (UTF-8), one `host slots=N` per line") from None
    entries = parse_hostfile(text, str(path))
    if args.ssh_config and not Path(args.ssh_config).is_file():
        raise DistdxError("DX-DOCTOR-007", f"ssh config {args.ssh_config} not found",
                          why="ssh -F stops at once on a config file it cannot open, for every node",
                          hint="pass the path of an existing ssh config file, or leave --ssh-config out to use ~/.ssh/config")
    multi = doctor_nodes(entries, port=args.ssh_port, connect_timeout=args.ssh_timeout,
                         run_timeout=args.remote_timeout, remote_command=args.remote_command,
                         ssh_config=args.ssh_config)
    if args.format == "json":
        emit(json.dumps(multi.to_dict(), indent=2, default=str))
    elif args.format == "markdown":
        emit(redact("```\n" + render_nodes(multi) + "\n```", hosts=True, host_names=[e.host for e in entries]))
    else:
        emit(render_nodes(multi))
    return EXIT_FINDINGS if multi.failed else EXIT_OK


def _distributed(args: argparse.Namespace) -> int:
    from distdx.doctor.distributed import run_distributed
    from distdx.doctor.render import render_cluster
    from distdx.report.redact import redact

    cluster, failed = run_distributed(only=_only(args), options=_options(args), backend=args.backend,
                                      payload_mb=args.payload_mb, timeout_s=args.timeout,
                                      disk_path=args.checkpoint_dir)
    if cluster is not None:
        if args.format == "json":
            emit(json.dumps(cluster.to_dict(), indent=2, default=str))
        elif args.format == "markdown":
            emit(redact("```\n" + render_cluster(cluster) + "\n```", hosts=True))
        else:
            emit(render_cluster(cluster))
    return EXIT_FINDINGS if failed else EXIT_OK


def run(args: argparse.Namespace) -> int:
    if args.list:
        return _list(args)
    if args.hostfile and args.distributed:
        raise DistdxError("DX-DOCTOR-005", "--hostfile and --distributed do not go together",
                          why="--hostfile reaches the nodes over ssh; --distributed runs inside a launched job",
                          hint="use one of them")
    if args.hostfile:
        return _hostfile(args)
    if args.distributed:
        return _distributed(args)
    from distdx.doctor.engine import doctor
    from distdx.doctor.render import render_json, render_markdown, render_text

    report = doctor(only=_only(args), options=_options(args), disk_path=args.checkpoint_dir,
                    deepspeed_ops=args.deepspeed_ops)
    render = {"json": render_json, "markdown": render_markdown}.get(args.format)
    emit(render(report) if render else render_text(report, verbose=args.verbose))
    return EXIT_FINDINGS if report.failed else EXIT_OK
