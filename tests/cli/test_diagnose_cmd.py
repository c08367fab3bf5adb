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


HOSTILE = (b"node07.cluster.internal: [rank3]: RuntimeError: NCCL error: unhandled system error, "
           b"remote 10.20.30.40 token=ghp_abcdefghijklmnopqrstuvwxyz0123456789\n")


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_redact_hosts_works_in_every_format(fmt):
    p = run("diagnose", "-", "--format", fmt, "--redact-hosts", stdin=HOSTILE)
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode()
    assert "node07" not in out and "10.20.30.40" not in out and "ghp_abcdefghij" not in out
    if fmt == "json":
        assert json.loads(out)["first_failure"]["rank"] == 3


def test_json_redacts_secrets_by_default_and_no_redact_keeps_them():
    redacted = run("diagnose", "-", "--format", "json", stdin=HOSTILE)
    assert b"ghp_abcdefghij" not in redacted.stdout and json.loads(redacted.stdout)
    kept = run("diagnose", "-", "--format", "json", "--no-redact", stdin=HOSTILE)
    assert b"ghp_abcdefghijklmnopqrstuvwxyz0123456789" in kept.stdout and b"node07" in kept.stdout


@pytest.mark.parametrize("stdin", [b"  \n\n\t\n", b"epoch 1 loss 0.52\nepoch 2 loss 0.41\nsaved checkpoint to ./out\n"])
def test_no_failure_in_the_input_has_its_own_exit_code(stdin):
    p = run("diagnose", "-", stdin=stdin)
    assert p.returncode == 4, p.stdout
    assert p.stdout.decode().startswith("distdx: No failure found")
    assert "4 no failure found" in run("diagnose", "--help").stdout.decode().replace("\n", " ").replace("  ", " ")


REGRESSION = (b"Using ZeRO stage 3 with offload_optimizer device cpu\n[rank1]: Traceback (most recent call last):\n"
              b'[rank1]:   File "/opt/venv/lib/python3.10/site-packages/deepspeed/runtime/zero/stage3.py", line 2100, '
              b"in step\n[rank1]: RuntimeError: Expected all tensors to be on the same device, but found at least two "
              b"devices, cuda:1 and cpu!\nexport HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz012345\n")


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_fix_shows_the_repairs_after_the_diagnosis(fmt):
    p = run("diagnose", "-", "--fix", "--format", fmt, stdin=REGRESSION)
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode()
    if fmt == "json":
        data = json.loads(out)
        f2 = next(r for r in data["repairs"] if r["pattern"] == "F2")
        assert "deepspeed!=0.14.1,!=0.14.2" in f2["settings"]
        assert data["classification"]["fix_pattern"][0]["id"] == "F2"
    else:
        assert "[F2] a compatible version set" in out and "deepspeed!=0.14.1,!=0.14.2" in out
        assert "distdx fix --from-log LOG --constraints-out PATH" in out
    if fmt != "text":  # shareable formats keep redacting
        assert "hf_abcdefghij" not in out
    # without --fix nothing of it shows, and the JSON has no repairs field
    plain = run("diagnose", "-", "--format", fmt, stdin=REGRESSION).stdout.decode()
    assert "deepspeed!=0.14.1" not in plain and '"repairs"' not in plain


def test_fix_on_a_log_without_failure_keeps_exit_4():
    p = run("diagnose", "-", "--fix", stdin=b"epoch 1 loss 0.52\nsaved checkpoint to ./out\n")
    assert p.returncode == 4 and b"no repair follows" in p.stdout
