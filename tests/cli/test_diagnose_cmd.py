"""`distdx diagnose` end to end, through the real console script."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "logs"
DISTDX = [sys.executable, "-m", "distdx"]


def run(*args, stdin=None):
    return subprocess.run([*DISTDX, *args], input=stdin, capture_output=True, timeout=120,
                          env={**os.environ, "PYTHONIOENCODING": "utf-8"})


def test_json_contract_on_bundled_example():
    p = run("diagnose", str(EXAMPLES / "deepspeed-zero3-oom.log"), "--format", "json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    cls = out["classification"]
    for dim in ("stage", "symptom", "root_cause", "fix_pattern"):
        assert len(cls[dim]) >= 3 and all({"id", "score"} <= set(h) for h in cls[dim])
    ff = out["first_failure"]
    assert ff == cls["first_failure"]
    assert ff["rank"] == 6 and ff["host"] == "worker-1" and "CUDA out of memory" in ff["text"]
    assert isinstance(ff["line"], int)
    assert out["evidence"] and out["fixes"]


def test_directory_of_per_rank_files_names_the_crashing_rank():
    p = run("diagnose", str(EXAMPLES / "torchrun-nccl-timeout"), "--format", "json")
    assert p.returncode == 0, p.stderr
    ff = json.loads(p.stdout)["first_failure"]
    assert ff["rank"] == 2 and "illegal memory access" in ff["text"]


def test_stdin_and_text_output():
    p = run("diagnose", "-", stdin=b"[rank1]: RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled system error\n")
    assert p.returncode == 0, p.stderr
    text = p.stdout.decode()
    assert text.startswith("distdx: ") and "first failure: rank 1" in text and "fix:" in text


def test_markdown_redacts_secrets():
    log = b"export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz12\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    p = run("diagnose", "-", "--format", "markdown", stdin=log)
    assert p.returncode == 0
    assert b"hf_abcdefghijklmnopqrstuvwxyz12" not in p.stdout and b"## distdx diagnosis" in p.stdout


@pytest.mark.parametrize("content,code", [(b"", "DX-LOGS-007"), (b"\x00\x01\x02\xff" * 64, "DX-LOGS-008")])
def test_bad_input_is_a_message_not_a_traceback(tmp_path, content, code):
    f = tmp_path / "bad.log"
    f.write_bytes(content)
    p = run("diagnose", str(f))
    assert p.returncode == 2
    err = p.stderr.decode()
    assert code in err and "fix:" in err and "Traceback" not in err


def test_missing_file():
    p = run("diagnose", "/nonexistent/distdx.log")
    assert p.returncode == 2 and b"Traceback" not in p.stderr and b"no such file" in p.stderr
