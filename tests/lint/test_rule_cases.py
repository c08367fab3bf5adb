"""Every lint rule: one input that trips it and a near miss that must not (the meta-test checks coverage)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from distdx.lint import LintOptions, lint_rules, lint_text

B = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1}


def ds(**kw) -> tuple[str, str]:
    return json.dumps({**B, **kw}), "ds_config.json"


def z(**kw) -> tuple[str, str]:
    return ds(zero_optimization=kw)


def sh(text: str) -> tuple[str, str]:
    return "#!/bin/bash\n" + text + "\n", "launch.sh"


MEG_BASE = ("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 24 --hidden-size 2048 --num-attention-heads 16 "
            "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 2 --global-batch-size 64 ")


def meg(extra: str, base: str = MEG_BASE) -> tuple[str, str]:
    return sh(base + extra)


def cai(call: str) -> tuple[str, str]:
    return f"from colossalai.booster.plugin import HybridParallelPlugin, LowLevelZeroPlugin\nplugin = {call}\n", "train.py"


def acc(text: str, name: str = "default_config.yaml") -> tuple[str, str]:
    return text, name


ACC_CORPUS = Path(__file__).parent / "corpus" / "accelerate"
FSDP = "distributed_type: FSDP\nnum_processes: 8\nfsdp_config:\n"
DSPEED = "distributed_type: DEEPSPEED\nnum_processes: 8\ndeepspeed_config:\n"
MULTI_NODE = "distributed_type: MULTI_GPU\nnum_machines: 2\nnum_processes: 16\n"

W8 = {"world_size": 8}
# code: (tripping input, passing near miss, LintOptions kwargs)
CASES: dict[str, tuple[tuple[str, str], tuple[str, str], dict]] = {
    "LINT-SYN-001": (('{"train_batch_size": 8 "x": 1}', "c.json"), ('{"train_batch_size": 8, "x": 1}', "c.json"), {}),
    "LINT-SYN-002": (('{"train_batch_size": 8, // global\n}', "c.json"), ('{"train_batch_size": 8}', "c.json"), {}),
    "LINT-SYN-003": (('{"train_batch_size": 8, "train_batch_size": 16}', "c.json"),
                     ('{"train_batch_size": 8, "fp16": {"train_batch_size": 16}}', "c.json"), {}),
    "LINT-SYN-004": (('[{"train_batch_size": 8}]', "c.json"), ('{"train_batch_size": 8}', "c.json"), {}),
    "LINT-SYN-005": (('{"train_batch_size": GBSIZE, "zero_optimization": {"stage": ZERO_STAGE}}', "c.json"),
                     ('{"train_batch_size": 8, "zero_optimization": {"stage": 2}}', "c.json"), {}),
    "LINT-DS-001": (z(stage=2, overlap_com=True), z(stage=2, overlap_comm=True), W8),
    "LINT-DS-002": (ds(zero_optimisation={"stage": 2}), ds(zero_optimization={"stage": 2}), W8),
    "LINT-DS-003": (ds(my_custom_flag=True), ds(steps_per_print=10), W8),
    "LINT-DS-004": (ds(amp={"enabled": True}), ds(fp16={"enabled": True}), W8),
    "LINT-DS-005": (ds(gradient_clipping="1.0"), ds(gradient_clipping=1.0), W8),
    "LINT-DS-006": (z(stage=2, reduce_bucket_size=0), z(stage=2, reduce_bucket_size=1), W8),
    "LINT-DS-007": (z(stage=4), z(stage=3), W8),
    "LINT-DS-008": (z(stage=2, cpu_offload=True), z(stage=2, offload_optimizer={"device": "cpu"}), W8),
    "LINT-DS-010": (ds(train_batch_size=64), ds(train_batch_size=32), W8),
    "LINT-DS-011": (('{"train_batch_size": 40, "train_micro_batch_size_per_gpu": 4}', "c.json"),
                    ('{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4}', "c.json"), W8),
    "LINT-DS-012": (('{"gradient_accumulation_steps": 2}', "c.json"),
                    ('{"gradient_accumulation_steps": 2, "train_micro_batch_size_per_gpu": 1}', "c.json"), {}),
    "LINT-DS-013": (ds(train_batch_size=32), ds(train_batch_size=32), {}),
    "LINT-DS-020": (ds(fp16={"enabled": True}, bf16={"enabled": True}),
                    ds(fp16={"enabled": False}, bf16={"enabled": True}), W8),
    "LINT-DS-021": (ds(gradient_clipping="auto"), ds(gradient_clipping="auto"), {**W8, "hf": False}),
    "LINT-DS-053": (ds(gradient_clipping="auto"), ds(gradient_clipping="auto"), W8),
    "LINT-DS-030": (z(stage=2, offload_param={"device": "cpu"}), z(stage=3, offload_param={"device": "cpu"}), W8),
    "LINT-DS-031": (z(stage=0, offload_optimizer={"device": "cpu"}), z(stage=1, offload_optimizer={"device": "cpu"}), W8),
    "LINT-DS-032": (z(stage=3, offload_param={"device": "nvme"}),
                    z(stage=3, offload_param={"device": "nvme", "nvme_path": "/local_nvme"}), W8),
    "LINT-DS-033": (z(stage=2, offload_optimizer={"device": "cpu", "ratio": 0.3}),
                    z(stage=3, offload_optimizer={"device": "cpu", "ratio": 0.3}), W8),
    "LINT-DS-034": (z(stage=2, stage3_max_live_parameters=10**9), z(stage=3, stage3_max_live_parameters=10**9), W8),
    "LINT-DS-035": (z(stage=3, compute_grad_norm=False), z(stage=2, compute_grad_norm=False), W8),
    "LINT-DS-036": (ds(gradient_allreduce_op="sum", zero_optimization={"stage": 3}),
                    ds(gradient_allreduce_op="sum", zero_optimization={"stage": 2}), W8),
    "LINT-DS-037": (ds(bf16={"enabled": True, "bf16_master_weights_and_grads": True}),
                    ds(bf16={"enabled": True, "bf16_master_weights_and_grads": True}, zero_optimization={"stage": 1}), W8),
    "LINT-DS-040": (ds(optimizer={"type": "AdamWW"}), ds(optimizer={"type": "RMSprop"}), W8),
    "LINT-DS-041": (ds(optimizer={"type": "Lamb"}, zero_optimization={"stage": 2}),
                    ds(optimizer={"type": "Lamb"}, zero_optimization={"stage": 2}, zero_allow_untested_optimizer=True), W8),
    "LINT-DS-042": (ds(scheduler={"type": "WarmupLinearLR"}), ds(scheduler={"type": "WarmupCosineLR"}), W8),
    "LINT-DS-054": (ds(optimizer={"type": "AdamW", "params": {"lr": "3e-4x", "betas": [0.9]}}),
                    ds(optimizer={"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95], "eps": 1e-8}}), W8),
    "LINT-DS-043": (ds(optimizer={"type": "AdamW", "params": {"max_grad_norm": 1.0}}),
                    ds(optimizer={"type": "AdamW", "params": {"lr": 1e-3}}, gradient_clipping=1.0), W8),
    "LINT-DS-050": (ds(fp16={"enabled": True, "min_loss_scale": 0}),
                    ds(fp16={"enabled": True, "loss_scale": 128, "min_loss_scale": 0}), W8),
    "LINT-DS-051": (ds(gradient_clipping=-0.5), ds(gradient_clipping=0.0), W8),
    "LINT-MEG-001": (meg("--tensor-model-parallel-size 4 --pipeline-model-parallel-size 3"),
                     meg("--tensor-model-parallel-size 4 --pipeline-model-parallel-size 2"), {}),
    "LINT-MEG-002": (meg("--pipeline-model-parallel-size 8 --num-layers 30"),
                     meg("--pipeline-model-parallel-size 8 --num-layers 32"), {}),
    "LINT-MEG-003": (meg("--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 5"),
                     meg("--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 4"), {}),
    "LINT-MEG-004": (meg("--hidden-size 2050"), meg("--hidden-size 2050 --kv-channels 128"), {}),
    "LINT-MEG-005": (meg("--num-attention-heads 12 --tensor-model-parallel-size 8 --global-batch-size 8"),
                     meg("--num-attention-heads 16 --tensor-model-parallel-size 8 --global-batch-size 8"), {}),
    "LINT-MEG-006": (meg("--group-query-attention --num-query-groups 3 --tensor-model-parallel-size 2"),
                     meg("--group-query-attention --num-query-groups 8 --tensor-model-parallel-size 4"), {}),
    "LINT-MEG-014": (meg("--group-query-attention --num-query-groups 4 --tensor-model-parallel-size 8 "
                         "--num-attention-heads 32 --global-batch-size 8"),
                     meg("--group-query-attention --num-query-groups 8 --tensor-model-parallel-size 8 "
                         "--num-attention-heads 32 --global-batch-size 8"), {}),
    "LINT-MEG-007": (meg("--sequence-parallel"), meg("--sequence-parallel --tensor-model-parallel-size 2"), {}),
    "LINT-MEG-008": (meg("--global-batch-size 20"), meg("--global-batch-size 48"), {}),
    "LINT-MEG-009": (meg("--seq-length 4096"), meg("--seq-length 4096 --max-position-embeddings 4096"), {}),
    "LINT-MEG-010": (meg("--fp16 --bf16"), meg("--bf16"), {}),
    "LINT-MEG-011": (meg("--num-experts 8 --expert-model-parallel-size 3"),
                     meg("--num-experts 8 --expert-model-parallel-size 4"), {}),
    "LINT-MEG-012": (meg("--context-parallel-size 2 --seq-length 2046"),
                     meg("--context-parallel-size 2 --seq-length 2048"), {}),
    "LINT-MEG-013": (sh("python pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 4"),
                     sh("python pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 4"), {}),
    "LINT-CAI-001": (cai("HybridParallelPlugin(tp_size=4, pp_size=3, num_microbatches=4)"),
                     cai("HybridParallelPlugin(tp_size=4, pp_size=2, num_microbatches=4)"), W8),
    "LINT-CAI-002": (cai("HybridParallelPlugin(tp_size=2, pp_size=1, zero_stage=3)"),
                     cai("HybridParallelPlugin(tp_size=2, pp_size=1, zero_stage=2)"), W8),
    "LINT-CAI-003": (cai("HybridParallelPlugin(tp_size=1, pp_size=2, zero_stage=2, num_microbatches=4)"),
                     cai("HybridParallelPlugin(tp_size=1, pp_size=2, zero_stage=1, num_microbatches=4)"), W8),
    "LINT-CAI-004": (cai("HybridParallelPlugin(tp_size=1, pp_size=2)"),
                     cai("HybridParallelPlugin(tp_size=1, pp_size=2, microbatch_size=1)"), W8),
    "LINT-CAI-005": (cai('HybridParallelPlugin(2, 1, precision="float16")'), cai('HybridParallelPlugin(2, 1, precision="fp16")'), W8),
    "LINT-CAI-006": (cai('HybridParallelPlugin(tp_size=2, pp_size=1, zero_stage=1, precision="fp32")'),
                     cai('HybridParallelPlugin(tp_size=2, pp_size=1, zero_stage=0, precision="fp32")'), W8),
    "LINT-CAI-007": (cai("HybridParallelPlugin(tp_size=2, pp_size=1, sp_size=2)"),
                     cai("HybridParallelPlugin(tp_size=2, pp_size=1, sp_size=2, enable_sequence_parallelism=True)"), W8),
    "LINT-MEG-015": (meg("--tensor-model-parallel-size 2 --checkpoint-activations --data-impl mmap"),
                     meg("--tensor-model-parallel-size 2 --recompute-activations --deepspeed --zero-stage 1"), W8),
    "LINT-CAI-009": (cai("HybridParallelPlugin(tp_size=2, pp_size=1, zero_stage=1, precison='bf16')"),
                     cai("HybridParallelPlugin(tp_size=2, pp_size=1, zero_stage=1, precision='bf16')"), W8),
    "LINT-CAI-008": (cai("HybridParallelPlugin(tp_size=2, pp_size=2, microbatch_size=1)"),
                     cai("HybridParallelPlugin(tp_size=2, pp_size=2, microbatch_size=1)"), {}),
    "LINT-LAUNCH-001": (sh('deepspeed --include "w0:0;1" train.py'), sh('deepspeed --include "w0:0,1@w1" train.py'), {}),
    "LINT-LAUNCH-002": (sh("deepspeed --include w0 --exclude w1 train.py"), sh("deepspeed --exclude w1 train.py"), {}),
    "LINT-LAUNCH-003": (sh("deepspeed --num_gpus 2 --include w0:0,1 train.py"), sh("deepspeed --num_gpus 2 train.py"), {}),
    "LINT-LAUNCH-004": (sh("CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 4 train.py"),
                        sh("CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun --nproc_per_node 4 train.py"), {}),
    "LINT-LAUNCH-005": (sh("torchrun --nnodes 2 --node_rank 2 --nproc_per_node 8 train.py"),
                        sh("torchrun --nnodes 2 --node_rank 1 --nproc_per_node 8 train.py"), {}),
    "LINT-LAUNCH-006": (sh("torchrun --nproc_per_node 8 --master_port 70000 train.py"),
                        sh("torchrun --nproc_per_node 8 --master_port 29500 train.py"), {}),
    "LINT-LAUNCH-007": (sh("torchrun --nproc_per_node 8 --master_port 80 train.py"),
                        sh("torchrun --nproc_per_node 8 --master_port 1024 train.py"), {}),
    "LINT-LAUNCH-008": (sh("deepspeed --include w9:0 train.py"), sh("deepspeed --include w1:7 train.py"), {"hostfile": True}),
    "LINT-LAUNCH-009": (sh("torchrun --nproc_per_node 0 train.py"), sh("torchrun --nproc_per_node gpu train.py"), {}),
    "LINT-ACC-001": (acc("distributed_type: MULTI_GPU\nnum_process: 8\n"), acc("distributed_type: MULTI_GPU\nnum_processes: 8\n"), {}),
    "LINT-ACC-002": (acc(FSDP + "  fsdp_offload_param: true\n"), acc(FSDP + "  offload_params: true\n"), {}),
    "LINT-ACC-003": (acc("distributed_type: NO\nmixed_precision: no\n"), acc("distributed_type: NO\nmixed_precision: 'no'\n"), {}),
    "LINT-ACC-004": (acc("num_machines: 1\nnum_processes: 8\n"), acc("distributed_type: MULTI_GPU\nnum_processes: 8\n"), {}),
    "LINT-ACC-005": (acc(MULTI_NODE + "main_process_ip: 10.0.0.1\nmachine_rank: 2\n"),
                     acc(MULTI_NODE + "main_process_ip: 10.0.0.1\nmachine_rank: 1\n"), {}),
    "LINT-ACC-006": (acc("distributed_type: MULTI_GPU\nnum_machines: 2\nnum_processes: 9\nmain_process_ip: 10.0.0.1\n"),
                     acc("distributed_type: MULTI_GPU\nnum_machines: 3\nnum_processes: 9\nmain_process_ip: 10.0.0.1\n"), {}),
    "LINT-ACC-007": (acc(MULTI_NODE), acc(MULTI_NODE + "main_process_ip: 10.0.0.1\n"), {}),
    "LINT-ACC-008": (acc(DSPEED + "  deepspeed_config_file: ds.json\n  zero_stage: 2\n"),
                     acc(DSPEED + "  deepspeed_config_file: ds.json\n  zero3_init_flag: true\n"), {}),
    "LINT-ACC-009": (acc(DSPEED + "  zero3_init_flag: true\n"), acc(DSPEED + "  zero3_init_flag: true\n  zero_stage: 3\n"), {}),
    "LINT-ACC-010": (acc(FSDP + "  fsdp_version: 2\n  fsdp_sharding_strategy: SHARD_GRAD_OP\n"),
                     acc(FSDP + "  fsdp_version: 1\n  fsdp_sharding_strategy: SHARD_GRAD_OP\n"), {}),
    "LINT-ACC-011": (acc("distributed_type: MULTI_GPU\ngpu_ids: '0'\nnum_processes: 2\n"),
                     acc("distributed_type: MULTI_GPU\ngpu_ids: 0,1\nnum_processes: 2\n"), {}),
    "LINT-ACC-012": (acc(FSDP + "  fsdp_sync_module_states: false\n"),
                     acc(FSDP + "  fsdp_sync_module_states: false\n  fsdp_cpu_ram_efficient_loading: false\n"), {}),
    "LINT-ACC-013": (acc((ACC_CORPUS / "broken" / "deepspeed_file_without_zero.yaml").read_text(),
                         str(ACC_CORPUS / "broken" / "deepspeed_file_without_zero.yaml")),
                     acc((ACC_CORPUS / "valid" / "handmade_deepspeed_file.yaml").read_text(),
                         str(ACC_CORPUS / "valid" / "handmade_deepspeed_file.yaml")), {}),
}


def _options(kw: dict, tmp_path) -> LintOptions:
    kw = dict(kw)
    if kw.pop("hostfile", False):
        hostfile = tmp_path / "hostfile"
        hostfile.write_text("w0 slots=8\nw1 slots=8\n")
        kw["hostfile"] = str(hostfile)
    return LintOptions(**kw)


def _codes(text: str, name: str, options: LintOptions) -> set[str]:
    return {f.code for f in lint_text(text, name, options).findings}


@pytest.mark.parametrize("code", sorted(CASES))
def test_rule_trips(code: str, tmp_path) -> None:
    (text, name), _, kw = CASES[code]
    assert code in _codes(text, name, _options(kw, tmp_path))


@pytest.mark.parametrize("code", sorted(CASES))
def test_rule_near_miss_passes(code: str, tmp_path) -> None:
    _, (text, name), kw = CASES[code]
    kw = dict(kw)
    # the "world size unknown" and "auto" rules pass once the missing fact is given
    if code in ("LINT-MEG-013", "LINT-CAI-008", "LINT-DS-013"):
        kw["world_size"] = 8
    if code in ("LINT-DS-021", "LINT-DS-053"):
        kw["hf"] = True
    assert code not in _codes(text, name, _options(kw, tmp_path))


def test_every_rule_has_cases() -> None:
    assert set(CASES) == set(lint_rules())
