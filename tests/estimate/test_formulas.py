"""Every formula of distdx.estimate.formulas against a hand computation or a published figure."""

from __future__ import annotations

from pathlib import Path

import pytest

from distdx.estimate import Setup, shape_from_config
from distdx.estimate.terms import terms
from distdx.estimate.formulas import activation_bytes_per_layer, activations, inference, model_states, \
    optimizer_state_bytes
from distdx.estimate.models import ModelShape

CONFIGS = Path(__file__).parent / "configs"
PSI = 7_000_000_000


def shape(**kw) -> ModelShape:
    base = dict(params=PSI, layers=32, hidden=4096, heads=32, kv_heads=32, head_dim=128, ffn=11008, vocab=32000,
                largest_layer_params=131_072_000, source="test")
    return ModelShape(**{**base, **kw})


def states(**kw):
    return model_states(shape(), Setup(**kw))


# --- model states -------------------------------------------------------------------------------

def test_published_7b_bf16_adam_needs_16_bytes_per_param_112_gb() -> None:
    """ZeRO paper, section 3.1: mixed-precision Adam keeps 2+2+12 = 16 bytes per parameter;
    7B parameters -> 112 GB of model states without ZeRO."""
    s = states(dtype="bf16", optimizer="adam", zero_stage=0)
    assert s.gpu["total"] == 16 * PSI == 112_000_000_000
    assert (s.gpu["params"], s.gpu["gradients"], s.gpu["master_weights"], s.gpu["optimizer_states"]) == \
        (2 * PSI, 2 * PSI, 4 * PSI, 8 * PSI)


def test_zero_paper_figure_1_baseline() -> None:
    """ZeRO paper, figure 1: Psi = 7.5B, K = 12, N_d = 64: the data-parallel baseline holds 120 GB per GPU."""
    s = model_states(shape(params=7_500_000_000), Setup(zero_stage=0, dp=64, gpus_per_node=8, nodes=8))
    assert s.gpu["total"] == 120_000_000_000


def test_zero1_adds_deepspeeds_fp32_gradient_partition_to_the_paper() -> None:
    """The paper's P_os is 2Psi + 2Psi + 12Psi/N (31.4 GB in figure 1); DeepSpeed's ZeRO optimizer also
    keeps a 4-byte fp32 gradient partition, which distdx counts as its ZeRO-2/3 estimators do."""
    psi, n = 7_500_000_000, 64
    s = model_states(shape(params=psi), Setup(zero_stage=1, dp=n, gpus_per_node=8, nodes=8))
    paper = 4 * psi + 12 * psi / n
    assert s.gpu["total"] == int(paper + 4 * psi / n)
    assert round(paper / 1e9, 1) == 31.4


def test_zero1_and_2_with_optimizer_offload_keep_weights_on_the_gpu() -> None:
    one = states(zero_stage=1, dp=8, gpus_per_node=8, offload_optimizer="cpu")
    assert one.gpu["total"] == (2 + 2) * PSI  # stage 1 keeps the whole 16-bit gradients
    assert one.cpu == int(PSI * max(4 * 8, 16) * 1.5)
    two = states(zero_stage=2, dp=8, gpus_per_node=8, offload_optimizer="cpu")
    assert two.gpu["total"] == 2 * PSI and two.cpu == one.cpu
    sgd = states(zero_stage=2, dp=2, gpus_per_node=2, offload_optimizer="cpu", optimizer="sgd")
    assert sgd.cpu == int(PSI * max(4 * 2, 8) * 1.5)  # fp32 weights + fp32 grads, no states


def test_host_memory_without_offload_is_one_fp32_copy_per_process() -> None:
    assert states(zero_stage=0, gpus_per_node=4, dp=4).cpu == int(PSI * 4 * 4 * 1.5)
    assert states(zero_stage=2, gpus_per_node=4, dp=4, buffer_factor=1.0).cpu == PSI * 4 * 4


def test_zero2_and_3_breakdowns_sum_to_the_total() -> None:
    s2 = states(zero_stage=2, dp=8, gpus_per_node=8)
    assert s2.gpu["total"] == 2 * PSI + int(18 * PSI / 8)
    assert abs(sum(v for k, v in s2.gpu.items() if k != "total") - s2.gpu["total"]) <= 5
    s3 = states(zero_stage=3, dp=8, gpus_per_node=8)
    assert s3.gpu["total"] == 4 * 131_072_000 + int(18 * PSI / 8)
    assert abs(sum(v for k, v in s3.gpu.items() if k != "total") - s3.gpu["total"]) <= 5


def test_fp32_training_has_no_master_copy() -> None:
    s0 = states(dtype="fp32", zero_stage=0)
    assert s0.gpu["total"] == (4 + 4 + 8) * PSI and s0.gpu["master_weights"] == 0
    s2 = states(dtype="fp32", zero_stage=2, dp=4, gpus_per_node=4)
    assert s2.gpu["total"] == 4 * PSI + int((4 + 8) * PSI / 4)
    s3 = states(dtype="fp32", zero_stage=3, dp=4, gpus_per_node=4)
    assert s3.gpu["total"] == 4 * 131_072_000 + int((4 + 4 + 8) * PSI / 4)
    both = states(dtype="fp32", zero_stage=3, dp=4, gpus_per_node=4, offload_optimizer="cpu", offload_params="cpu")
    assert both.cpu == int(PSI * 16 * 1 * 1.5)


@pytest.mark.parametrize("optimizer,bytes_", [("adam", 8), ("adamw", 8), ("adam8bit", 2), ("sgd", 0),
                                              ("sgd-momentum", 4)])
def test_optimizer_state_bytes(optimizer: str, bytes_: int) -> None:
    assert optimizer_state_bytes(optimizer, shape()) == bytes_
    assert states(optimizer=optimizer, zero_stage=0).gpu["optimizer_states"] == bytes_ * PSI


def test_adafactor_keeps_factored_statistics_only() -> None:
    assert optimizer_state_bytes("adafactor", shape()) == pytest.approx(4 * (1 / 4096 + 1 / 11008))
    assert states(optimizer="adafactor").gpu["total"] < 8.01 * PSI


def test_tensor_and_pipeline_parallel_split_the_states() -> None:
    whole = states(zero_stage=0)
    split = states(zero_stage=0, tp=2, pp=2, gpus_per_node=4)
    assert split.gpu["total"] == whole.gpu["total"] // 4


def test_context_parallel_joins_the_zero_shard() -> None:
    s = states(zero_stage=2, cp=2, dp=4, gpus_per_node=8)
    assert s.gpu["total"] == 2 * PSI + int(18 * PSI / 8)


def test_nvme_offload_moves_host_states_to_the_drives() -> None:
    cpu = states(zero_stage=3, dp=8, gpus_per_node=8, offload_optimizer="cpu", offload_params="cpu")
    nvme = states(zero_stage=3, dp=8, gpus_per_node=8, offload_optimizer="nvme", offload_params="nvme")
    assert nvme.gpu == cpu.gpu
    assert nvme.nvme == cpu.cpu
    assert nvme.cpu == int(131_072_000 * 4 * 8 * 1.5)


# --- activations (Korthikanti et al. 2022) ------------------------------------------------------

S, H, A = 2048, 4096, 32
SBH = S * 1 * H
F = terms()["activation_factor"].value  # what unfused kernels keep beyond the count (terms.yaml)
GPT = shape(ffn=4 * H)  # Korthikanti's block: a 4h MLP


def per_layer(**kw) -> float:
    r = activation_bytes_per_layer(GPT, Setup(seq_len=S, micro_batch=1, **{"attention": "eager", **kw}))
    return r["stored"] + r["attention_scores"]


def test_activation_formula_without_parallelism() -> None:
    assert per_layer() == pytest.approx(SBH * (34 * F + 5 * A * S / H))


def test_activation_formula_with_tensor_parallelism() -> None:
    assert per_layer(tp=8, gpus_per_node=8) == pytest.approx(SBH * ((10 + 24 / 8) * F + 5 * A * S / (H * 8)))


def test_activation_formula_with_sequence_parallelism() -> None:
    assert per_layer(tp=8, gpus_per_node=8, sequence_parallel=True) == pytest.approx(
        SBH / 8 * (34 * F + 5 * A * S / H))


def test_selective_recompute_and_flash_attention_drop_the_attention_term() -> None:
    assert per_layer(checkpointing="selective") == pytest.approx(SBH * 34 * F)
    assert per_layer(attention="flash") == per_layer(attention="sdpa") == pytest.approx(SBH * 34 * F)
    assert per_layer(tp=8, gpus_per_node=8, sequence_parallel=True, checkpointing="selective") == pytest.approx(
        SBH * 34 * F / 8)


def test_per_op_selective_keeps_the_input_attention_output_and_every_second_matmul() -> None:
    # GPT block matmul outputs: qkv 3h, o h, fc1 4h, fc2 h = 9h values; kept: 2h + 9h/2 values, 2 bytes each
    assert per_layer(checkpointing="selective-op") == pytest.approx(SBH * 2 * (2 + 4.5) * F)
    assert per_layer(checkpointing="selective-op") < per_layer(checkpointing="selective")


def test_full_recompute_keeps_the_layer_input() -> None:
    assert per_layer(checkpointing="full") == 2 * SBH
    assert per_layer(checkpointing="full", tp=8, gpus_per_node=8, sequence_parallel=True) == 2 * SBH / 8
    acts = activations(GPT, Setup(seq_len=S, checkpointing="full", attention="eager"))
    assert acts["layers"] == 32 * 2 * SBH
    assert acts["recompute_layer"] == int(2 * SBH * (34 * F + 5 * A * S / H))


def test_context_parallel_splits_the_sequence_and_fp32_doubles() -> None:
    assert per_layer(cp=2, gpus_per_node=2) == pytest.approx((S // 2) * H * (34 * F + 5 * A * (S // 2) / H))
    assert per_layer(dtype="fp32") == 2 * per_layer()


def test_amp_activations_sit_between_16_and_32_bit() -> None:
    assert per_layer() < per_layer(dtype="fp16", amp=True) < per_layer(dtype="fp32")


def test_pipeline_first_stage_holds_all_layers_worth_and_the_last_the_loss() -> None:
    one = activations(GPT, Setup(seq_len=S, attention="eager"))
    four = activations(GPT, Setup(seq_len=S, pp=4, gpus_per_node=4, attention="eager"))
    assert one["layers"] == four["layers"] == int(32 * per_layer())
    assert one["loss"] == int(S * 32000 * terms()["logit_bytes"].value)
    assert one["embedding_output"] == SBH * 1 + 4 * SBH
    assert four["embedding_output"] == SBH * 4 and four["loss"] == 0
    assert one["total"] == one["layers"] + one["embedding_output"] + one["loss"]


def test_loss_options_and_tensor_parallel_split_the_logits() -> None:
    full = activations(shape(), Setup(seq_len=S))["loss"]
    assert activations(shape(), Setup(seq_len=S, loss="chunked"))["loss"] < full
    assert activations(shape(), Setup(seq_len=S, loss="fused"))["loss"] < full
    assert activations(shape(), Setup(seq_len=S, loss="none"))["loss"] == 0
    assert activations(shape(), Setup(seq_len=S, tp=8, gpus_per_node=8))["loss"] == full // 8


def test_micro_batch_scales_activations_linearly() -> None:
    one = activations(shape(), Setup(seq_len=S, micro_batch=1))
    eight = activations(shape(), Setup(seq_len=S, micro_batch=8))
    assert eight["layers"] == 8 * one["layers"]


# --- inference ----------------------------------------------------------------------------------

def test_llama2_7b_kv_cache_is_half_a_mebibyte_per_token() -> None:
    """2 (K and V) x 32 layers x 32 heads x 128 dims x 2 bytes = 524,288 bytes per token."""
    llama = shape_from_config(CONFIGS / "llama-2-7b.json")
    weights, acts, _ = inference(llama, Setup(mode="infer", dtype="bf16", seq_len=4096, micro_batch=1))
    assert acts["kv_cache"] == 4096 * 524_288 == 2 * 2**30
    assert weights["total"] == 2 * 6_738_415_616


def test_grouped_query_attention_shrinks_the_cache_and_tp_splits_it() -> None:
    mistral = shape_from_config(CONFIGS / "mistral-7b.json")
    _, acts, _ = inference(mistral, Setup(mode="infer", seq_len=4096))
    assert acts["kv_cache"] == 2 * 32 * 8 * 128 * 4096 * 2
    _, tp2, _ = inference(mistral, Setup(mode="infer", seq_len=4096, tp=2, gpus_per_node=2))
    assert tp2["kv_cache"] == acts["kv_cache"] // 2
    _, tp16, _ = inference(mistral, Setup(mode="infer", seq_len=4096, tp=16, gpus_per_node=16))
    assert tp16["kv_cache"] == 2 * 32 * 1 * 128 * 4096 * 2  # a kv head per rank at least


def test_inference_host_memory_is_each_process_shard() -> None:
    llama = shape_from_config(CONFIGS / "llama-2-7b.json")
    _, _, cpu = inference(llama, Setup(mode="infer", tp=4, gpus_per_node=4))
    assert cpu == int(6_738_415_616 * 2 / 4 * 4)


def test_inference_weight_dtypes_and_workspace() -> None:
    llama = shape_from_config(CONFIGS / "llama-2-7b.json")
    int4, _, _ = inference(llama, Setup(mode="infer", dtype="int4"))
    kept = 32000 * 4096 + 65 * 4096  # embedding and norms stay 16-bit
    assert int4["weights_16bit"] == kept * 2
    assert int4["quantised_weights"] == int((6_738_415_616 - kept) * (0.5 + 4 / 128))
    int8, _, _ = inference(llama, Setup(mode="infer", dtype="int8"))
    assert int8["quantised_weights"] == int((6_738_415_616 - kept) * (1 + 2 / 4096))
    _, no_flash, _ = inference(llama, Setup(mode="infer", seq_len=4096, attention="eager"))
    _, flash, _ = inference(llama, Setup(mode="infer", seq_len=4096))
    b, s = 1, 4096
    assert flash["workspace"] == max(b * s * (2 * 4096 + 2 * 11008) * 2, b * s * 32000 * 4)
    assert no_flash["workspace"] == b * s * (2 * 4096 + 2 * 11008) * 2 + 32 * s * s * 2
    _, kv8, _ = inference(llama, Setup(mode="infer", seq_len=4096, kv_dtype="int8"))
    assert kv8["kv_cache"] == 2**30


# --- mixture of experts -------------------------------------------------------------------------

@pytest.mark.parametrize("name,total", [("mixtral-8x7b", 46_702_792_704), ("qwen3-30b-a3b", 30_532_122_624),
                                        ("deepseek-v3", 671_026_404_352)])
def test_moe_configs_count_the_published_parameters(name: str, total: int) -> None:
    """Mixtral 46.7B, Qwen3-30B-A3B 30.5B, DeepSeek-V3 671B without its MTP layer (the tiny configs of
    test_shape.py equal the transformers classes parameter for parameter)."""
    s = shape_from_config(CONFIGS / f"{name}.json")
    assert s.params == total
    assert 0 < s.expert_params < s.params and s.moe_layers > 0


def test_qwen_moe_counts_its_shared_expert() -> None:
    s = shape_from_config(CONFIGS / "qwen1.5-moe-a2.7b.json")
    assert round(s.params / 1e9, 1) == 14.3 and s.shared_ffn == 5632


def test_expert_parallelism_splits_what_a_rank_holds_whole_not_the_zero_partition() -> None:
    mixtral = shape_from_config(CONFIGS / "mixtral-8x7b.json")
    dense = mixtral.params - mixtral.expert_params
    base = dict(gpus_per_node=8, dp=8)
    z0 = model_states(mixtral, Setup(**base, ep=8)).gpu
    assert z0["params"] == int(2 * (dense + mixtral.expert_params / 8))
    z3, z3_ep = (model_states(mixtral, Setup(**base, zero_stage=3, ep=ep)).gpu for ep in (1, 8))
    assert z3["optimizer_states"] == z3_ep["optimizer_states"] and z3["params"] == z3_ep["params"]
    # the gathered module is a layer's fused experts (8 x 3 x 4096 x 14336), an eighth of it per rank with ep 8
    assert z3["gathered_layer"] == 4 * mixtral.largest_layer_params == 4 * 8 * 3 * 4096 * 14336
    assert z3_ep["gathered_layer"] == z3["gathered_layer"] // 8


def test_moe_layers_keep_each_tokens_experts() -> None:
    mixtral = shape_from_config(CONFIGS / "mixtral-8x7b.json")
    setup = Setup(seq_len=4096)
    moe = activation_bytes_per_layer(mixtral, setup)["stored"]
    as_dense = activation_bytes_per_layer(ModelShape(**{**mixtral.__dict__, "moe_layers": 0}), setup)["stored"]
    assert moe > as_dense  # two experts of 14336 and the dispatch buffers, against one dense MLP


def test_keeping_gathered_weights_adds_the_16_bit_weights() -> None:
    s = shape()
    kept = model_states(s, Setup(gpus_per_node=8, dp=8, zero_stage=3, reshard_after_forward=False)).gpu
    assert kept["unsharded_weights"] == 2 * PSI


def test_expert_parallel_inference_holds_a_share_of_the_experts() -> None:
    mixtral = shape_from_config(CONFIGS / "mixtral-8x7b.json")
    whole, _, _ = inference(mixtral, Setup(mode="infer"))
    split, _, _ = inference(mixtral, Setup(mode="infer", gpus_per_node=8, dp=8, ep=8))
    assert split["total"] == int(2 * (mixtral.params - mixtral.expert_params + mixtral.expert_params / 8))
    assert whole["total"] == 2 * mixtral.params
