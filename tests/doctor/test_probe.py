"""The real probe reads this machine without importing torch, and binds ports for real."""

import socket
import subprocess
import sys

import pytest

from distdx.doctor.probe import (bind_port, deepspeed_op_compatibility, facts, parse_driver_version,
                                 parse_nvidia_smi, probe)


def test_probe_reads_this_machine():
    env = probe(environ={"PATH": "/usr/bin:/bin:/usr/local/bin", "MASTER_ADDR": "127.0.0.1"})
    assert env.platform == sys.platform
    assert env.python_version.startswith(f"{sys.version_info.major}.{sys.version_info.minor}")
    assert "lo" in env.interfaces
    assert env.master_addr_ip == "127.0.0.1"
    assert env.disk_free_bytes and env.disk_free_bytes > 0
    assert env.gpus is not None or env.gpu_probe_error  # either readings or the reason
    f = facts(env)
    assert set(f["env"]) == {"MASTER_ADDR"}  # PATH and anything else stays private


def test_probe_does_not_import_torch():
    code = ("import sys; from distdx.doctor.engine import doctor; r = doctor(); "
            "print('torch' in sys.modules, len(r.checks))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    imported, count = out.stdout.split()
    assert imported == "False" and int(count) >= 25


def test_bind_port_really_binds():
    with socket.socket() as holder:
        holder.bind(("", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        assert "in use" in (bind_port(port) or "")
    assert bind_port(port) is None


def test_master_port_in_use_fails_the_check():
    with socket.socket() as holder:
        holder.bind(("", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        env = probe(environ={"MASTER_PORT": str(port)})
    assert env.master_port_probed and "in use" in env.master_port_error
    launched = probe(environ={"MASTER_PORT": str(port), "TORCHELASTIC_RUN_ID": "x"})
    assert not launched.master_port_probed


@pytest.mark.slow
@pytest.mark.deepspeed
def test_deepspeed_op_builders_answer_like_ds_report():
    pytest.importorskip("deepspeed", reason="asks DeepSpeed's own op builders")
    verdicts, error = deepspeed_op_compatibility(timeout=120)
    assert error is None and verdicts
    assert "cpu_adam" in verdicts and "async_io" in verdicts
    # async_io links libaio; its verdict must agree with the libaio probe of DOC-DS-003
    assert verdicts["async_io"] == probe().libaio


def test_driver_version_from_proc_text():
    closed = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
              "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n")
    opened = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder@U16)\n"
    assert parse_driver_version(closed) == "535.104.05"
    assert parse_driver_version(opened) == "550.54.15"
    assert parse_driver_version("no driver here") is None


def test_nvidia_smi_csv():
    csv = ("0, NVIDIA A100-SXM4-80GB, GPU-6e5b1c2d-1111-2222-3333-444455556666, 81920, 3, 535.104.05\n"
           "1, NVIDIA A100-SXM4-40GB, GPU-7f6c2d3e-1111-2222-3333-444455556666, 40960, 30210, 535.104.05\n")
    gpus, driver = parse_nvidia_smi(csv)
    assert driver == "535.104.05"
    assert [(g.index, g.memory_total_mib, g.memory_used_mib) for g in gpus] == [(0, 81920, 3), (1, 40960, 30210)]
    assert parse_nvidia_smi("No devices were found\n") == ((), None)
