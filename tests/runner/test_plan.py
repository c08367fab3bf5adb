"""What `distdx run` adds to a launch, per launcher, without overriding the user's choices."""

import sys
from pathlib import Path

import pytest

from distdx.errors import DistdxError
from distdx.runner import plan_run
from distdx.runner.plan import AUTOLOAD_DIR


def test_torchrun_gets_per_rank_logs_and_debug_env(tmp_path):
    plan = plan_run(["torchrun", "--nproc-per-node", "2", "train.py", "--lr", "1"], out_dir=tmp_path, environ={},
                    torch_version="2.13.0+cpu")
    assert plan.launcher == "torchrun"
    assert plan.argv[:5] == ("torchrun", "--log-dir", str(tmp_path / "torchrun"), "--tee", "3")
    assert plan.argv[5:] == ("--nproc-per-node", "2", "train.py", "--lr", "1")
    assert plan.env["PYTHONFAULTHANDLER"] == "1"
    assert plan.env["TORCH_FR_BUFFER_SIZE"] == "2000"
    assert plan.env["TORCH_FR_DUMP_TEMP_FILE"] == str(tmp_path / "nccl_trace_rank_")
    assert "TORCH_NCCL_TRACE_BUFFER_SIZE" not in plan.env  # torch 2.13 warns on every rank when it is set
    assert "TORCHELASTIC_ERROR_FILE" not in plan.env  # torchrun sets one per worker under --log-dir
    assert "DISTDX_GUARD" not in plan.env


def test_python_module_torchrun_and_user_log_options_are_kept(tmp_path):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--log-dir", "/mine", "--nproc-per-node", "2", "t.py"]
    plan = plan_run(cmd, out_dir=tmp_path, environ={})
    assert plan.launcher == "torchrun" and plan.argv == tuple(cmd)


@pytest.mark.parametrize(("version", "names"), [
    ("2.4.1", ("TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")),
    ("2.9.0+cu128", ("TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")),
    ("2.10.0", ("TORCH_FR_BUFFER_SIZE", "TORCH_FR_DUMP_TEMP_FILE")),
    ("", ("TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")),  # torch not installed here
])
def test_flight_recorder_variable_names_follow_the_torch_release(tmp_path, version, names):
    plan = plan_run(["python", "t.py"], out_dir=tmp_path, environ={}, torch_version=version)
    recorder = {k for k in plan.env if k.startswith(("TORCH_FR_", "TORCH_NCCL_"))}
    assert recorder == set(names)


def test_user_environment_is_never_overridden(tmp_path):
    plan = plan_run(["python", "t.py"], out_dir=tmp_path, torch_version="2.13.0",
                    environ={"PYTHONFAULTHANDLER": "0", "TORCH_NCCL_TRACE_BUFFER_SIZE": "5"})
    assert "PYTHONFAULTHANDLER" not in plan.env
    assert not {"TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE"} & set(plan.env)  # either name is the user's choice
    assert plan.env["TORCHELASTIC_ERROR_FILE"] == str(tmp_path / "error.json")
    assert plan.launcher == "python"


def test_deepspeed_gets_each_rank_log(tmp_path):
    plan = plan_run(["deepspeed", "--num_gpus", "2", "train.py"], out_dir=tmp_path, environ={})
    assert plan.launcher == "deepspeed"
    assert plan.argv[1] == f"--enable_each_rank_log={tmp_path / 'ranks'}"
    kept = plan_run(["deepspeed", "--enable_each_rank_log=/x", "train.py"], out_dir=tmp_path, environ={})
    assert kept.argv == ("deepspeed", "--enable_each_rank_log=/x", "train.py")


def test_guard_puts_sitecustomize_first_on_pythonpath(tmp_path):
    plan = plan_run(["python", "t.py"], out_dir=tmp_path, guard=True, guard_options={"hang_s": "30"},
                    environ={"PYTHONPATH": "/user/lib"})
    parts = plan.env["PYTHONPATH"].split(":")
    assert parts[0] == str(AUTOLOAD_DIR) and parts[-1] == "/user/lib"
    assert (Path(parts[0]) / "sitecustomize.py").is_file()
    assert plan.env["DISTDX_GUARD"] == "1" and plan.env["DISTDX_GUARD_HANG_S"] == "30"
    assert plan.env["DISTDX_GUARD_DIR"] == str(tmp_path / "guard")


def test_other_launchers_only_get_environment(tmp_path):
    plan = plan_run(["srun", "-N2", "python", "t.py"], out_dir=tmp_path, environ={})
    assert plan.launcher == "other" and plan.argv == ("srun", "-N2", "python", "t.py")


def test_empty_command_is_a_clear_error(tmp_path):
    with pytest.raises(DistdxError) as e:
        plan_run([], out_dir=tmp_path)
    assert e.value.code == "DX-RUN-001" and "torchrun" in e.value.hint
