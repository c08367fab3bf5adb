"""The bash subset that launch scripts use, read without running anything."""

from __future__ import annotations

import pytest

from distdx.lint import LintOptions, lint_text
from distdx.lint.shell import MAX_GROWTH, bash_syntax_error, parse_script

SCRIPT = """#!/bin/bash
GPUS_PER_NODE=8
NNODES=${SLURM_NNODES:-"2"}
WORLD_SIZE=$(($GPUS_PER_NODE*$NNODES))
TP=2
ARGS=(
    --nproc_per_node $GPUS_PER_NODE  # per node
    --nnodes $NNODES
)
MODEL=(
  --tensor-model-parallel-size $TP
  # --pipeline-model-parallel-size 4
)
MODEL+=(--num-layers 24)
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun ${ARGS[@]} pretrain_gpt.py \\
    ${MODEL[@]} \\
    --data-path $1 && echo done
"""


def test_variables_arrays_arithmetic_and_continuations() -> None:
    script = parse_script(SCRIPT)
    assert script.variables["WORLD_SIZE"] == "16" and script.variables["NNODES"] == "2"
    assert script.variables["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"
    first, second = script.commands
    assert first.argv == ("torchrun", "--nproc_per_node", "8", "--nnodes", "2", "pretrain_gpt.py",
                          "--tensor-model-parallel-size", "2", "--num-layers", "24", "--data-path", "$1")
    assert first.line == 16 and second.argv == ("echo", "done")


def test_world_size_comes_from_the_script() -> None:
    report = lint_text(SCRIPT, "train.sh")
    assert report.world_size == 16
    assert not report.has_errors


def test_env_prefix_and_unknown_values_stay_unknown() -> None:
    script = parse_script("CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node $NPROC train.py\n")
    cmd = script.commands[0]
    assert cmd.env == {"CUDA_VISIBLE_DEVICES": "0,1"} and cmd.argv[2] == "$NPROC"
    assert not lint_text("torchrun --nproc_per_node $NPROC --master_port $PORT train.py\n", "x.sh").findings


def test_unterminated_quote_is_a_syntax_finding_when_bash_agrees() -> None:
    assert parse_script('deepspeed --include "w0 train.py\n').unreadable == [1]
    report = lint_text('deepspeed --include "w0 train.py\n', "x.sh")
    assert [(f.code, f.line) for f in report.findings] == [("LINT-SYN-001", 1)]
    assert "matching" in report.findings[0].message  # bash's own words


def test_what_bash_accepts_is_never_a_syntax_error() -> None:
    script = "echo $'it\\'s'\ntorchrun --nproc_per_node 8 train.py\n"
    assert bash_syntax_error(script) is None
    assert not [f for f in lint_text(script, "x.sh").findings if f.code == "LINT-SYN-001"]


def test_deepspeed_world_size_from_hostfile_and_filters(tmp_path) -> None:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("w0 slots=8\nw1 slots=8\nw2 slots=4\n")
    opts = LintOptions(hostfile=str(hostfile))
    assert lint_text("deepspeed train.py\n", "a.sh", opts).world_size == 20
    assert lint_text("deepspeed --exclude w2 train.py\n", "a.sh", opts).world_size == 16
    assert lint_text("deepspeed --include w0:0,1@w2 train.py\n", "a.sh", opts).world_size == 6
    assert lint_text("deepspeed --num_nodes 1 --num_gpus 2 train.py\n", "a.sh", opts).world_size == 2


def test_world_sizes_of_other_launchers() -> None:
    for cmd, world in (("python -m torch.distributed.run --nproc-per-node=4 --nnodes=2 t.py", 8),
                       ("colossalai run --nproc_per_node 4 --host h1,h2 t.py", 8),
                       ("srun -n 16 python t.py", 16), ("srun --nodes=2 --ntasks-per-node=4 python t.py", 8),
                       ("mpirun -np 4 python t.py", 4), ("torchrun --standalone --nproc_per_node 2 t.py", 2),
                       ("torchrun --nnodes 1:4 --nproc_per_node 8 t.py", None)):
        assert lint_text(cmd + "\n", "a.sh").world_size == world, cmd


def test_deepspeed_config_gets_the_world_size_of_the_command_that_runs_it(tmp_path) -> None:
    cfg = tmp_path / "ds.json"
    cfg.write_text('{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1}')
    script = tmp_path / "run.sh"
    script.write_text("deepspeed --num_gpus 8 pretrain_gpt.py --tensor-model-parallel-size 2 "
                      f"--num-layers 4 --deepspeed_config {cfg.name}\n")
    from distdx.lint import lint

    report = lint([str(script), str(cfg)])
    codes = {f.code for f in report.findings}
    assert "LINT-DS-010" in codes  # DP = 8 / TP 2 = 4, so 32 != 4 * 1 * 4
    cfg.write_text('{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1}')
    assert not lint([str(script), str(cfg)]).has_errors


def test_growth_and_huge_arithmetic_stay_bounded_and_unknown():
    text = "V=x\n" + "V=$V$V$V$V\n" * 200 + "torchrun --nproc_per_node $V t.py\nN=$(( 9999999999 * 9999999999 * 9999999999 ))\n"
    script = parse_script(text)
    assert len(script.variables["V"]) <= MAX_GROWTH + 10
    assert "N" not in script.variables or not script.variables["N"].isdigit()  # past 64 bits: not a known value


def test_a_config_written_by_a_heredoc_is_checked_against_the_scripts_launch() -> None:
    script = ('MBS=2\nGBS=16\ncat <<EOT > ds.json\n{"train_batch_size": $GBS, "train_micro_batch_size_per_gpu": $MBS,\n'
              ' "gradient_accumulation_steps": 3}\nEOT\ndeepspeed --num_gpus 8 train.py --deepspeed ds.json\n')
    report = lint_text(script, "launch.sh")
    batch = [f for f in report.findings if f.code == "LINT-DS-010"]
    assert batch and batch[0].file == "launch.sh" and batch[0].line == 4  # the heredoc's line in the script
    assert "8" in batch[0].message  # the launch's own world size
    quoted = script.replace("<<EOT", "<<'EOT'")  # no expansion: "$GBS" stays, a template
    assert not any(f.code == "LINT-DS-010" for f in lint_text(quoted, "launch.sh").findings)
    fine = script.replace('"gradient_accumulation_steps": 3', '"gradient_accumulation_steps": 1')
    assert not any(f.severity == "error" for f in lint_text(fine, "launch.sh").findings)


def test_a_quoted_array_expansion_is_one_word_per_element() -> None:
    script = parse_script('ARGS=(--nnodes 2 --node_rank "0")\nMODEL=(--num-layers "24" \'--seq-length\' 4096)\n'
                          'torchrun "${ARGS[@]}" pretrain_gpt.py "${MODEL[@]}" "${MODEL[*]}"\n')
    argv = script.commands[0].argv
    assert argv[:10] == ("torchrun", "--nnodes", "2", "--node_rank", "0", "pretrain_gpt.py", "--num-layers", "24",
                         "--seq-length", "4096")
    assert len(argv) == 11  # "${A[*]}" joins the elements into one word
