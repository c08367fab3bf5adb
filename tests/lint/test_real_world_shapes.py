"""Shapes of real launch scripts and configs that lint used to get wrong (false errors)."""

from __future__ import annotations

import json
import subprocess

from distdx.lint.shell import parse_script


def _lint(tmp_path, name, text, *args):
    import sys

    path = tmp_path / name
    path.write_text(text)
    run = subprocess.run([sys.executable, "-m", "distdx", "lint", str(path), "--format", "json", *args],
                         capture_output=True, text=True, timeout=120)
    return run, json.loads(run.stdout) if run.stdout.strip().startswith("{") else None


MULTILINE = '''#!/bin/bash
TP=4
GPT_ARGS="
    --tensor-model-parallel-size $TP \\
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \\
    --group-query-attention --num-query-groups 8 \\
    --seq-length 4096 --max-position-embeddings 4096 \\
    --micro-batch-size 1 --global-batch-size 64
"
torchrun --nproc_per_node 8 pretrain_gpt.py $GPT_ARGS
'''


def test_a_multi_line_double_quoted_string_is_one_word_as_in_bash(tmp_path):
    assert subprocess.run(["bash", "-n"], input=MULTILINE, text=True).returncode == 0
    script = parse_script(MULTILINE)
    assert "--num-query-groups 8" in " ".join(script.variables["GPT_ARGS"].split())
    run, out = _lint(tmp_path, "train.sh", MULTILINE)
    codes = [f["code"] for f in out["findings"]]
    assert "LINT-SYN-001" not in codes and run.returncode == 0, codes


def test_variables_set_in_both_arms_of_an_if_are_not_taken_from_one_arm():
    script = parse_script('if [ -n "$BIG" ]; then\n  TP=8\nelse\n  TP=2\nfi\nPP=2\n')
    assert "TP" not in script.variables and script.variables["PP"] == "2"
    same = parse_script('if [ -n "$X" ]; then\n  TP=4\nelse\n  TP=4\nfi\n')
    assert same.variables["TP"] == "4"


def test_comment_keys_and_autotuning_lists_are_not_errors(tmp_path):
    config = {"_comment": "ZeRO-2 for 8 GPUs", "comment": "see the docs", "train_micro_batch_size_per_gpu": "auto",
              "gradient_accumulation_steps": 1, "zero_optimization": {"stage": [0, 1, 2, 3]},
              "autotuning": {"enabled": True}, "bf16": {"enabled": True}}
    run, out = _lint(tmp_path, "ds.json", json.dumps(config))
    assert run.returncode == 0 and not [f for f in out["findings"] if f["severity"] == "error"], out["findings"]
    config["zero_optimization"]["stage"] = [0, 4]  # the autotuner would try stage 4, which does not exist
    run, out = _lint(tmp_path, "ds.json", json.dumps(config))
    assert "LINT-DS-007" in [f["code"] for f in out["findings"]] or "LINT-DS-006" in [f["code"] for f in out["findings"]]
    del config["autotuning"]  # without the autotuner a list is not a stage
    run, out = _lint(tmp_path, "ds.json", json.dumps(config))
    assert "LINT-DS-005" in [f["code"] for f in out["findings"]]
