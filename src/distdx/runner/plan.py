"""What `distdx run` will execute: the launcher, the options it adds, the environment it adds."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from distdx.errors import DistdxError

TORCHRUN_MODULES = ("torch.distributed.run", "torch.distributed.launch")
TORCHRUN_LOG_OPTIONS = ("--log-dir", "--log_dir", "--tee", "-t", "--redirects", "-r")
AUTOLOAD_DIR = Path(__file__).resolve().parent.parent / "guard" / "_autoload"
PACKAGE_PARENT = Path(__file__).resolve().parent.parent.parent
# The NCCL flight recorder's variables were renamed (TORCH_NCCL_TRACE_BUFFER_SIZE -> TORCH_FR_BUFFER_SIZE,
# TORCH_NCCL_DEBUG_INFO_TEMP_FILE -> TORCH_FR_DUMP_TEMP_FILE). Recent torch warns once per rank on the
# old names; older releases read only those. The new names go to a torch matching this (an older
# torch that already knows them just prints the warning).
FLIGHT_RECORDER_NEW_NAMES = ">=2.10"


@dataclass(frozen=True)
class RunPlan:
    argv: tuple[str, ...]
    """The command as it will run, with the launcher options distdx added."""
    env: dict[str, str]
    """Only the variables distdx adds or extends (merged over the caller's environment)."""
    launcher: str
    """torchrun | deepspeed | python | other"""
    out_dir: str
    guard: bool
    notes: tuple[str, ...] = field(default_factory=tuple)
    """One line per change, for people."""

    def to_dict(self) -> dict:
        return {
            "argv": list(self.argv),
            "env": dict(self.env),
            "launcher": self.launcher,
            "out_dir": self.out_dir,
            "guard": self.guard,
            "notes": list(self.notes),
        }


def _installed_torch() -> str:
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return ""


def _is_python(word: str) -> bool:
    name = os.path.basename(word)
    return name.startswith("python") and all(c.isdigit() or c == "." for c in name[len("python"):])


def _has_option(args: Sequence[str], names: Sequence[str]) -> bool:
    return any(a == n or a.startswith(n + "=") for a in args for n in names)


def _launcher(argv: Sequence[str]) -> tuple[str, int]:
    """The launcher kind and the index after which launcher options may be inserted."""
    first = os.path.basename(argv[0])
    if first == "torchrun":
        return "torchrun", 1
    if first == "deepspeed":
        return "deepspeed", 1
    if _is_python(argv[0]):
        if len(argv) > 2 and argv[1] == "-m" and argv[2] in TORCHRUN_MODULES:
            return "torchrun", 3
        if len(argv) > 2 and argv[1] == "-m" and argv[2] == "deepspeed.launcher.runner":
            return "deepspeed", 3
        return "python", 1
    return "other", 1


def plan_run(
    command: Sequence[str],
    *,
    out_dir: str | os.PathLike,
    guard: bool = False,
    guard_options: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    torch_version: str | None = None,
) -> RunPlan:
    """Plan a launch. ``guard_options`` are ``GuardConfig`` fields (``{"hang_s": "30"}``);
    ``torch_version`` (default: the installed torch's, read without importing it) picks the names
    of the flight recorder's variables."""
    if not command:
        raise DistdxError(
            "DX-RUN-001",
            "no command to run",
            why="`distdx run` wraps a launcher command given after `--`",
            hint="for example: distdx run --guard -- torchrun --nproc-per-node 2 train.py",
        )
    env_in = dict(os.environ if environ is None else environ)
    out = Path(out_dir).resolve()
    argv = list(command)
    launcher, insert_at = _launcher(argv)
    notes: list[str] = []
    launcher_args = argv[insert_at:]
    if launcher == "torchrun" and not _has_option(launcher_args, TORCHRUN_LOG_OPTIONS):
        argv[insert_at:insert_at] = ["--log-dir", str(out / "torchrun"), "--tee", "3"]
        notes.append(f"torchrun keeps per-rank stdout/stderr and error files under {out / 'torchrun'} (--log-dir, --tee 3)")
    elif launcher == "deepspeed" and not _has_option(launcher_args, ("--enable_each_rank_log",)):
        argv[insert_at:insert_at] = [f"--enable_each_rank_log={out / 'ranks'}"]
        notes.append(f"deepspeed writes one log per rank under {out / 'ranks'} (--enable_each_rank_log)")

    env: dict[str, str] = {}

    def add(key: str, value: str, why: str) -> None:
        if key in env_in:
            return
        env[key] = value
        notes.append(f"{key}={value}: {why}")

    add("PYTHONFAULTHANDLER", "1", "Python stacks of every thread on SIGSEGV/SIGABRT/SIGBUS")
    add("PYTHONUNBUFFERED", "1", "output reaches the log in the order it happened")
    if launcher != "torchrun":
        add("TORCHELASTIC_ERROR_FILE", str(out / "error.json"), "@record-decorated entry points write their exception here")
    buffer_vars, dump_vars = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"), ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
    from distdx.doctor.versions import satisfies

    version = torch_version if torch_version is not None else _installed_torch()
    renamed = satisfies(version, FLIGHT_RECORDER_NEW_NAMES) is True  # None: no torch here
    if not any(k in env_in for k in buffer_vars):
        add(buffer_vars[0 if renamed else 1], "2000", "NCCL flight recorder: the last 2000 collectives per rank")
    if not any(k in env_in for k in dump_vars):
        add(dump_vars[0 if renamed else 1], str(out / "nccl_trace_rank_"), "where the flight recorder dumps on a timeout")
    if guard:
        env["DISTDX_GUARD"] = "1"
        env["DISTDX_GUARD_DIR"] = str(out / "guard")
        for key, value in (guard_options or {}).items():
            env[f"DISTDX_GUARD_{key.upper()}"] = str(value)
        path = [str(AUTOLOAD_DIR), str(PACKAGE_PARENT)]
        if env_in.get("PYTHONPATH"):
            path.append(env_in["PYTHONPATH"])
        env["PYTHONPATH"] = os.pathsep.join(path)
        notes.append(f"distdx guard on in every Python process (sitecustomize), events in {out / 'guard'}")
    return RunPlan(argv=tuple(argv), env=env, launcher=launcher, out_dir=str(out), guard=guard, notes=tuple(notes))
