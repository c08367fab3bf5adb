"""Run one scenario under torchrun, bounded in time, and collect what it produced.

Every process of a run carries a marker in its environment (``DISTDX_LAB_RUN``). torchrun starts
its workers in sessions of their own, so killing the launcher's process group is not enough: on
the way out the runner also kills every process that still carries the run's marker, and only
those. Logs go to a work directory that is removed afterwards unless the caller keeps it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from importlib import resources
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from distdx.errors import DistdxError
from distdx.lab.catalogue import Scenario, config_path, get_scenario, program_path

MARKER = "DISTDX_LAB_RUN"
COMBINED_LOG = "combined.log"
TAIL_CHARS = 4000
KILL_GRACE_S = 3.0


@dataclass(frozen=True)
class LabRun:
    """What one run of a scenario did."""

    scenario: str
    run_id: str
    """The value of ``DISTDX_LAB_RUN`` in every process of this run."""
    symptom: str
    """The taxonomy symptom the scenario reproduces (what a diagnosis should name first)."""
    command: tuple[str, ...]
    exit_code: int | None
    """The launcher's exit code; negative for a signal; None if it could not be started."""
    duration_s: float
    timed_out: bool
    """True when the run outlived the scenario's bound and was killed."""
    failed_as_expected: bool
    """A non-zero exit within the bound, with every expected log line present."""
    missing_log: tuple[str, ...]
    """Expected log regexes that did not occur."""
    workdir: str | None
    """The kept work directory, or None when it was removed after the run."""
    combined_log: str | None
    """Path of the launcher's combined stdout+stderr (None when not kept)."""
    rank_logs: tuple[str, ...]
    """Paths of the per-rank stdout/stderr files torchrun wrote (empty when not kept)."""
    log_tail: str
    diagnosis: dict | None = None
    """``Diagnosis.to_dict()`` of the combined log, when diagnosis was asked for and ran."""
    diagnosis_error: str | None = None
    leftover_processes: int = 0
    """Processes of the run still alive when the launcher exited, killed by the runner."""
    node_exit_codes: tuple[int | None, ...] = ()
    """Each node's launcher exit code, node 0 first (None: never started); one entry on one node."""

    @property
    def diagnosed_symptom(self) -> str | None:
        if not self.diagnosis:
            return None
        ranked = self.diagnosis.get("classification", {}).get("symptom") or []
        return ranked[0]["id"] if ranked else None

    def to_dict(self) -> dict[str, object]:
        return {
            "scenario": self.scenario,
            "run_id": self.run_id,
            "symptom": self.symptom,
            "command": list(self.command),
            "exit_code": self.exit_code,
            "duration_s": round(self.duration_s, 3),
            "timed_out": self.timed_out,
            "failed_as_expected": self.failed_as_expected,
            "missing_log": list(self.missing_log),
            "workdir": self.workdir,
            "combined_log": self.combined_log,
            "rank_logs": list(self.rank_logs),
            "leftover_processes": self.leftover_processes,
            "node_exit_codes": list(self.node_exit_codes),
            "log_tail": self.log_tail,
            "diagnosed_symptom": self.diagnosed_symptom,
            "diagnosis": self.diagnosis,
            "diagnosis_error": self.diagnosis_error,
        }


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _setup(scenario: Scenario, port: int) -> Iterator[None]:
    if scenario.setup == "occupy-master-port":
        holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            # bind like a server that is already running on the port: every address, this port
            holder.bind(("", port))
            holder.listen(1)
            yield
        finally:
            holder.close()
    else:
        yield


NODE_PREFIX = "node{}: "
# torchrun's prefix of each worker line: the global rank, so the merged log of two nodes says which
# rank wrote a line (the default, role and local rank, is the same on both nodes)
RANK_PREFIX_TEMPLATE = "[rank${rank}]:"


def _fill(text: str, ports: tuple[int, int]) -> str:
    """Placeholders of launcher arguments and node environments: the run's two ports and the
    folder of the scenario programs (where a node's own library versions live)."""
    folder = str(resources.files("distdx.lab").joinpath("scenarios"))
    return text.replace("{port2}", str(ports[1])).replace("{port}", str(ports[0])).replace("{scenarios}", folder)


def launch_command(scenario: Scenario, port: int, log_dir: Path, python: str | None = None, *, node: int = 0,
                   port2: int = 0, run_id: str = "lab") -> list[str]:
    """The torchrun command line of a scenario on one of its nodes (without any wrapper such as
    `distdx run`). One node: a single agent on MASTER_ADDR 127.0.0.1. Several: this node's agent,
    meeting the others through the c10d rendezvous on 127.0.0.1:``port``."""
    args = [python or sys.executable, "-m", "torch.distributed.run"]
    if scenario.nodes == 1:
        args += ["--nproc-per-node", str(scenario.world_size), "--master-addr", "127.0.0.1", "--master-port", str(port)]
    else:
        args += [
            "--nnodes", str(scenario.nodes), "--node-rank", str(node),
            "--nproc-per-node", str(scenario.procs_per_node),
            "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", run_id,
        ]
        log_dir = log_dir / f"node{node}"
    args += ["--max-restarts", "0", "--log-dir", str(log_dir), "--tee", "3"]
    extra = [*scenario.launcher_args, *(scenario.node_args[node] if scenario.node_args else ())]
    args += [_fill(a, (port, port2)) for a in extra]
    args.append(program_path(scenario))
    return args


def launch_env(scenario: Scenario, workdir: Path, run_id: str, extra_env: dict[str, str] | None = None, *,
               node: int = 0, ports: tuple[int, int] = (0, 0)) -> dict[str, str]:
    env = dict(os.environ)
    # a scenario is launched by the lab, never inside someone else's torchrun
    for inherited in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                      "GROUP_RANK", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_ERROR_FILE"):
        env.pop(inherited, None)
    env.update({"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", "LAB_WORKDIR": str(workdir)})
    inherited_path = env.pop("PYTHONPATH", "")
    if scenario.config:
        env["LAB_CONFIG"] = str(workdir / scenario.config)  # the runner's copy of the shipped config
    env.update({k: _fill(v, ports) for k, v in scenario.env.items()})
    if scenario.nodes > 1:
        env.update({"LAB_NODE": f"node{node}", "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": RANK_PREFIX_TEMPLATE})
        if scenario.node_env:
            env.update({k: _fill(v, ports) for k, v in scenario.node_env[node].items()})
    extra = dict(extra_env or {})
    # PYTHONPATH adds up: the node's own libraries first, then the caller's (the guard's
    # sitecustomize), then what this process had
    path = [env.pop("PYTHONPATH", ""), extra.pop("PYTHONPATH", ""), inherited_path]
    env.update(extra)
    if any(path):
        env["PYTHONPATH"] = os.pathsep.join(p for p in path if p)
    env[MARKER] = run_id
    return env


def marked_processes(run_id: str) -> list[int]:
    """PIDs of live processes whose environment carries this run's marker (Linux /proc)."""
    needle = f"{MARKER}={run_id}".encode()
    found = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone, or not ours
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _signal_all(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _reap(proc: subprocess.Popen, run_id: str) -> int:
    """Stop the launcher (if still running) and every process of the run; returns how many
    processes outlived the launcher and had to be killed."""
    if proc.poll() is None:  # still ours and unreaped: its process group is safe to signal
        os.killpg(proc.pid, signal.SIGTERM)  # torchrun forwards SIGTERM to its workers
        try:
            proc.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    leftovers = marked_processes(run_id)
    _signal_all(leftovers, signal.SIGKILL)
    return len(leftovers)


def _rank_logs(log_dir: Path) -> tuple[str, ...]:
    return tuple(sorted(str(p) for p in log_dir.rglob("*.log") if p.is_file()))


def _diagnose(paths: list[str]) -> tuple[dict | None, str | None]:
    try:
        from distdx.diagnose import diagnose_files

        return diagnose_files(paths).to_dict(), None
    except ImportError as e:  # the diagnosis engine (or the log reader it needs) is not installed
        return None, f"diagnosis unavailable: {e}"
    except DistdxError as e:
        return None, e.render()


INSTALL = {"torch": "pip install 'distdx[torch]' (or torch itself)",
           "deepspeed": "DS_BUILD_OPS=0 pip install deepspeed"}


def check_requirements(scenario: Scenario) -> None:
    """Refuse to run a scenario whose program would fail on a missing package, not on its fault."""
    import importlib.util

    missing = [m for m in scenario.requires if importlib.util.find_spec(m) is None]
    if missing:
        raise DistdxError(
            "DX-LAB-006", f"scenario {scenario.name} needs {', '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} not installed",
            why="its program imports them: without them it would fail on the import, not on the fault it injects",
            hint="; ".join(INSTALL.get(m, f"pip install {m}") for m in missing),
        )


def run_scenario(
    name: str,
    *,
    keep: str | os.PathLike | None = None,
    diagnose: bool = True,
    extra_env: dict[str, str] | None = None,
    wrapper: Sequence[str] = (),
    timeout_s: float | None = None,
) -> LabRun:
    """Run scenario ``name`` and return what happened.

    ``keep``: a directory to keep the logs and work files in (created; must be empty if it exists);
    without it they go to a temporary directory that is removed. ``extra_env`` is added to the
    scenario's environment; ``wrapper`` is put in front of the torchrun command (for example
    ``["distdx", "run", "--guard", "--"]``). ``timeout_s`` replaces the scenario's bound.
    """
    scenario = get_scenario(name)
    check_requirements(scenario)
    bound = float(timeout_s) if timeout_s is not None else scenario.timeout_s
    if keep is not None:
        workdir = Path(keep).resolve()
        if workdir.exists() and (not workdir.is_dir() or any(workdir.iterdir())):
            raise DistdxError(
                "DX-LAB-003",
                f"--keep directory {workdir} exists and is not an empty directory",
                why="a lab run writes its logs and checkpoints there and must not mix them with other files",
                hint="name a new or empty directory",
            )
        workdir.mkdir(parents=True, exist_ok=True)
    else:
        workdir = Path(tempfile.mkdtemp(prefix=f"distdx-lab-{scenario.name}-"))
    try:
        return _run_in(scenario, workdir, bound, keep is not None, diagnose, extra_env, wrapper)
    finally:
        if keep is None:
            shutil.rmtree(workdir, ignore_errors=True)


def _copy_lines(stream, node: int, out, lock: threading.Lock) -> None:
    """One node's launcher output into the combined log, each line prefixed with its node, as
    pdsh-style multi-node launchers do."""
    prefix = NODE_PREFIX.format(node).encode()
    for line in iter(stream.readline, b""):
        with lock:
            out.write(prefix + line)
            out.flush()
    stream.close()


def _start(command: list[str], workdir: Path, env: dict[str, str], stdout) -> subprocess.Popen:
    try:
        return subprocess.Popen(
            command, cwd=workdir, env=env, stdout=stdout, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
    except OSError as e:
        raise DistdxError(
            "DX-LAB-004",
            f"could not start {command[0]}: {e.strerror or e}",
            why="the lab runs each scenario as a subprocess",
            hint="check that the command exists and is executable",
        ) from None


NODE_STAGGER_S = 0.5  # node 0 first: it hosts the rendezvous store, as the first node of a real job does


def _run_in(
    scenario: Scenario,
    workdir: Path,
    bound: float,
    kept: bool,
    diagnose: bool,
    extra_env: dict[str, str] | None,
    wrapper: Sequence[str],
) -> LabRun:
    run_id = uuid.uuid4().hex
    port, port2 = free_port(), free_port()
    log_dir = workdir / "ranks"
    combined = workdir / COMBINED_LOG
    nodes = [n for n in range(scenario.nodes) if n not in scenario.absent_nodes]
    commands = {n: [*wrapper, *launch_command(scenario, port, log_dir, node=n, port2=port2, run_id=run_id)] for n in nodes}
    if scenario.config:
        shutil.copyfile(config_path(scenario), workdir / scenario.config)
    timed_out = False
    started = time.monotonic()
    procs: dict[int, subprocess.Popen] = {}
    copiers: list[threading.Thread] = []
    leftovers = 0
    lock = threading.Lock()
    with _setup(scenario, port), open(combined, "wb") as out:
        try:
            for n in nodes:
                env = launch_env(scenario, workdir, run_id, extra_env, node=n, ports=(port, port2))
                if scenario.nodes == 1:
                    procs[n] = _start(commands[n], workdir, env, out)
                    continue
                if procs:
                    time.sleep(NODE_STAGGER_S)
                procs[n] = _start(commands[n], workdir, env, subprocess.PIPE)
                copiers.append(threading.Thread(target=_copy_lines, args=(procs[n].stdout, n, out, lock), daemon=True))
                copiers[-1].start()
            for proc in procs.values():
                proc.wait(timeout=max(0.0, bound - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:  # also on Ctrl-C: never leave a rank of the run behind
            for proc in procs.values():
                leftovers += _reap(proc, run_id)
            for copier in copiers:
                copier.join(timeout=KILL_GRACE_S)
    duration = time.monotonic() - started
    node_codes = tuple(procs[n].returncode if n in procs else None for n in range(scenario.nodes))
    exit_code = next((c for c in node_codes if c), node_codes[0])
    text = combined.read_text(encoding="utf-8", errors="replace")
    missing = tuple(p for p in scenario.expect_log if not re.search(p, text))
    diagnosis, diagnosis_error = _diagnose([str(combined)]) if diagnose else (None, None)
    return LabRun(
        scenario=scenario.name,
        run_id=run_id,
        symptom=scenario.symptom,
        command=tuple(commands[nodes[0]]),
        exit_code=exit_code,
        duration_s=duration,
        timed_out=timed_out,
        failed_as_expected=(not timed_out and exit_code != 0 and not missing),
        missing_log=missing,
        workdir=str(workdir) if kept else None,
        combined_log=str(combined) if kept else None,
        rank_logs=_rank_logs(log_dir) if kept else (),
        log_tail=text[-TAIL_CHARS:],
        diagnosis=diagnosis,
        diagnosis_error=diagnosis_error,
        leftover_processes=leftovers,
        node_exit_codes=node_codes,
    )
