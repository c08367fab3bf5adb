"""Multi-node doctor: reach every host of a hostfile over SSH, run the doctor there, compare.

SSH runs non-interactively (``BatchMode=yes``: a password or passphrase prompt fails instead of
hanging) with a connect timeout, and the whole remote run is bounded. A node that cannot be
reached gets a verdict that says why (refused, timed out, key rejected, unknown host) and what to
do; the reports of the reachable nodes go to :func:`~distdx.doctor.compare.compare_reports`.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import shlex
import subprocess
import time
from dataclasses import dataclass

from distdx.doctor.compare import Comparison, compare_reports
from distdx.errors import DistdxError
from distdx.doctor.hostfile import HostEntry
from distdx.doctor.models import DoctorReport

DEFAULT_REMOTE_COMMAND = "distdx doctor --format json"

# (fragment of ssh's stderr, what it means, how to fix)
_SSH_ERRORS = (
    ("Connection refused", "nothing listens for SSH there", "start sshd on the node or pass the right --ssh-port"),
    ("timed out", "no answer before the connect timeout (firewall, wrong address, node down)",
     "check the address and that port 22 is open between the nodes"),
    ("Could not resolve hostname", "the host name does not resolve from here",
     "fix DNS or /etc/hosts, or use the IP address in the hostfile"),
    ("Permission denied", "the key was refused and BatchMode forbids a password prompt",
     "set up passwordless keys: ssh-copy-id HOST (launchers need it on every node)"),
    ("REMOTE HOST IDENTIFICATION HAS CHANGED",
     "the node's host key is not the one recorded in known_hosts (a reinstalled node, a reused address, or "
     "someone in the middle)",
     "confirm with the node's admin that it was reinstalled, then `ssh-keygen -R HOST` and connect once to "
     "record the new key; do not turn StrictHostKeyChecking off"),
    ("Host key verification failed", "the host key is unknown or changed",
     "connect once interactively (or ssh-keyscan HOST >> ~/.ssh/known_hosts)"),
    ("No route to host", "the network has no path to the node", "check routing and interfaces"),
)


@dataclass(frozen=True)
class NodeResult:
    host: str
    reachable: bool
    report: DoctorReport | None
    error: str | None = None
    hint: str | None = None
    elapsed_s: float = 0.0

    def to_dict(self) -> dict:
        return {"host": self.host, "reachable": self.reachable, "error": self.error, "hint": self.hint,
                "elapsed_s": round(self.elapsed_s, 3), "report": self.report.to_dict() if self.report else None}


@dataclass(frozen=True)
class MultiNodeReport:
    nodes: tuple[NodeResult, ...]
    comparison: Comparison

    @property
    def failed(self) -> bool:
        return any(not n.reachable or n.report is None or n.report.failed for n in self.nodes)

    def to_dict(self) -> dict:
        return {"nodes": [n.to_dict() for n in self.nodes], "comparison": self.comparison.to_dict(),
                "ok": not self.failed}


def ssh_command(host: str, remote: str, *, port: int | None = None, connect_timeout: int = 5,
                ssh_config: str | None = None) -> list[str]:
    cmd = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={connect_timeout}", "-o", "LogLevel=ERROR"]
    if ssh_config is not None:
        cmd += ["-F", ssh_config]
    if port is not None:
        cmd += ["-p", str(port)]
    if host.startswith("-"):  # parse_hostfile refuses these; this guards every other caller
        raise DistdxError("DX-HOSTFILE-001", f"bad host name {host!r}: it starts with `-`",
                          why="ssh would read it as an option, not as the host to connect to",
                          hint="pass the node's name or address")
    return cmd + ["--", host, remote]


def _explain(stderr: str, host: str) -> tuple[str, str]:
    last = next((line for line in reversed(stderr.strip().splitlines()) if line.strip()), "ssh failed")
    for fragment, why, hint in _SSH_ERRORS:
        if fragment.lower() in stderr.lower():
            return f"{last.strip()} ({why})", hint.replace("HOST", host)
    return last.strip(), "run the same ssh command by hand to see what it asks for"


def check_node(host: str, *, port: int | None = None, connect_timeout: int = 5, run_timeout: float = 60.0,
               remote_command: str = DEFAULT_REMOTE_COMMAND, ssh_config: str | None = None) -> NodeResult:
    start = time.perf_counter()
    cmd = ssh_command(host, remote_command, port=port, connect_timeout=connect_timeout, ssh_config=ssh_config)
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=connect_timeout + run_timeout, check=False)
    except subprocess.TimeoutExpired:
        return NodeResult(host, True, None, f"the remote doctor did not finish within {run_timeout:g} s",
                          "run it on the node by hand: " + shlex.join(cmd), time.perf_counter() - start)
    except OSError as e:
        return NodeResult(host, False, None, f"cannot run ssh: {e}", "install an OpenSSH client",
                          time.perf_counter() - start)
    elapsed = time.perf_counter() - start
    if out.returncode == 255:
        error, hint = _explain(out.stderr, host)
        return NodeResult(host, False, None, error, hint, elapsed)
    if out.returncode == 127:
        return NodeResult(host, True, None, f"`{remote_command}` not found on {host}",
                          "install distdx in the environment the job uses there, or pass --remote-command "
                          "with the full path (e.g. /path/to/venv/bin/distdx doctor --format json)", elapsed)
    try:
        report = DoctorReport.from_dict(json.loads(out.stdout))
    except (json.JSONDecodeError, TypeError, KeyError, AttributeError):
        tail = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["no output"]
        return NodeResult(host, True, None, f"remote doctor gave no JSON report (exit {out.returncode}): {tail[0]}",
                          "check that distdx on the node is recent and `--format json` works there", elapsed)
    return NodeResult(host, True, report, None, None, elapsed)


def doctor_nodes(entries: list[HostEntry], *, port: int | None = None, connect_timeout: int = 5,
                 run_timeout: float = 60.0, remote_command: str = DEFAULT_REMOTE_COMMAND,
                 ssh_config: str | None = None) -> MultiNodeReport:
    with cf.ThreadPoolExecutor(max_workers=min(16, max(1, len(entries)))) as pool:
        results = list(pool.map(lambda e: check_node(e.host, port=port, connect_timeout=connect_timeout,
                                                     run_timeout=run_timeout, remote_command=remote_command,
                                                     ssh_config=ssh_config),
                                entries))
    reports = {r.host: r.report for r in results if r.report is not None}
    return MultiNodeReport(nodes=tuple(results), comparison=compare_reports(reports))
