"""`distdx fix --from-log`: repairs filled from the diagnosis of lab logs (tests/diagnose/logs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from distdx.errors import DistdxError
from distdx.fix.fromlog import fixes_from_log

LOGS = Path(__file__).resolve().parents[1] / "diagnose" / "logs"
CONFIG = '{\n  "train_batch_size": 16,\n  "train_micro_batch_size_per_gpu": 4,\n  "gradient_accumulation_steps": 1\n}\n'


def test_bad_deepspeed_config_gets_the_config_diff_for_the_runs_world_size(tmp_path: Path) -> None:
    config = tmp_path / "ds.json"
    config.write_text(CONFIG)
    result = fixes_from_log([str(LOGS / "lab-bad-deepspeed-config.log")], config=str(config))
    assert result.fix_pattern == "F3"
    (f3,) = [r for r in result.repairs if r.pattern == "F3"]
    assert '+  "train_batch_size": 8,' in f3.diff  # 4 x 1 x the log's 2 ranks
    assert config.read_text() == CONFIG  # shown, not applied
    assert not [r for r in result.repairs if r.pattern == "F4"]  # every rank reads the same config


def test_a_rank_that_died_first_is_the_node_to_check() -> None:
    result = fixes_from_log([str(LOGS / "lab-rank-killed.log")])
    (f4,) = [r for r in result.repairs if r.pattern == "F4"]
    assert "rank 1" in f4.title and f4.command.startswith("distdx doctor --hostfile")


def test_port_in_use_gets_launch_settings() -> None:
    result = fixes_from_log([str(LOGS / "lab-master-port-in-use.log")])
    (f1,) = [r for r in result.repairs if r.pattern == "F1"]
    assert any("MASTER_PORT" in s for s in f1.settings) and not f1.applied


def test_a_log_without_failure_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "ok.log"
    log.write_text("step 1 loss 2.3\nstep 2 loss 2.1\ntraining finished\n")
    with pytest.raises(DistdxError) as e:
        fixes_from_log([str(log)])
    assert e.value.code == "DX-FIX-005"


OOM_CONFIG = ('{\n  "train_micro_batch_size_per_gpu": 8,\n  "gradient_accumulation_steps": 4,\n  "bf16": {"enabled": true},\n'
              '  "zero_optimization": {\n    "stage": 1\n  }\n}\n')


def test_out_of_memory_gets_the_cheapest_change_estimate_says_fits(tmp_path: Path) -> None:
    import json

    from distdx.estimate import estimate, shape_from_params
    from distdx.fix.fromlog import _ds_setup

    config = tmp_path / "ds.json"
    config.write_text(OOM_CONFIG)
    shape = shape_from_params(7_000_000_000)
    result = fixes_from_log([str(LOGS / "torchrun-rank-prefix-oom.log")], config=str(config), model=shape)
    (f5,) = [r for r in result.repairs if r.pattern == "F5"]
    assert "79.1 GiB" in f5.why  # the capacity the out-of-memory message states
    assert config.read_text() == OOM_CONFIG  # shown, not applied
    # by the estimate, the original does not fit the 79.15 GiB GPU and the repaired config does, with
    # the global batch kept; the change is the one the reason names
    capacity, world = int(79.15 * 2**30), 4  # the log's ranks 0..3
    original = json.loads(OOM_CONFIG)
    repaired = json.loads(f5.file_fix.fixed)
    assert repaired != original and f5.diff.startswith("--- ")
    assert estimate(shape, _ds_setup(original, world, 2048), gpu_memory=capacity).fits is False
    after = _ds_setup(repaired, world, 2048)
    if any("checkpointing" in s for s in f5.settings):  # not a DeepSpeed setting: said, not edited
        after = after.with_changes(checkpointing="selective")
    assert estimate(shape, after, gpu_memory=capacity).fits is True
    batch = lambda c: c["train_micro_batch_size_per_gpu"] * c.get("gradient_accumulation_steps", 1)  # noqa: E731
    assert batch(repaired) == batch(original)
    if repaired["train_micro_batch_size_per_gpu"] != original["train_micro_batch_size_per_gpu"]:
        assert f"micro batch {original['train_micro_batch_size_per_gpu']} -> " \
               f"{repaired['train_micro_batch_size_per_gpu']}" in f5.why


def test_auto_values_are_fixed_when_the_log_shows_deepspeed_read_the_config_itself(tmp_path: Path) -> None:
    config = tmp_path / "ds.json"
    config.write_text('{\n  "train_micro_batch_size_per_gpu": "auto",\n  "gradient_accumulation_steps": 1,\n'
                      '  "optimizer": {"type": "SGD", "params": {"lr": 0.01}}\n}\n')
    # the lab's deepspeed_config_file.py run on that config under torchrun (2 ranks, CPU)
    log = Path(__file__).parent / "logs" / "lab-ds-auto-batch.log"
    (f3,) = [r for r in fixes_from_log([str(log)], config=str(config)).repairs if r.pattern == "F3"]
    assert '+  "train_micro_batch_size_per_gpu": 1,' in f3.diff
    assert [f.code for f in f3.file_fix.applied] == ["LINT-DS-021"]
    # the same log through the Hugging Face Trainer: "auto" is theirs to fill, nothing to repair
    hf_log = tmp_path / "hf.log"
    hf_log.write_text(log.read_text().replace("deepspeed/__init__.py", "transformers/integrations/deepspeed.py", 1))
    assert not [r for r in fixes_from_log([str(hf_log)], config=str(config)).repairs if r.pattern == "F3"]


MISSING_API = """Traceback (most recent call last):
  File "/home/user/ColossalAI/examples/images/diffusion/main.py", line 804, in <module>
    trainer.fit(model, data)
  File "/opt/conda/lib/python3.9/site-packages/colossalai/nn/parallel/utils.py", line 51, in get_static_torch_model
    config_dict, _ = ChunkManager.search_chunk_size(model, **search_range)
AttributeError: type object 'ChunkManager' has no attribute 'search_chunk_size'
"""


def test_a_missing_api_gets_the_releases_that_have_it_as_constraints(tmp_path: Path) -> None:
    from packaging.requirements import Requirement

    log = tmp_path / "run.log"
    log.write_text(MISSING_API)
    result = fixes_from_log([str(log)])
    assert result.fix_pattern == "F2"
    (f2,) = [r for r in result.repairs if r.pattern == "F2"]
    pins = [Requirement(line) for line in f2.constraints.splitlines() if line and not line.startswith("#")]
    (pin,) = [p for p in pins if p.name == "colossalai"]
    # the API exists in the releases the table's API history names, and in none after them
    assert pin.specifier.contains("0.1.10") and not pin.specifier.contains("0.2.0")
    assert "search_chunk_size" in f2.why and f2.command.startswith("pip install -c ") and not f2.applied


def test_the_constraints_file_is_written_only_where_asked_and_never_over_a_file(tmp_path: Path) -> None:
    import subprocess
    import sys

    log = tmp_path / "run.log"
    log.write_text(MISSING_API)
    out = tmp_path / "constraints.txt"
    cmd = [sys.executable, "-m", "distdx", "fix", "--from-log", str(log), "--constraints-out", str(out)]
    first = subprocess.run(cmd, capture_output=True, text=True)
    assert "colossalai>=" in out.read_text() and f"-c {out}" in first.stdout
    out.write_text("mine\n")
    again = subprocess.run(cmd, capture_output=True, text=True)
    assert again.returncode == 2 and "DX-PATH-001" in again.stderr and out.read_text() == "mine\n"


P2P_LOG = """[rank1]: Traceback (most recent call last):
[rank1]:   File "train.py", line 12, in <module>
[rank1]:     dist.all_reduce(t)
[rank1]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error, NCCL version 2.20.5
[rank1]: ncclUnhandledCudaError: Call to CUDA function failed.
[rank1]: Cuda failure 'peer access is not supported between these two devices'
"""
LAUNCH = "#!/bin/bash\nset -e\nNCCL_DEBUG=WARN\ntorchrun --nproc-per-node 2 train.py\n"


def test_concrete_environment_settings_are_written_into_the_launch_script_only_on_request(tmp_path: Path) -> None:
    log, script = tmp_path / "run.log", tmp_path / "launch.sh"
    log.write_text(P2P_LOG)
    script.write_text(LAUNCH)
    result = fixes_from_log([str(log)], script=str(script))
    (in_script,) = [r for r in result.repairs if r.pattern == "F1" and r.file_fix is not None]
    assert "+export NCCL_P2P_DISABLE=1" in in_script.diff and "--unsafe-fixes" in in_script.command
    assert [f.kind for f in in_script.file_fix.applied] == ["unsafe"]
    assert script.read_text() == LAUNCH  # shown, not applied


def test_fix_from_log_write_needs_unsafe_fixes_and_keeps_a_backup(tmp_path: Path) -> None:
    from distdx.cli import main

    log, script = tmp_path / "run.log", tmp_path / "launch.sh"
    log.write_text(P2P_LOG)
    script.write_text(LAUNCH)
    assert main(["fix", "--from-log", str(log), "--script", str(script), "--write"]) == 2
    assert script.read_text() == LAUNCH and not (tmp_path / "launch.sh.bak").exists()
    main(["fix", "--from-log", str(log), "--script", str(script), "--write", "--unsafe-fixes"])
    assert "export NCCL_P2P_DISABLE=1" in script.read_text()
    assert (tmp_path / "launch.sh.bak").read_text() == LAUNCH
