"""Run a :class:`RunPlan`: capture, forward signals, keep the exit code, diagnose a failure."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from distdx.errors import DistdxError
from distdx.runner.plan import RunPlan


@dataclass(frozen=True)
class RunResult:
    plan: RunPlan
    exit_code: int
    signal: str | None  # the signal that ended the launcher, if one did
    duration_s: float
    output_log: str  # the combined output, as the job wrote it
    timestamped_log: str  # the same lines, each with the UTC time distdx received it
    rank_logs: tuple[str, ...] = ()
    error_files: tuple[str, ...] = ()
    guard_files: tuple[str, ...] = ()
    guard_problems: int = 0  # warning and error events the guard wrote
    diagnosis: Any = None  # distdx.diagnose.Diagnosis when the job failed (or the guard found problems) and diagnosis ran
    diagnosis_error: str = ""
    interrupted: bool = False
    timed_out: bool = False

    @property
    def failed(self) -> bool:
        return self.exit_code != 0

    def diagnosed_files(self) -> list[str]:
        files = [self.output_log, *self.guard_files, *self.error_files]
        if not any(n.startswith("torchrun keeps per-rank") for n in self.plan.notes):
            files.extend(self.rank_logs)  # their output is not in the combined log
        return [f for f in files if os.path.isfile(f) and os.path.getsize(f) > 0]

    def to_dict(self) -> dict:
        out = {
            "command": list(self.plan.argv),
            "launcher": self.plan.launcher,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "duration_s": round(self.duration_s, 3),
            "interrupted": self.interrupted,
            "timed_out": self.timed_out,
            "out_dir": self.plan.out_dir,
            "output_log": self.output_log,
            "timestamped_log": self.timestamped_log,
            "rank_logs": list(self.rank_logs),
            "error_files": list(self.error_files),
            "guard_files": list(self.guard_files),
            "guard_problems": self.guard_problems,
            "env_added": dict(self.plan.env),
            "diagnosis": self.diagnosis.to_dict() if self.diagnosis is not None else None,
        }
        if self.diagnosis_error:
            out["diagnosis_error"] = self.diagnosis_error
        return out


class _Tee:
    """Copies the job's bytes to a stream as they come and to two logs line by line."""

    def __init__(self, fd: int, echo: IO[bytes] | None, raw: IO[bytes], timed: IO[bytes]) -> None:
        self.fd = fd
        self.echo = echo
        self.raw = raw
        self.timed = timed
        self.partial = b""

    def run(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            if self.echo is not None:
                try:
                    self.echo.write(chunk)
                    self.echo.flush()
                except (OSError, ValueError):
                    self.echo = None  # the console went away; keep capturing
            self.raw.write(chunk)
            lines = (self.partial + chunk).split(b"\n")
            self.partial = lines.pop()
            stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3].encode() + b"Z "
            for line in lines:
                self.timed.write(stamp + line + b"\n")
        if self.partial:
            stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3].encode() + b"Z "
            self.timed.write(stamp + self.partial + b"\n")
        self.raw.flush()
        self.timed.flush()


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _collect(out: Path, since: float) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """This run's files under ``out``: an earlier run into the same folder left its own behind."""

    def fresh(paths) -> list[str]:
        kept = []
        for p in paths:
            try:
                if p.is_file() and p.stat().st_mtime >= since:
                    kept.append(str(p))
            except OSError:
                continue
        return sorted(kept)

    rank_logs = fresh(out.glob("torchrun/**/*.log")) + fresh(out.glob("ranks/*.log"))
    error_files = fresh(out.glob("torchrun/**/error.json")) + fresh([out / "error.json"])
    guard_files = fresh(out.glob("guard/guard-rank*.jsonl"))
    return tuple(rank_logs), tuple(error_files), tuple(guard_files)


def _clear_previous_run(out: Path) -> None:
    """The guard appends to its per-rank files and @record writes error.json only on failure: an
    earlier run's copies in the same folder would be read as this run's."""
    for p in (*out.glob("guard/guard-rank*.jsonl"), out / "error.json"):
        try:
            p.unlink()
        except FileNotFoundError:
            continue
        except OSError as e:
            raise DistdxError(
                "DX-RUN-005",
                f"cannot remove {p}, left by an earlier run in {out}",
                why=str(e),
                hint="pass a new folder with --out",
            ) from None


def execute(
    plan: RunPlan,
    *,
    echo: IO[bytes] | None = None,
    diagnose: bool = True,
    timeout_s: float | None = None,
    grace_s: float = 10.0,
) -> RunResult:
    """Run the job to its end (or ``timeout_s``), copying its output to ``echo`` (a binary stream)."""
    out = Path(plan.out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DistdxError(
            "DX-RUN-002",
            f"cannot create the output folder {out}",
            why=str(e),
            hint="pass a writable folder with --out",
        ) from None
    _clear_previous_run(out)
    started_at = time.time() - 1.0  # file times have coarse resolution on some file systems
    env = dict(os.environ)
    env.update(plan.env)
    output_log = out / "output.log"
    timed_log = out / "output.timestamped.log"
    read_fd, write_fd = os.pipe()
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(plan.argv), env=env, stdin=subprocess.DEVNULL, stdout=write_fd, stderr=write_fd, start_new_session=True
        )
    except OSError as e:
        os.close(read_fd)
        os.close(write_fd)
        raise DistdxError(
            "DX-RUN-003",
            f"cannot start {plan.argv[0]!r}",
            why=str(e),
            hint="check the command after `--` (is the launcher installed and on PATH?)",
        ) from None
    os.close(write_fd)
    pgid = proc.pid
    interrupts = [0]
    timed_out = False

    def forward(signum: int, _frame: object) -> None:
        interrupts[0] += 1
        sig = signum if interrupts[0] == 1 else signal.SIGTERM if interrupts[0] == 2 else signal.SIGKILL
        _kill_group(pgid, sig)

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, forward)
    with open(output_log, "wb") as raw, open(timed_log, "wb") as timed:
        tee = _Tee(read_fd, echo, raw, timed)
        reader = threading.Thread(target=tee.run, name="distdx-run-tee", daemon=True)
        reader.start()
        try:
            deadline = None if timeout_s is None else start + timeout_s
            while True:
                try:
                    proc.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    if deadline is not None and time.monotonic() > deadline and not timed_out:
                        timed_out = True
                        _kill_group(pgid, signal.SIGTERM)
                        deadline = time.monotonic() + grace_s
                    elif timed_out and deadline is not None and time.monotonic() > deadline:
                        _kill_group(pgid, signal.SIGKILL)
                        deadline = None
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            # workers the launcher left behind still hold the pipe open: end them
            if _group_alive(pgid):
                _kill_group(pgid, signal.SIGTERM)
                end = time.monotonic() + grace_s
                while _group_alive(pgid) and time.monotonic() < end:
                    time.sleep(0.1)
                _kill_group(pgid, signal.SIGKILL)
            reader.join(timeout=grace_s)
            os.close(read_fd)
    duration = time.monotonic() - start
    code = proc.returncode
    sig_name = None
    if code < 0:
        try:
            sig_name = signal.Signals(-code).name
        except ValueError:
            sig_name = f"signal {-code}"
        code = 128 - code
    rank_logs, error_files, guard_files = _collect(out, started_at)
    result = RunResult(
        plan=plan,
        exit_code=code,
        signal=sig_name,
        duration_s=duration,
        output_log=str(output_log),
        timestamped_log=str(timed_log),
        rank_logs=rank_logs,
        error_files=error_files,
        guard_files=guard_files,
        guard_problems=_guard_problems(guard_files),
        interrupted=interrupts[0] > 0,
        timed_out=timed_out,
    )
    # a job that ran to the end with NaNs or drifting replicas still deserves the diagnosis
    if not diagnose or not (result.failed or result.guard_problems):
        return result
    return _with_diagnosis(result)


def _guard_problems(files: tuple[str, ...]) -> int:
    from distdx.guard.events import read_events

    count = 0
    for f in files:
        try:
            count += sum(1 for e in read_events(f) if e.severity in ("warning", "error"))
        except DistdxError:
            continue  # unreadable: the diagnosis says so
    return count


def _with_diagnosis(result: RunResult) -> RunResult:
    from dataclasses import replace

    try:
        from distdx.diagnose import diagnose_files
    except ImportError as e:
        return replace(result, diagnosis_error=f"diagnosis is not available: {e}")
    files = result.diagnosed_files()
    if not files:
        return replace(result, diagnosis_error="the job wrote nothing to diagnose")
    try:
        return replace(result, diagnosis=diagnose_files(files))
    except DistdxError as e:
        return replace(result, diagnosis_error=e.message)
