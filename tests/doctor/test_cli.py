"""`distdx doctor` end to end: timing, exit codes, formats, --only, --list, bad input."""

import json
import os
import subprocess
import sys
import time

import pytest

from distdx.cli import main


def run_cli(*args, env=None, timeout=60):
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "distdx", "doctor", *args], capture_output=True, text=True,
                          timeout=timeout, env=full_env)


def test_doctor_is_fast_and_has_25_checks():
    start = time.perf_counter()
    out = run_cli("--format", "json")
    elapsed = time.perf_counter() - start
    assert elapsed < 5, f"distdx doctor took {elapsed:.2f} s"
    data = json.loads(out.stdout)
    assert len(data["checks"]) >= 25
    first = data["checks"][0]
    for key in ("code", "status", "severity", "message", "fix", "symptom", "root_cause", "fix_pattern"):
        assert key in first
    assert out.returncode == (1 if data["summary"]["fail"] else 0)


def test_failing_check_exits_1_and_text_shows_fix():
    out = run_cli("--only", "DOC-NCCL", env={"NCCL_DEBUG": "LOUD"})
    assert out.returncode == 1
    assert "FAIL DOC-NCCL-003" in out.stdout and "fix:" in out.stdout


def test_only_prefix_and_list(capsys):
    assert main(["doctor", "--only", "DOC-SYS-001,DOC-TOOL", "--format", "json"]) == 0
    codes = [c["code"] for c in json.loads(capsys.readouterr().out)["checks"]]
    assert codes == ["DOC-SYS-001", "DOC-TOOL-001", "DOC-TOOL-002", "DOC-TOOL-003"]
    assert main(["doctor", "--list"]) == 0
    listing = capsys.readouterr().out
    assert listing.count("DOC-") >= 25 and "DOC-NCCL-004" in listing


def test_unknown_only_code_is_a_clear_error(capsys):
    assert main(["doctor", "--only", "DOC-NOPE"]) == 2
    assert "error[DX-DOCTOR-002]" in capsys.readouterr().err


def test_markdown_redacts_secrets():
    out = run_cli("--format", "markdown", "--only", "DOC-NCCL-002",
                  env={"NCCL_SOCKET_IFNAMES": "eth0", "NCCL_IB_HCA": "mlx5_0",
                       "TORCH_NCCL_TRACE_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz123456"})
    assert "### Environment" in out.stdout and "| DOC-NCCL-002 | warn |" in out.stdout
    assert "NCCL_IB_HCA=mlx5_0" in out.stdout
    assert "hf_abcdefghijklmnop" not in out.stdout and "[REDACTED]" in out.stdout


@pytest.mark.parametrize("content,code", [("worker-1 slots=x\n", "DX-HOSTFILE-001"), (None, "DX-HOSTFILE-003"),
                                          (b"\xff\xfe\x00binary", "DX-HOSTFILE-003")])
def test_bad_hostfile_is_an_error_not_a_traceback(tmp_path, capsys, content, code):
    path = tmp_path / "hostfile"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    assert main(["doctor", "--hostfile", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"error[{code}]" in err and "Traceback" not in err


def test_distributed_outside_a_job_is_a_clear_error(capsys, monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    assert main(["doctor", "--distributed"]) == 2
    assert "torchrun" in capsys.readouterr().err


@pytest.mark.parametrize("option, value", [("--ssh-port", "0"), ("--ssh-port", "65536"), ("--ssh-timeout", "-1"),
                                           ("--ssh-timeout", "99999999999"), ("--ssh-port", "22x")])
def test_ssh_numbers_are_range_checked(tmp_path, option, value):
    hosts = tmp_path / "hosts"
    hosts.write_text("node1 slots=1\n")
    done = subprocess.run([sys.executable, "-m", "distdx", "doctor", "--hostfile", str(hosts), option, value],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and option in done.stderr and "Traceback" not in done.stderr
