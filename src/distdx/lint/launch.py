"""Launch commands (deepspeed, torchrun / python -m torch.distributed.run, colossalai run, srun, mpirun):
the ``LINT-LAUNCH-*`` rules, and the world size a command starts."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from distdx.lint.models import Hit
from distdx.lint.shell import Command

# Options that take no value, per launcher (everything else starting with "-" takes the next word).
_FLAGS = {
    "torchrun": {"--standalone", "--no_python", "--no-python", "--run_path", "--run-path", "-m", "--module",
                 "--use_env", "--use-env", "--no_local_rank", "--no-local-rank", "--virtual-local-rank"},
    "deepspeed": {"--no_ssh_check", "--no_local_rank", "--no_python", "-m", "--module", "--force_multi",
                  "--elastic_training", "--bind_cores_to_rank", "--no_ssh", "--enable_each_rank_log",
                  "--save_pid", "--use_env"},
    "colossalai": {"-m", "--module", "--extra_launch_args"},
    "srun": {"--exclusive", "-l", "--label", "-u", "--unbuffered", "-v", "--verbose", "--overlap", "--mpi=pmix"},
    "mpirun": {"--allow-run-as-root", "--oversubscribe", "--bind-to-core", "--tag-output", "-v"},
}
_INCLUDE_SEGMENT = re.compile(r"^[A-Za-z0-9_.\-\[\]]+(:\d+(,\d+)*)?$")


@dataclass
class LaunchInfo:
    launcher: str
    options: dict[str, str] = field(default_factory=dict)
    script: str | None = None
    script_args: tuple[str, ...] = ()
    world_size: int | None = None
    nproc_per_node: int | None = None
    line: int = 0


def _launcher(argv: tuple[str, ...]) -> tuple[str, int] | None:
    """(launcher name, index of its first option) or None."""
    if not argv:
        return None
    head = os.path.basename(argv[0])
    if head == "torchrun":
        return "torchrun", 1
    if head == "deepspeed":
        return "deepspeed", 1
    if head == "colossalai" and len(argv) > 1 and argv[1] == "run":
        return "colossalai", 2
    if head == "srun":
        return "srun", 1
    if head in ("mpirun", "mpiexec"):
        return "mpirun", 1
    if re.match(r"^python[0-9.]*$", head):
        for i, word in enumerate(argv[1:], start=1):
            if word == "-m" and i + 1 < len(argv) and argv[i + 1] in ("torch.distributed.run", "torch.distributed.launch"):
                return "torchrun", i + 2
            if word == "-m" and i + 1 < len(argv) and argv[i + 1] in ("deepspeed.launcher.runner",):
                return "deepspeed", i + 2
            if not word.startswith("-"):
                break
    return None


def parse_launch(cmd: Command) -> LaunchInfo | None:
    found = _launcher(cmd.argv)
    if found is None:
        return None
    name, i = found
    info = LaunchInfo(launcher=name, line=cmd.line)
    argv = cmd.argv
    while i < len(argv):
        word = argv[i]
        if not word.startswith("-") or word == "--":
            if word == "--":
                i += 1
            break
        if "=" in word and word.startswith("--"):
            key, _, value = word.partition("=")
            info.options[key] = value
            i += 1
            continue
        if word in _FLAGS[name] or i + 1 >= len(argv):
            info.options[word] = ""
            i += 1
            continue
        info.options[word] = argv[i + 1]
        i += 2
    if i < len(argv):
        info.script = argv[i]
        info.script_args = argv[i + 1:]
    return info


def opt(info: LaunchInfo, *names: str) -> tuple[str, str] | None:
    for n in names:
        if n in info.options:
            return n, info.options[n]
    return None


def _int(value: str) -> int | None:
    return int(value) if re.fullmatch(r"-?\d+", value.strip()) else None


def _known(value: str) -> bool:
    return "$" not in value and "`" not in value


@dataclass(frozen=True)
class LaunchContext:
    hostfile_entries: dict[str, int] | None = None  # host -> slots
    hostfile_source: str = ""
    visible_gpus: int | None = None
    env: dict[str, str] = field(default_factory=dict)


def _filter(spec: str) -> dict[str, list[int] | None]:
    out: dict[str, list[int] | None] = {}
    for seg in spec.split("@"):
        host, _, slots = seg.partition(":")
        out[host] = [int(s) for s in slots.split(",")] if slots else None
    return out


def check_launch(info: LaunchInfo, ctx: LaunchContext) -> list[Hit]:
    hits: list[Hit] = []

    def hit(code: str, field_: str, value: object, message: str) -> None:
        hits.append(Hit(code, field_, value, message, info.line))

    name = info.launcher
    include = opt(info, "--include", "-i")
    exclude = opt(info, "--exclude", "-e")
    if name in ("deepspeed", "colossalai"):
        for got in (include, exclude):
            if got and _known(got[1]):
                bad = [seg for seg in got[1].split("@") if not _INCLUDE_SEGMENT.match(seg)]
                if bad or not got[1]:
                    hit("LINT-LAUNCH-001", got[0], got[1],
                        f"{got[0]} {got[1]!r}: {bad[0]!r} is not `host` or `host:slot,slot`" if bad
                        else f"{got[0]} is empty")
        if include and exclude:
            hit("LINT-LAUNCH-002", "--include", f"{include[1]} / {exclude[1]}",
                "--include and --exclude are both given; the launcher accepts only one")
        if name == "deepspeed" and (include or exclude) and opt(info, "--num_gpus", "--num_nodes"):
            used = opt(info, "--num_gpus", "--num_nodes")
            hit("LINT-LAUNCH-003", used[0], used[1], f"{used[0]} is given with {(include or exclude)[0]}; "
                "DeepSpeed raises 'Cannot specify num_nodes/gpus with include/exclude'")
        if ctx.hostfile_entries is not None:
            for got in (include, exclude):
                if not got or not _known(got[1]) or any(not _INCLUDE_SEGMENT.match(s) for s in got[1].split("@")):
                    continue
                for host, slots in _filter(got[1]).items():
                    if host not in ctx.hostfile_entries:
                        hit("LINT-LAUNCH-008", got[0], host, f"host {host!r} is not in the hostfile "
                            f"{ctx.hostfile_source} ({', '.join(ctx.hostfile_entries)})")
                    elif slots and max(slots) >= ctx.hostfile_entries[host]:
                        hit("LINT-LAUNCH-008", got[0], f"{host}:{max(slots)}", f"host {host!r} has "
                            f"{ctx.hostfile_entries[host]} slots in the hostfile; slot {max(slots)} does not exist")

    counts = {
        "torchrun": (("--nproc_per_node", "--nproc-per-node"), ("--nnodes",)),
        "deepspeed": (("--num_gpus", "--num-gpus"), ("--num_nodes", "--num-nodes")),
        "colossalai": (("--nproc_per_node", "--nproc-per-node"), ("--num_nodes", "--num-nodes")),
        "srun": (("--ntasks-per-node",), ("-N", "--nodes")),
        "mpirun": (("-npernode", "--npernode", "-N"), ()),
    }[name]
    nproc = nnodes = None
    got = opt(info, *counts[0])
    if got and _known(got[1]) and not (name == "torchrun" and got[1] in ("gpu", "cpu", "auto", "xpu")):
        nproc = _int(got[1])
        if nproc is None or nproc < 1:
            hit("LINT-LAUNCH-009", got[0], got[1], f"{got[0]} is {got[1]!r}; it must be a positive integer")
            nproc = None
    got = opt(info, *counts[1]) if counts[1] else None
    if got and _known(got[1]):
        low, _, high = got[1].partition(":")
        lo, hi = _int(low), _int(high) if high else _int(low)
        if lo is None or hi is None or lo < 1 or hi < lo:
            hit("LINT-LAUNCH-009", got[0], got[1], f"{got[0]} is {got[1]!r}; it must be a positive integer"
                + (" or MIN:MAX" if name == "torchrun" else ""))
        elif lo == hi:
            nnodes = lo
    if name == "torchrun" and "--standalone" in info.options:
        nnodes = 1
    info.nproc_per_node = nproc

    visible = ctx.visible_gpus
    cvd = info_env_cvd(ctx.env)
    if cvd is not None:
        visible = cvd
    if nproc is not None and visible is not None and nproc > visible and name in ("torchrun", "deepspeed", "colossalai"):
        hit("LINT-LAUNCH-004", counts[0][0], nproc, f"{nproc} processes per node but {visible} visible GPUs "
            "(CUDA_VISIBLE_DEVICES)" if cvd is not None else f"{nproc} processes per node but {visible} GPUs per node")

    rank = opt(info, "--node_rank", "--node-rank")
    if rank and _known(rank[1]):
        r = _int(rank[1])
        if r is None or r < 0 or (nnodes is not None and r >= nnodes):
            hit("LINT-LAUNCH-005", rank[0], rank[1], f"node rank {rank[1]} is outside 0..{(nnodes or 1) - 1}"
                if r is not None else f"node rank {rank[1]!r} is not an integer")

    port = opt(info, "--master_port", "--master-port")
    endpoint = opt(info, "--rdzv_endpoint", "--rdzv-endpoint")
    if port is None and endpoint and ":" in endpoint[1]:
        port = (endpoint[0], endpoint[1].rsplit(":", 1)[1])
    if port and _known(port[1]):
        p = _int(port[1])
        if p is None or not 1 <= p <= 65535:
            hit("LINT-LAUNCH-006", port[0], port[1], f"master port {port[1]} is not a TCP port (1..65535)")
        elif p < 1024:
            hit("LINT-LAUNCH-007", port[0], p, f"master port {p} is privileged (< 1024): binding it needs root")

    info.world_size = _world_size(info, nproc, nnodes, ctx, include, exclude)
    return hits


def info_env_cvd(env: dict[str, str]) -> int | None:
    value = env.get("CUDA_VISIBLE_DEVICES")
    if value is None or not _known(value) or value.strip() == "":
        return None
    return len([v for v in value.split(",") if v.strip()])


def _world_size(info: LaunchInfo, nproc: int | None, nnodes: int | None, ctx: LaunchContext,
                include: tuple[str, str] | None, exclude: tuple[str, str] | None) -> int | None:
    name = info.launcher
    if name in ("torchrun", "colossalai"):
        if name == "colossalai" and nnodes is None:
            hosts = opt(info, "--host")
            if hosts and _known(hosts[1]):
                nnodes = len(hosts[1].split(","))
            elif not opt(info, "--hostfile"):
                nnodes = 1
        if name == "torchrun" and nnodes is None and not opt(info, "--nnodes"):
            nnodes = 1
        return nproc * nnodes if nproc and nnodes else None
    if name == "deepspeed":
        pool = ctx.hostfile_entries
        if pool is None:
            if include and _known(include[1]) and all(_INCLUDE_SEGMENT.match(s) for s in include[1].split("@")):
                sel = _filter(include[1])
                if all(v is not None for v in sel.values()):
                    return sum(len(v) for v in sel.values())  # type: ignore[arg-type]
            return nproc if nproc and (nnodes in (None, 1)) else None
        active = {h: list(range(s)) for h, s in pool.items()}
        if include and _known(include[1]):
            sel = _filter(include[1])
            active = {h: (slots if slots is not None else active[h]) for h, slots in sel.items() if h in active}
        elif exclude and _known(exclude[1]):
            for h, slots in _filter(exclude[1]).items():
                if h in active:
                    active[h] = [] if slots is None else [s for s in active[h] if s not in slots]
            active = {h: s for h, s in active.items() if s}
        hosts = list(active.items())
        if nnodes:
            hosts = hosts[:nnodes]
        return sum(min(len(s), nproc) if nproc else len(s) for _, s in hosts) or None
    if name == "srun":
        tasks = opt(info, "-n", "--ntasks")
        if tasks and _int(tasks[1]):
            return _int(tasks[1])
        return nproc * nnodes if nproc and nnodes else None
    if name == "mpirun":
        np_ = opt(info, "-np", "-n", "--np")
        return _int(np_[1]) if np_ else None
    return None
