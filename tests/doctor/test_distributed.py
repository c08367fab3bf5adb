"""`distdx doctor --distributed` for real: torchrun, 3 gloo ranks on CPU, one rank made different."""

import json
import os
import socket
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="--distributed runs torch.distributed")

WRAPPER = """#!/bin/sh
# the odd rank out: only rank 2 gets NCCL_DEBUG
if [ "$RANK" = "2" ]; then export NCCL_DEBUG=INFO; fi
exec "{python}" -m distdx doctor --distributed --payload-mb 1 --timeout 60 "$@"
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(*args, env=None):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "3",
           "--master_addr", "127.0.0.1", "--master_port", str(free_port()), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240,
                          env={**os.environ, "GLOO_SOCKET_IFNAME": "lo", **(env or {})})


@pytest.mark.slow
def test_three_gloo_ranks_name_the_odd_rank(tmp_path):
    wrapper = tmp_path / "rank_wrapper.sh"
    wrapper.write_text(WRAPPER.format(python=sys.executable))
    wrapper.chmod(0o755)
    out = torchrun("--no-python", str(wrapper), "--format", "json")
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout[out.stdout.index("{"):])
    assert report["world_size"] == 3 and report["backend"] == "gloo"
    assert [r["rank"] for r in report["ranks"]] == [0, 1, 2]
    for r in report["ranks"]:
        smoke = r["smoke"]
        assert smoke["all_reduce_ok"] and smoke["all_gather_ok"] and smoke["broadcast_ok"], smoke
        assert smoke["bus_bandwidth_gbps"] > 0
        assert len(r["report"]["checks"]) >= 25
    assert report["odd_ranks"] == [2]
    diff = next(d for d in report["comparison"]["differences"] if d["key"] == "env.NCCL_DEBUG")
    assert diff["majority"] == "(unset)" and diff["odd"] == [report["comparison"]["odd_members"][0]]


@pytest.mark.slow
def test_a_failing_check_on_every_rank_fails_the_job():
    out = torchrun("-m", "distdx", "doctor", "--distributed", "--payload-mb", "1", "--only", "DOC-NCCL",
                   env={"NCCL_PROTO": "Fast"})
    assert out.returncode != 0
    assert "distributed doctor: 3 ranks, backend gloo" in out.stdout
    assert out.stdout.count("FAIL DOC-NCCL-003") == 3
    assert "all 3 ranks agree" in out.stdout


def test_srun_ranks_are_adopted_without_overriding_a_launcher():
    from distdx.doctor.distributed import adopt_slurm_ranks, in_launched_job

    environ = {"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1", "MASTER_ADDR": "10.0.0.1",
               "MASTER_PORT": "29500"}
    assert not in_launched_job(environ)
    adopt_slurm_ranks(environ)
    assert (environ["RANK"], environ["WORLD_SIZE"], environ["LOCAL_RANK"]) == ("5", "8", "1")
    assert in_launched_job(environ)
    launched = {"RANK": "0", "SLURM_PROCID": "3"}
    adopt_slurm_ranks(launched)
    assert launched["RANK"] == "0"
